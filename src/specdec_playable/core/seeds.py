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
"""

from __future__ import annotations

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
