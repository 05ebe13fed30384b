"""The record of a text the explainer plays back: each token with its acceptance probability
``q`` (the chance a draft guesses it right) and the draft's guess where it misses.

Episode 4's texts come measured by the real model (:mod:`.measured`); a pasted text is measured
live. :func:`check_paste` is the rule for what a visitor may paste. Nothing here reads a file.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..sim import validate as _v

#: Order of Episode 4's kinds of text: from most to least predictable, as the seed has it.
KIND_ORDER = ("code", "json", "letter", "translation", "poem")

PASTE_MAX_CHARS = 2000
_PASTE_CAP = 100_000


# ---------------------------------------------------------------------------
# The Text record
# ---------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Text:
    """A text with an acceptance probability and a decoy for every token.

    Attributes
    ----------
    id, title, kind, description : str
        Identity and labels. ``kind`` is one of :data:`KIND_ORDER` for the
        bundled texts, ``"pasted"`` for a visitor's text.
    tokens : tuple of str
        The tokens, each with its leading whitespace.
    q : numpy.ndarray
        Read-only; probability that a small draft guesses each token (its acceptance
        probability).
    decoys : tuple of str
        The draft's wrong guess at each token.
    tiers : tuple of str
        Why each token has its ``q``, where a rule labelled it (empty otherwise).

    Examples
    --------
    >>> t = Text("demo", "Demo", "code", "A tiny text.", ("x", ";"),
    ...          [0.35, 0.97], ("y", ","), ("content", "forced"))
    >>> t.source, t.q.flags.writeable
    ('x;', False)
    """

    id: str
    title: str
    kind: str
    description: str
    tokens: tuple[str, ...]
    q: np.ndarray
    decoys: tuple[str, ...]
    tiers: tuple[str, ...] = field(default=())

    def __post_init__(self):
        tokens = tuple(self.tokens)
        decoys = tuple(self.decoys)
        tiers = tuple(self.tiers)
        q = np.array(self.q, dtype=float)  # a copy: nobody else holds it
        n = len(tokens)
        if q.shape != (n,) or len(decoys) != n or (tiers and len(tiers) != n):
            raise ValueError(
                f"text {self.id!r}: tokens ({n}), q {q.shape}, decoys ({len(decoys)}) "
                f"and tiers ({len(tiers)}) must have one entry per token"
            )
        q.setflags(write=False)
        object.__setattr__(self, "tokens", tokens)
        object.__setattr__(self, "decoys", decoys)
        object.__setattr__(self, "tiers", tiers)
        object.__setattr__(self, "q", q)

    @property
    def source(self) -> str:
        """The text itself: the tokens joined."""
        return "".join(self.tokens)

    def __len__(self) -> int:
        return len(self.tokens)


def check_paste(s: str, max_chars: int = PASTE_MAX_CHARS) -> str:
    """``s`` if a visitor's pasted text is acceptable (a non-blank string of at most ``max_chars``
    characters), else ``ValueError`` with a message fit to show the visitor.

    Examples
    --------
    >>> check_paste("   ")
    Traceback (most recent call last):
    ...
    ValueError: Your text is empty: paste a sentence, some code or a poem first.
    """
    max_chars = _v.integer("max_chars", max_chars, 1, _PASTE_CAP)
    if not isinstance(s, str):
        raise ValueError(f"Your text must be a string; got {type(s).__name__}.")
    if len(s) > max_chars:
        raise ValueError(f"Your text must be at most {max_chars:,} characters; got {len(s):,}.")
    if not s.strip():
        raise ValueError("Your text is empty: paste a sentence, some code or a poem first.")
    return s
