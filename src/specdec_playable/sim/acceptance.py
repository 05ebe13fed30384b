"""The acceptance rate: of the drafts the big model judged, the share it accepted.

A round judges its drafts up to and including the first miss; drafts after the miss
are discarded unjudged. So a round that drafted ``d`` tokens and kept ``a`` judged
``a`` drafts if ``a == d``, else ``a + 1``. Every measured acceptance rate in the
project is an :class:`Acceptance`; with nothing judged the rate is NaN (undefined),
never 0.

Examples
--------
>>> Acceptance.of_rounds(drafted=[4, 4, 2], accepted=[4, 1, 0])
Acceptance(judged=7, accepted=5)
>>> round(Acceptance(judged=7, accepted=5).rate, 3)
0.714
>>> Acceptance(judged=0, accepted=0).rate
nan
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Acceptance:
    """Drafts the big model judged, and how many of them it accepted."""

    judged: int
    accepted: int

    def __post_init__(self):
        if not 0 <= self.accepted <= self.judged:
            raise ValueError(f"need 0 <= accepted <= judged; got accepted={self.accepted}, "
                             f"judged={self.judged}")

    @property
    def rate(self) -> float:
        """``accepted / judged``; NaN when nothing was judged."""
        return self.accepted / self.judged if self.judged else math.nan

    @classmethod
    def of_rounds(cls, drafted, accepted) -> Acceptance:
        """Count the judged drafts of rounds that drafted ``drafted`` and kept ``accepted`` each."""
        d = np.asarray(drafted, dtype=np.int64)
        a = np.asarray(accepted, dtype=np.int64)
        return cls(judged=int(a.sum() + (a < d).sum()), accepted=int(a.sum()))

    @staticmethod
    def by_position(drafted, accepted, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Per draft position ``j < k``: how many rounds judged it, and how many accepted it.

        A round that drafted ``d`` and kept ``a`` judged positions ``j < min(a + 1, d)`` and
        accepted ``j < a``. The acceptance rate at each position is their ratio.

        Examples
        --------
        >>> judged, kept = Acceptance.by_position([4, 4, 2], [4, 1, 0], 4)
        >>> judged.tolist(), kept.tolist()
        ([3, 2, 1, 1], [2, 1, 1, 1])
        """
        d = np.asarray(drafted, dtype=np.int64).reshape(-1)
        a = np.asarray(accepted, dtype=np.int64).reshape(-1)
        j = np.arange(int(k))[None, :]
        judged = (j < np.minimum(a + 1, d)[:, None]).sum(axis=0)
        return judged.astype(np.int64), (j < a[:, None]).sum(axis=0).astype(np.int64)

    @staticmethod
    def rate_by_position(drafted, accepted, k: int) -> np.ndarray:
        """Accepted over judged at each of ``k`` draft positions (NaN where none was judged)."""
        judged, kept = Acceptance.by_position(drafted, accepted, k)
        with np.errstate(invalid="ignore", divide="ignore"):
            return (kept / judged).astype(float)

    @classmethod
    def of_proposals(cls, kept) -> Acceptance:
        """One judgement per proposal (speculative sampling judges every proposal)."""
        k = np.asarray(kept, dtype=bool)
        return cls(judged=int(k.size), accepted=int(k.sum()))
