"""State of Episode 6: the fine print (speculative sampling and adaptive draft length).

Part 1: the big model's distribution ``p_big`` over a few next words is fixed; the
draft's ``p_draft`` is ``p_big`` bent by a temperature and a boost to one favourite
word. Every change draws ``n_samples`` fresh outputs by speculative sampling from
the session's own generator and tests them against both distributions. (The page
calls them p and q, as the papers do.)

Part 2: four draft-length policies race over code, then a poem, then JSON, with
one shared draw of randomness fixed by ``race_seed``.
"""

from __future__ import annotations

import numpy as np
import param

from . import seed_param, unlocked
from ..core import adaptive, sampling
from ..core.seeds import draw_seed
from ..core.shared import shared

#: The sentence the next word continues, and the big model's view of that word.
PROMPT = "The cat sat on the"
WORDS = ("mat", "sofa", "floor", "roof", "fence", "moon")
P_BIG = np.array([0.38, 0.24, 0.17, 0.11, 0.07, 0.03])
P_BIG.setflags(write=False)

SAMPLE_SIZES = (100, 1_000, 10_000, 100_000)
#: Each text of the race is repeated this many times in a row.
REPEATS = 2


def draft_distribution(temperature: float, favourite: str, boost: float) -> np.ndarray:
    """``p_draft``: ``P_BIG`` sharpened or flattened by ``temperature``, with ``boost`` added to
    one word's logit.

    Examples
    --------
    >>> bool(np.allclose(draft_distribution(1.0, "mat", 0.0), P_BIG))
    True
    """
    logits = np.log(P_BIG) / temperature
    logits[WORDS.index(favourite)] += boost
    p_draft = np.exp(logits - logits.max())
    return p_draft / p_draft.sum()


@shared(maxsize=4)
def race_stream(repeats: int) -> adaptive.Stream:
    """The race's stream of texts (read-only, one per process)."""
    return adaptive.make_stream(repeats=repeats)


@shared(maxsize=256)
def race_runs(repeats: int, fixed_k: int, c: float, seed: int) -> tuple[adaptive.PolicyRun, ...]:
    """The four policies raced over :func:`race_stream` at draft cost ``c``, one draw from ``seed``.

    A pure function of its arguments, computed once per process for each of them and shared
    read-only by every session: a class opening the page at its defaults races once.
    """
    return adaptive.race(race_stream(repeats), adaptive.default_policies(fixed_k), c, rng=seed)


class FinePrint(param.Parameterized):
    """Speculative sampling on a six-word vocabulary, and a race of draft-length policies."""

    temperature = param.Number(
        default=2.0, bounds=(0.2, 4.0), step=0.05, label="Draft temperature",
        doc="How spread out the draft's guesses are (no unit): the draft's log-probabilities are the "
            "big model's divided by this. Above 1 the draft spreads its guesses more evenly than the "
            "big model, below 1 it piles them on the big model's top words, and 1 copies the big model.")
    favourite = param.Selector(
        default="moon", objects=list(WORDS), label="Draft's favourite word",
        doc="A word the draft likes more than the big model does: the boost goes to it.")
    boost = param.Number(
        default=1.5, bounds=(0.0, 5.0), step=0.1, label="Favourite boost",
        doc="How much extra the draft likes its favourite word, added to that word's log-probability "
            "(natural-log units): +1 multiplies its odds by e ≈ 2.7, +1.5 by about 4.5, 0 adds nothing.")
    n_samples = param.Selector(
        default=10_000, objects=list(SAMPLE_SIZES), label="Samples N",
        doc="How many next words to draw by speculative sampling (a count of draws).")
    draw = param.Event(label="Draw N new samples",
                       doc="Draw a fresh batch with the same distributions.")

    c = param.Number(
        default=0.3, bounds=(0.05, 0.6), step=0.01, label="Draft cost c",
        doc="Time of one draft step, in big-model passes (0.30: 30% of a pass).")
    fixed_k = param.Integer(
        default=4, bounds=(1, adaptive.K_CAP), label="k of the fixed policy",
        doc="The draft length the fixed policy always uses (tokens per round).")
    race_seed = seed_param(1, label="Race seed",
                           doc="Fixes which tokens the draft guesses right; every policy sees the same draw.")

    p_draft = param.Array(constant=True, doc="The draft's distribution, derived from the three knobs.")
    samples = param.ClassSelector(class_=sampling.SampleResult, constant=True,
                                  doc="The latest batch of speculative samples.")
    fit_big = param.ClassSelector(class_=sampling.ChiSquare, constant=True,
                                  doc="Chi-square test of the outputs against the big model's p_big.")
    fit_draft = param.ClassSelector(class_=sampling.ChiSquare, constant=True,
                                    doc="Chi-square test of the outputs against the draft's p_draft.")
    runs = param.Parameter(default=(), constant=True,
                       doc="The latest race: one PolicyRun per policy.")

    def __init__(self, *, rng=None, **params):
        super().__init__(**params)
        self._rng = np.random.default_rng(rng)
        self.stream = race_stream(REPEATS)
        self._sample()
        self._race()

    @property
    def p_big(self) -> np.ndarray:
        """The big model's distribution over :data:`WORDS`."""
        return P_BIG

    @param.depends("temperature", "favourite", "boost", "n_samples", "draw", watch=True)
    def _sample(self) -> None:
        p_draft = draft_distribution(self.temperature, self.favourite, self.boost)
        r = sampling.speculative_sample(P_BIG, p_draft, self.n_samples, rng=self._rng)
        counts = r.counts()
        with unlocked(self):
            self.param.update(p_draft=p_draft, samples=r, fit_big=sampling.chi_square(counts, P_BIG),
                              fit_draft=sampling.chi_square(counts, r.p_draft))

    @param.depends("c", "fixed_k", "race_seed", watch=True)
    def _race(self) -> None:
        runs = race_runs(REPEATS, self.fixed_k, self.c, self.race_seed)
        with unlocked(self):
            self.runs = runs

    def new_race(self) -> None:
        """Fresh randomness for the race: a new seed from the session's generator."""
        new = draw_seed(self._rng)
        if new == self.race_seed:
            self._race()
        else:
            self.race_seed = new

    # --- derived numbers ------------------------------------------------------------------

    @property
    def acceptance_theory(self) -> float:
        """``sum(min(p_big, p_draft))``: the acceptance probability speculative sampling gives."""
        return float(np.minimum(P_BIG, self.p_draft).sum())

    @property
    def frequencies(self) -> np.ndarray:
        """Share of outputs per word (measured)."""
        return self.samples.counts() / self.samples.n

    @property
    def best_run(self):
        return max(self.runs, key=lambda r: r.speedup)


# The page's opening race, computed when the server starts (see core.shared.warm).
race_runs.prime(REPEATS, FinePrint.param.fixed_k.default, FinePrint.param.c.default,
                FinePrint.param.race_seed.default)
