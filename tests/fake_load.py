"""A machine for calibration tests: a pass costs a known time when the machine is quiet, and load
comes and goes in stretches, on a clock of its own (no real time passes).

``LoadedMachine(load, rng=seed)``: with ``load = 0`` a pass over ``n`` positions takes
:func:`quiet_ms` ``(n)`` times ``1 + |N(0, 0.01)|`` (a quiet machine's jitter: at most a few per
cent, never less than the cost). With ``load > 0`` the machine is busy in stretches (a two-state
Markov chain stepped at every pass: it becomes busy with probability ``load``, stays busy with
probability 0.6), and a busy pass takes 1.5 to 3 times as long (uniform), as when other processes
share the cores. At ``load = 0.3`` the machine is busy for 43% of the passes.
"""

from __future__ import annotations

import numpy as np


def quiet_ms(n: int) -> float:
    """The cost of a pass over ``n`` positions on a quiet machine: 20 ms plus 0.9 ms a position."""
    return 20.0 + 0.9 * n


class LoadedMachine:
    """``time_pass(n)`` for :func:`.calibrate.calibrate_passes`, and its clock (``clock()``)."""

    def __init__(self, load: float, *, rng=None) -> None:
        self.load = float(load)
        self.rng = np.random.default_rng(rng)
        self.now = 0.0
        self.busy = False
        self.passes = 0

    def clock(self) -> float:
        return self.now

    def time_pass(self, n: int) -> float:
        self.busy = self.rng.random() < (0.6 if self.busy else self.load)
        ms = quiet_ms(n) * (1.0 + abs(self.rng.normal(0.0, 0.01)))
        if self.busy:
            ms *= self.rng.uniform(1.5, 3.0)
        self.now += ms / 1e3
        self.passes += 1
        return ms
