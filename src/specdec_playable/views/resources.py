"""The JavaScript and CSS files of ``views/static/``, read once per process.

Stylesheets name colours and fonts only through the theme's custom properties
(``var(--sdp-ink)``); :func:`stylesheet` puts the theme's values in front of the
files it joins, so a stylesheet works wherever it is attached, alone or nested.
"""

from __future__ import annotations

from functools import cache
from importlib.resources import files
from pathlib import Path

from . import theme

_STATIC = "static"


@cache
def text(name: str) -> str:
    """The text of ``views/static/<name>`` (read on first use, then kept)."""
    if "/" in name or "\\" in name or name.startswith("."):
        raise ValueError(f"name must be a file name in views/static; got {name!r}")
    return (files(__package__) / _STATIC / name).read_text(encoding="utf-8")


def path(name: str) -> Path:
    """The path of ``views/static/<name>``, for APIs that take a file (Panel's ``_esm``)."""
    return Path(__file__).with_name(_STATIC) / name


@cache
def stylesheet(*names: str) -> str:
    """The theme's custom properties followed by the named CSS files, as one stylesheet."""
    return theme.css_variables() + "".join(text(n) for n in names)
