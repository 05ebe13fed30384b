"""How a model token is written on a page: its whitespace made visible, its text escaped later."""

from __future__ import annotations

#: Visible stand-ins for whitespace inside a token label (a label, not running text).
_VISIBLE = {" ": "␣", "\n": "↵", "\t": "⇥"}


def token_label(piece: str) -> str:
    """A token as a short label with its whitespace shown (``" the"`` -> ``"␣the"``).

    Examples
    --------
    >>> token_label(" the"), token_label("\\n  "), token_label("")
    ('␣the', '↵␣␣', '(part of a character)')
    """
    if piece == "":
        return "(part of a character)"
    return "".join(_VISIBLE.get(ch, ch) for ch in piece)
