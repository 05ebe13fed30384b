"""Seeds a visitor sees and can type back in, and the one way a session draws a fresh one.

Every state object owns a ``numpy.random.Generator`` (its session's; fresh OS entropy
unless a test passes a seed). A seed shown on a page is an integer in
``[0, SEED_MAX]``; "new run" buttons draw it from that generator with :func:`draw_seed`.

Examples
--------
>>> draw_seed(0) == draw_seed(0)
True
>>> 0 <= draw_seed(None) <= SEED_MAX
True
>>> parse_seed(" 42 ")
42
"""

from __future__ import annotations

import re

import numpy as np

#: Largest seed a page shows or accepts (six digits: easy to read out and type).
SEED_MAX = 999_999


def draw_seed(rng, *, avoid: int | None = None) -> int:
    """A seed in ``[0, SEED_MAX]`` from ``rng`` (a Generator, a seed or None); never ``avoid``."""
    rng = np.random.default_rng(rng)
    while True:
        seed = int(rng.integers(0, SEED_MAX, endpoint=True))
        if seed != avoid:
            return seed


_DIGITS = re.compile(r"[0-9]+")


def parse_seed(text: str) -> int:
    """The seed a visitor typed: digits only, from 0 to :data:`SEED_MAX` (spaces around are ignored).

    Raises ``ValueError`` with a sentence for the visitor saying what was wrong.

    Examples
    --------
    >>> parse_seed("007")
    7
    >>> parse_seed("-5")
    Traceback (most recent call last):
    ...
    ValueError: “-5” is not a seed: a seed is a whole number from 0 to 999,999.
    """
    raw = str(text).strip()
    shown = raw if len(raw) <= 24 else raw[:23] + "…"
    rule = f"a seed is a whole number from 0 to {SEED_MAX:,}."
    if not raw:
        raise ValueError(f"The seed box is empty: {rule}")
    if not _DIGITS.fullmatch(raw) or len(raw) > 12 or int(raw) > SEED_MAX:
        raise ValueError(f"“{shown}” is not a seed: {rule}")
    return int(raw)
