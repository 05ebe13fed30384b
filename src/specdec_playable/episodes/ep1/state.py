"""State of Episode 1: writing N tokens vs checking N given tokens."""

from __future__ import annotations

import param

from ...kit.params import PASS_MS, control, unlocked
from ...sim import clocks

#: The sentence whose tokens the lanes write and check.
SENTENCE = ("The", " cat", " sat", " by", " the", " warm", " stove", " while", " rain",
            " tapped", " on", " the", " old", " tin", " roof", ".")


class WritingVsChecking(param.Parameterized):
    """How long the big model takes to write N tokens, and to check N given tokens."""

    n_tokens = param.Integer(
        default=6, bounds=(1, len(SENTENCE)), label="Tokens (N)",
        doc="How many tokens to write one after another, or to check in one pass (a count of tokens).")
    big_pass_ms = control(PASS_MS)

    comparison = param.ClassSelector(
        class_=clocks.ClockComparison, constant=True,
        doc="The two timelines, recomputed from sim.clocks on every change.")

    def __init__(self, **params):
        super().__init__(**params)
        self._recompute()

    @param.depends("n_tokens", "big_pass_ms", watch=True)
    def _recompute(self) -> None:
        with unlocked(self):
            self.comparison = clocks.sequential_vs_parallel(
                self.n_tokens, float(self.big_pass_ms), tokens=SENTENCE[: self.n_tokens])

    @property
    def tokens(self) -> tuple[str, ...]:
        return SENTENCE[: self.n_tokens]
