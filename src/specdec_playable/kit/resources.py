"""The JavaScript and CSS files of ``views/static/``, read once per process.

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
#: The package that holds ``static/`` (views; this module sits in views/kit).
_VIEWS = __package__.rsplit(".", 1)[0]
_COMMENT = re.compile(r"/\*.*?\*/\s*", re.DOTALL)


@cache
def text(name: str) -> str:
    """The text of ``views/static/<name>`` (read on first use, then kept)."""
    if "/" in name or "\\" in name or name.startswith("."):
        raise ValueError(f"name must be a file name in views/static; got {name!r}")
    return (files(_VIEWS) / _STATIC / name).read_text(encoding="utf-8")


@cache
def script(name: str) -> str:
    """``views/static/<name>`` without its whole-line comments, for a page to run."""
    lines = text(name).splitlines(keepends=True)
    return "".join(ln for ln in lines if not ln.lstrip().startswith(("//", "/*")))


def path(name: str) -> Path:
    """The path of ``views/static/<name>``, for APIs that take a file (Panel's ``_esm``)."""
    return Path(__file__).parents[1] / _STATIC / name


@cache
def stylesheet(*names: str) -> str:
    """The named CSS files as one stylesheet (comments dropped)."""
    return "".join(_COMMENT.sub("", text(n)) for n in names)


@cache
def theme_css() -> str:
    """The theme's values of every ``--sdp-*`` property, for the root of a page or a view."""
    return theme.css_variables()
