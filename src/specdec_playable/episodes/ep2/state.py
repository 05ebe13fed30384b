"""State of Episode 2: the relay of a fast draft model and a slow big model.

One :func:`sim.relay.run` per change of ``k``, ``q`` or ``seed``, over a
fixed passage whose every token comes with the plausible wrong word a small
draft would write instead. From that one run this module derives what the page
shows: the two clocks after each round, the bad rounds and their running cost,
and the check of the guarantee. No Panel or Bokeh here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import param

from ...kit.params import K, Q, control, seed_param, unlocked
from ...sim import relay
from ...sim.relay import Guarantee, check_guarantee
from ...sim.seeds import draw_seed

BIG_PASS_MS = 600.0
DRAFT_STEP_MS = 60.0

#: The big model's text, token by token (leading spaces belong to the token),
#: each with the draft's wrong guess at that position: a word that would also
#: fit after the text so far, so a miss reads like a near miss, not like noise.
PASSAGE: tuple[tuple[str, str], ...] = (
    ("Every", "Each"), (" morning", " day"), (" the", " our"), (" baker", " cook"),
    (" lights", " heats"), (" the", " his"), (" oven", " stove"), (" before", " at"),
    (" dawn", " six"), (",", "."), (" shapes", " kneads"), (" the", " his"),
    (" dough", " bread"), (" by", " with"), (" hand", " care"), (" and", ","),
    (" sets", " puts"), (" the", " his"), (" first", " fresh"), (" loaves", " rolls"),
    (" on", " in"), (" the", " a"), (" rack", " shelf"), (" to", "."), (" cool", " rest"),
    (".", ","), (" By", " At"), (" seven", " eight"), (" there", " the"), (" is", "'s"),
    (" a", " already"), (" queue", " line"), (" at", " outside"), (" the", " his"),
    (" door", " shop"), (",", "."), (" and", " but"), (" by", " before"), (" noon", " lunch"),
    (" the", " every"), (" shelves", " baskets"), (" are", " stand"), (" bare", " empty"),
    (".", ","), (" Tomorrow", " Then"), (" he", " the"), (" will", " must"), (" do", " start"),
    (" it", " the"), (" all", " again"), (" over", "."), (" again", " once"), (".", "!"),
)
TOKENS: tuple[str, ...] = tuple(t for t, _ in PASSAGE)
DECOYS: tuple[str, ...] = tuple(d for _, d in PASSAGE)

#: The run a visitor sees first: at k = 4 and q = 0.8 it opens with a perfect
#: round (bonus token) and then a bad one, and has the typical speedup (2.4×).
DEFAULT_SEED = 23


@dataclass(frozen=True, eq=False)
class Progress:
    """The clocks after each round; row 0 is the start, before any round.

    Attributes
    ----------
    end_ms : numpy.ndarray
        The speculative wall clock at the end of each round (0 for row 0).
    tokens : numpy.ndarray
        Tokens written so far.
    alone_ms : numpy.ndarray
        The big model alone for those tokens: ``tokens * big_pass_ms``.
    speedup : numpy.ndarray
        ``alone_ms / end_ms`` (NaN in row 0).
    bad : numpy.ndarray of bool
        Whether that round was bad: its first draft was rejected, so it paid
        its draft steps and a pass for a single token (False in row 0).
    bad_rounds, bad_ms, bad_plain_ms : numpy.ndarray
        Running count of bad rounds, the time they took, and what plain
        decoding (one pass per token) would have taken for their tokens.
    """

    end_ms: np.ndarray
    tokens: np.ndarray
    alone_ms: np.ndarray
    speedup: np.ndarray
    bad: np.ndarray
    bad_rounds: np.ndarray
    bad_ms: np.ndarray
    bad_plain_ms: np.ndarray

    def __len__(self) -> int:
        return int(self.end_ms.shape[0])


def progress_of(result: relay.RelayResult, big_pass_ms: float = BIG_PASS_MS) -> Progress:
    """Running clocks, speedup and bad-round cost of a relay run, round by round."""
    r = result.rounds
    end = np.concatenate([[0.0], r["end_ms"]])
    tokens = np.concatenate([[0], np.cumsum(r["tokens"])])
    alone = tokens * float(big_pass_ms)
    with np.errstate(invalid="ignore", divide="ignore"):
        speedup = np.where(end > 0, alone / np.where(end > 0, end, 1.0), np.nan)
    bad = np.concatenate([[False], r["accepted"] == 0])
    cost = np.concatenate([[0.0], r["end_ms"] - r["start_ms"]])
    made = np.concatenate([[0], r["tokens"]])
    return Progress(
        end_ms=end, tokens=tokens, alone_ms=alone, speedup=speedup, bad=bad,
        bad_rounds=np.cumsum(bad), bad_ms=np.cumsum(np.where(bad, cost, 0.0)),
        bad_plain_ms=np.cumsum(np.where(bad, made * float(big_pass_ms), 0.0)),
    )


class Relay(param.Parameterized):
    """A draft model proposes ``k`` tokens a round; the big model checks them in one pass."""

    k = control(K, bounds=(1, 12), why="every guess is a box on the relay's lanes; up to 12 a round "
                "they stay wide enough to read at a phone's width")
    q = control(Q, step=0.05,
                doc="The acceptance rate: the share of drafted tokens the big model accepts. Each "
                "drafted token is the big model's own with this probability (0: never, 1: always).")
    seed = seed_param(DEFAULT_SEED, doc="Pins the run's randomness: the same seed, k and q give "
                                        "the same run.")

    result = param.ClassSelector(
        class_=relay.RelayResult, constant=True,
        doc="The run, recomputed from sim.relay on every change.")

    def __init__(self, *, rng=None, **params):
        super().__init__(**params)
        # The session's own generator: "New run" draws its seeds from it.
        self._rng = np.random.default_rng(rng)
        self._recompute()

    @param.depends("k", "q", "seed", watch=True)
    def _recompute(self) -> None:
        with unlocked(self):
            self.result = relay.run(
                TOKENS, float(self.q), int(self.k), rng=np.random.default_rng(self.seed),
                big_pass_ms=BIG_PASS_MS, draft_step_ms=DRAFT_STEP_MS, decoys=DECOYS)

    def new_run(self) -> int:
        """Fresh randomness: pick a new seed (shown, so the run can be pinned again)."""
        self.seed = draw_seed(self._rng, avoid=self.seed)
        return self.seed

    @property
    def tokens(self) -> tuple[str, ...]:
        return TOKENS

    @property
    def progress(self) -> Progress:
        return progress_of(self.result, BIG_PASS_MS)

    @property
    def guarantee(self) -> Guarantee:
        return check_guarantee(self.result.output, TOKENS)
