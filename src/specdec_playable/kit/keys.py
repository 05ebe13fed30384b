"""Chart keys shared by the episodes: a bold title, then items that each keep a swatch and its words together.

The swatches are styled by ``kit/static/keys.css``; a swatch's tone (``"draft"``,
``"gold"``, ...) gives it the colour the chart draws that mark in.
"""

from __future__ import annotations

import re

#: The stylesheet a pane showing a chart key needs (with the page's own).
KEYS_CSS = "keys.css"


def swatch(shape: str, tone: str = "") -> str:
    """A small mark: ``shape`` is ``bar``, ``dot``, ``tick``, ``line`` or ``zone``."""
    return f'<span class="sw {shape}{" " + tone if tone else ""}"></span>'


def glyph(char: str, tone: str) -> str:
    """A character drawn as a mark in the chart (★, ◆, ✗), in the colour of ``tone``."""
    return f'<span class="glyph {tone}">{char}</span>'


#: An item's marks (the swatches and glyphs it opens with), then its words.
_ITEM = re.compile(r'((?:<span class="(?:sw|glyph)\b[^"]*">[^<]*</span>)*)(.*)', re.DOTALL)


def _item(item: str) -> str:
    """One item of a key: its marks and its words, each in a span of its own, so that on a phone
    (``keys.css``) the words wrap beside the marks and the marks keep to their first line."""
    marks, words = _ITEM.fullmatch(item).groups()
    return f'<span class="it"><span class="mk">{marks}</span><span class="w">{words}</span></span> '


def chart_key(title: str, *items: str, note: str = "") -> str:
    """A chart key: a bold title, items that each keep their swatch and words together, a note."""
    return (f'<div class="sdp-key"><span class="t">{title}</span>'
            + "".join(_item(item) for item in items) + note + "</div>")
