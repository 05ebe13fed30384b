"""How a model token is written on a page: its whitespace made visible, its text escaped later."""

from __future__ import annotations

import re

#: A run of this many spaces or more is written as a count ("␣×8"), to keep labels short.
_LONG_RUN = re.compile(r" {4,}")

#: Visible stand-ins for whitespace inside a token label (a label, not running text).
_VISIBLE = {" ": "␣", "\n": "↵", "\t": "⇥"}


def token_label(piece: str) -> str:
    """A token as a short label with its whitespace shown (``" the"`` -> ``"␣the"``).

    Examples
    --------
    >>> token_label(" the"), token_label("\\n  "), token_label("\\n" + " " * 11), token_label("")
    ('␣the', '↵␣␣', '↵␣×11', '(part of a character)')
    """
    if piece == "":
        return "(part of a character)"
    parts = []
    at = 0
    for m in _LONG_RUN.finditer(piece):
        parts.append("".join(_VISIBLE.get(ch, ch) for ch in piece[at:m.start()]))
        parts.append(f"␣×{len(m.group())}")
        at = m.end()
    parts.append("".join(_VISIBLE.get(ch, ch) for ch in piece[at:]))
    return "".join(parts)
