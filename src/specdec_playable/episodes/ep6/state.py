"""State of Episode 6: the fine print (speculative sampling and adaptive draft length).

Part 1: a real context (``data.measured.CONTEXTS``) and the real model's next-token distribution
``p_big`` there, over its most likely tokens and "everything else"; the draft's ``p_draft`` is the
draft head's real q there (its 16 most likely tokens, renormalised), bent by a temperature and a share of probability moved to one
favourite token. Every change draws ``n_samples`` fresh outputs by speculative sampling from the
session's own generator and tests them against both distributions. (The page calls them p and q,
as the papers do.)

Part 2: five draft-length policies race over Python, then a poem, then JSON, each token with its
measured acceptance probability, with one shared draw of randomness fixed by ``race_seed``.
"""

from __future__ import annotations

import numpy as np
import param

from ...kit.params import C, control, seed_param, unlocked
from ...sim import adaptive, sampling
from ...data import measured
from ...sim.seeds import draw_seed
from ...runtime.service import shared

#: The texts of the race, in order: Python (the learned draft's own language), a poem, JSON.
RACE_TEXTS = ("py-account", "poem-kettle", "json-record")
#: How many of the big model's most likely tokens may be the draft's favourite.
FAVOURITE_MAX = 8

SAMPLE_SIZES = (100, 1_000, 10_000, 100_000)
#: Each text of the race is repeated this many times in a row.
REPEATS = 2


def draft_distribution(context: str, temperature: float, favourite: int, bias: float) -> np.ndarray:
    """``p_draft``: the draft head's q after ``context``, sharpened or flattened by
    ``temperature`` over the tokens it proposes, with a share ``bias`` of it moved to the big
    model's ``favourite``-th most likely token (1 = the most likely).

    Examples
    --------
    >>> c = measured.context(measured.CONTEXTS[0])
    >>> bool(np.allclose(draft_distribution(c.context, 1.0, 1, 0.0), c.q))
    True
    """
    c = measured.context(context)
    return measured.distort(c.q, temperature, bias, min(int(favourite), c.n_target) - 1)


@shared(maxsize=4)
def race_stream(repeats: int) -> adaptive.Stream:
    """The race's stream of measured texts (read-only, one per process)."""
    return measured.measured_stream(RACE_TEXTS, repeats, draft="ngram")


@shared(maxsize=256)
def race_runs(repeats: int, fixed_k: int, c: float, seed: int) -> tuple[adaptive.PolicyRun, ...]:
    """The five policies raced over :func:`race_stream` at draft cost ``c``, one draw from ``seed``.

    A pure function of its arguments, computed once per process for each of them and shared
    read-only by every session: a class opening the page at its defaults races once.
    """
    return adaptive.race(race_stream(repeats), adaptive.default_policies(fixed_k, match=True), c,
                         rng=seed)


class FinePrint(param.Parameterized):
    """Speculative sampling on a real context, and a race of draft-length policies."""

    context = param.Selector(
        default=measured.CONTEXTS[0], objects=list(measured.CONTEXTS), label="Context",
        doc="The text the next token continues; the charts show the big model's next-token distribution after it.")
    temperature = param.Number(
        default=1.0, bounds=(0.2, 4.0), step=0.05, label="Draft temperature",
        doc="How spread out the draft head's guesses are (no unit): its log-probabilities over "
            "the tokens it proposes are divided by this. Above 1 it spreads its guesses more evenly, "
            "below 1 it piles them on its top guess, and 1 leaves the draft as measured.")
    favourite = param.Integer(
        default=2, bounds=(1, FAVOURITE_MAX), label="Draft's favourite (big model's rank)",
        doc="Which token the bias goes to: the big model's n-th most likely token after the context "
            "(a rank: 1 is its most likely token).")
    bias = param.Number(
        default=0.0, bounds=(0.0, 0.9), step=0.05, label="Bias to the favourite",
        doc="Share of the draft's probability moved to its favourite token (a fraction): 0 leaves "
            "the draft as measured, 0.5 makes the draft propose the favourite at least half the time.")
    n_samples = param.Selector(
        default=10_000, objects=list(SAMPLE_SIZES), label="Samples N",
        doc="How many next tokens to draw by speculative sampling (a count of draws).")
    draw = param.Event(label="Draw N new samples",
                       doc="Draw a fresh batch with the same distributions.")

    c = control(C, default=0.05, bounds=(0.05, 0.6), why="the race's draft is a real one, "
                "priced from a twentieth of a pass up",
                doc="Time of one draft step, in big-model passes (0.05: 5% of a pass).")
    fixed_k = param.Integer(
        default=4, bounds=(1, adaptive.K_CAP), label="k of the fixed policy",
        doc="The draft length the fixed policy always uses (tokens per round).")
    race_seed = seed_param(1, label="Race seed",
                           doc="Fixes which tokens the draft guesses right; every policy sees the same draw.")

    p_draft = param.Array(constant=True, doc="The draft's distribution, derived from the three knobs.")
    samples = param.ClassSelector(class_=sampling.SampleResult, constant=True,
                                  doc="The latest batch of speculative samples.")
    fit_big = param.ClassSelector(
        class_=sampling.ChiSquare, constant=True,
        doc="Chi-square test of the outputs against the big model's p_big (tokens expected fewer "
            "than 5 times pooled).")
    fit_draft = param.ClassSelector(
        class_=sampling.ChiSquare, constant=True,
        doc="Chi-square test of the outputs against the draft's p_draft (pooled the same way).")
    runs = param.Parameter(default=(), constant=True,
                       doc="The latest race: one PolicyRun per policy.")

    def __init__(self, *, rng=None, **params):
        super().__init__(**params)
        self._rng = np.random.default_rng(rng)
        self.stream = race_stream(REPEATS)
        self._sample()
        self._race()

    @property
    def measured_context(self) -> measured.Context:
        """The context's measured distributions (labels, the model's p, the draft's real q)."""
        return measured.context(self.context)

    @property
    def labels(self) -> tuple[str, ...]:
        """The tokens of part 1: the big model's top ones, the draft's others, everything else."""
        return self.measured_context.labels

    @property
    def p_big(self) -> np.ndarray:
        """The big model's next-token distribution over :attr:`labels`."""
        return self.measured_context.p

    @property
    def favourite_label(self) -> str:
        c = self.measured_context
        return c.labels[min(self.favourite, c.n_target) - 1]

    @param.depends("context", "temperature", "favourite", "bias", "n_samples", "draw", watch=True)
    def _sample(self) -> None:
        p_big = self.p_big
        p_draft = draft_distribution(self.context, self.temperature, self.favourite, self.bias)
        r = sampling.speculative_sample(p_big, p_draft, self.n_samples, rng=self._rng)
        counts = r.counts()
        with unlocked(self):
            self.param.update(p_draft=p_draft, samples=r,
                              fit_big=measured.chi_square_pooled(counts, p_big),
                              fit_draft=measured.chi_square_pooled(counts, r.p_draft))

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
        return float(np.minimum(self.p_big, self.p_draft).sum())

    @property
    def frequencies(self) -> np.ndarray:
        """Share of outputs per token (measured)."""
        return self.samples.counts() / self.samples.n

    @property
    def best_run(self):
        return max(self.runs, key=lambda r: r.speedup)


# The page's opening race, computed when the server starts (see runtime.shared.warm).
race_runs.prime(REPEATS, FinePrint.param.fixed_k.default, FinePrint.param.c.default,
                FinePrint.param.race_seed.default)
