"""State of Episode 3: the quality dial.

Three knobs (draft quality ``q``, draft length ``k``, draft cost ``c``); every
change runs a fresh batch of Monte-Carlo rounds from this object's own random
generator and keeps the result beside the closed-form theory.
"""

from __future__ import annotations

import numpy as np
import param

from ...kit.params import C, K, K_SLIDER_MAX, Q, control, unlocked
from ...sim import montecarlo, theory

#: Rounds simulated on every change.
N_ROUNDS = 2000
#: Longest draft the slider offers (and the range searched for the best k).


class QualityDial(param.Parameterized):
    """Measured and theoretical speedup of speculative decoding at one (q, k, c).

    Pass ``rng`` (a ``numpy.random.Generator`` or a seed) for reproducible runs;
    by default every state object gets its own fresh generator, so two visitors
    never share a random stream and nothing is seeded globally.
    """

    q = control(Q, doc="The acceptance rate: the share of drafted tokens the big model accepts; each "
                "drafted token is the one the big model would have chosen with this probability (0: "
                "never, 1: always).")
    k = control(K, doc="Tokens the small model drafts in each round before the big model checks them "
                "(a count of tokens).")
    c = control(C)
    run_again = param.Event(
        label=f"Run {N_ROUNDS:,} new rounds",
        doc="Simulate a fresh batch at the same settings, to see how much the measurement wiggles.")

    result = param.ClassSelector(
        class_=montecarlo.SimulationResult, constant=True, label="Latest simulation",
        doc="The latest batch of simulated rounds; replaced on every change.")
    runs = param.Integer(
        default=0, bounds=(0, None), constant=True, label="Batches simulated",
        doc="How many batches this state has simulated so far.")

    def __init__(self, *, rng=None, **params):
        super().__init__(**params)
        self._rng = np.random.default_rng(rng)
        self._simulate()

    @param.depends("q", "k", "c", "run_again", watch=True)
    def _simulate(self) -> None:
        result = montecarlo.simulate(self.q, self.k, self.c, N_ROUNDS, rng=self._rng)
        with unlocked(self):
            self.param.update(result=result, runs=self.runs + 1)

    # --- derived values, all from the core ------------------------------------------

    @property
    def theory_speedup(self) -> float:
        """Closed-form expected speedup at the current knobs."""
        return theory.expected_speedup(self.q, self.k, self.c)

    @property
    def theory_tokens_per_round(self) -> float:
        return theory.expected_tokens_per_round(self.q, self.k)

    @property
    def cost_per_round(self) -> float:
        """Big-pass units one round costs: ``1 + k c``."""
        return 1.0 + self.k * self.c

    @property
    def best_k(self) -> int:
        """Draft length in 1..16 with the highest theoretical speedup at the current q and c."""
        return theory.best_k(self.q, self.c, k_max=K_SLIDER_MAX)

    @property
    def best_speedup(self) -> float:
        return theory.expected_speedup(self.q, self.best_k, self.c)

    @property
    def speedup_by_k(self) -> np.ndarray:
        """Theoretical speedup for k = 1..16 at the current q and c."""
        return theory.expected_speedup(self.q, np.arange(1, K_SLIDER_MAX + 1), self.c)

    @property
    def theory_pmf(self) -> np.ndarray:
        """Theoretical probability of 0..k accepted drafts in a round."""
        return theory.accepted_pmf(self.q, self.k)

    @property
    def measured_pmf(self) -> np.ndarray:
        """Fraction of the simulated rounds with 0..k accepted drafts."""
        r = self.result
        return r.accepted_histogram() / r.n_rounds

    @property
    def slower(self) -> bool:
        """True when the measured speedup is below 1: speculating lost to plain decoding."""
        return self.result.speedup < 1.0

    @property
    def theory_slower(self) -> bool:
        return self.theory_speedup < 1.0
