"""The JavaScript and CSS files the pages use, read once per process: the kit's own in
``kit/static/`` (named by file: ``"page.css"``), and an episode's beside its code (named with its
package: ``f"{__package__}:ep4.css"``).

Stylesheets name colours and fonts only through the theme's custom properties
(``var(--sdp-ink)``), whose values a page declares once at its root and every view at
its own (:func:`theme_css`); custom properties are inherited down through every shadow
root below. Comments are dropped: they are for readers of the files, not for every page.
"""

from __future__ import annotations

import re
from functools import cache
from importlib.resources import files
from pathlib import Path

from . import theme

_STATIC = "static"
_COMMENT = re.compile(r"/\*.*?\*/\s*", re.DOTALL)


def _where(name: str):
    """The resource ``name`` names: ``file`` in kit/static, or ``package:file`` beside a package
    of this project."""
    package, _, file = name.rpartition(":")
    if "/" in file or "\\" in file or file.startswith(".") or not file:
        raise ValueError(f"name must be a file name, or package:file name; got {name!r}")
    if not package:
        return files(__package__) / _STATIC / file
    if not package.startswith(__package__.split(".")[0] + "."):
        raise ValueError(f"the package must be one of this project's; got {package!r}")
    return files(package) / file


@cache
def text(name: str) -> str:
    """The text of the file ``name`` names (read on first use, then kept)."""
    return _where(name).read_text(encoding="utf-8")


@cache
def script(name: str) -> str:
    """The script ``name`` without its whole-line comments, for a page to run."""
    lines = text(name).splitlines(keepends=True)
    return "".join(ln for ln in lines if not ln.lstrip().startswith(("//", "/*")))


def path(name: str) -> Path:
    """The path of the file ``name`` names, for APIs that take a file (Panel's ``_esm``)."""
    return Path(str(_where(name)))


@cache
def stylesheet(*names: str) -> str:
    """The named CSS files as one stylesheet (comments dropped)."""
    return "".join(_COMMENT.sub("", text(n)) for n in names)


@cache
def theme_css() -> str:
    """The theme's values of every ``--sdp-*`` property, for the root of a page or a view."""
    return theme.css_variables()
