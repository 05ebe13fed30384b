"""State of Episode 5: the break-even map.

The theory curves of speedup against acceptance rate, one per draft length, and
the Monte-Carlo points the visitor drops onto them. Every point remembers the
knobs it was simulated at and its own theory value, so whether its confidence
interval covers the curve is decided point by point.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import param

from ...kit.params import C, K, K_SLIDER_MAX, Q, control, fill_choices, unlocked

from ...kit import presets
from ...sim import montecarlo, theory
from ...runtime.service import shared

#: Draft lengths that always get a curve (the visitor's k is added when it is not one of them).
CURVE_KS = (1, 2, 3, 4, 6, 8, 12)
#: Rounds behind each simulated point.
N_ROUNDS = 400
#: Points kept per session; the oldest are dropped beyond this.
MAX_POINTS = 200
#: Acceptance rates at which the curves are evaluated.
Q_GRID = np.linspace(0.0, 1.0, 201)
Q_GRID.setflags(write=False)


@dataclass(frozen=True)
class SimPoint:
    """One press of Simulate: measured speedup with its 95% CI, and the theory it is checked against.

    Examples
    --------
    >>> p = SimPoint(q=0.6, k=4, c=0.15, speedup=1.5, ci_low=1.4, ci_high=1.6, theory=1.55)
    >>> p.misses
    False
    """

    q: float
    k: int
    c: float
    speedup: float
    ci_low: float
    ci_high: float
    theory: float

    @property
    def misses(self) -> bool:
        """True when the 95% CI does not contain the theory value (expected for ~5% of points)."""
        return not (self.ci_low <= self.theory <= self.ci_high)

    @classmethod
    def from_result(cls, r: montecarlo.SimulationResult) -> SimPoint:
        return cls(q=r.q, k=r.k, c=r.c, speedup=r.speedup, ci_low=r.ci_low, ci_high=r.ci_high,
                   theory=r.theory_speedup)


@dataclass(frozen=True)
class PooledPoint:
    """The points simulated at one (q, k, c), pooled: ``runs`` runs of N_ROUNDS rounds read as
    one run of all their rounds (:func:`..sim.montecarlo.pool_runs`)."""

    q: float
    k: int
    c: float
    runs: int
    speedup: float
    ci_low: float
    ci_high: float
    theory: float

    @property
    def misses(self) -> bool:
        return not (self.ci_low <= self.theory <= self.ci_high)


@shared(maxsize=1024)
def break_even_table(c: float) -> np.ndarray:
    """Break-even q of every draft length 1..K_SLIDER_MAX at draft cost ``c`` (index k - 1).

    One vectorised bisection per value of c, computed once per process and shared read-only
    by every session: a page asks for a dozen of them on every slider move.
    """
    return theory.break_even_q(np.arange(1, K_SLIDER_MAX + 1), c)


class BreakEvenMap(param.Parameterized):
    """Speedup against acceptance rate for several draft lengths, with simulated points.

    Pass ``rng`` (a ``numpy.random.Generator`` or a seed) for reproducible points; by
    default each state object has its own fresh generator.
    """

    q = control(Q, default=0.60, label="Your acceptance rate q",
                why="Simulate drops its point at a middling draft, so it lands among the curves",
                doc="Probability that a drafted token is accepted (0: never, 1: always); where "
                "Simulate drops its point.")
    k = control(K, doc="Tokens drafted per round (a count of tokens); its curve is drawn strongest.")
    c = control(C, default=0.15, step=0.001, why="the map prices a dearer draft than "
                "Episode 3's (0.15 of a pass against 0.10)",
                doc="Time of one draft step, in big-model passes (0.150: 15% of a pass); changing "
                "it moves every curve and clears the points.")
    # The choices are the presets' keys, read by the first instance (see fill_choices).
    preset = param.Selector(
        default=None, objects=[None], allow_None=True, label="Preset",
        doc="Key of the last real system applied with apply_preset (None: none yet).")
    simulate = param.Event(
        label=f"Simulate {N_ROUNDS:,} rounds",
        doc=f"Run {N_ROUNDS:,} fresh rounds at (q, k, c) and add the measured speedup as a point.")
    clear = param.Event(label="Clear points", doc="Remove every simulated point.")

    points = param.List(
        default=[], item_type=SimPoint, constant=True, label="Simulated points",
        doc="Points dropped so far (cleared when c changes, since every curve moves).")

    def __init__(self, *, rng=None, **params):
        fill_choices(BreakEvenMap, lambda: [None, *presets.by_key()], "preset")
        super().__init__(**params)
        self._rng = np.random.default_rng(rng)

    # --- actions ------------------------------------------------------------------

    @param.depends("simulate", watch=True)
    def _on_simulate(self) -> None:
        self.add_point()

    def add_point(self) -> SimPoint:
        """Simulate N_ROUNDS rounds at the current knobs and keep the point."""
        point = SimPoint.from_result(
            montecarlo.simulate(self.q, self.k, self.c, N_ROUNDS, rng=self._rng))
        with unlocked(self):
            self.points = [*self.points, point][-MAX_POINTS:]
        return point

    @param.depends("clear", "c", watch=True)
    def clear_points(self) -> None:
        if self.points:
            with unlocked(self):
                self.points = []

    def apply_preset(self, key: str) -> presets.Preset:
        """Set the knobs a real system's source gives; keep the others as they are."""
        p = presets.by_key()[key]
        self.param.update(preset=key, **p.values())
        return p

    # --- derived values -------------------------------------------------------------

    @property
    def curve_ks(self) -> tuple[int, ...]:
        """Draft lengths drawn: the fixed set, the visitor's k and the k of every point."""
        return tuple(sorted({*CURVE_KS, self.k, *(p.k for p in self.points)}))

    def curve(self, k: int) -> np.ndarray:
        """Theoretical speedup over :data:`Q_GRID` for draft length ``k`` at the current c."""
        return theory.expected_speedup(Q_GRID, k, self.c)

    def break_even(self, k: int) -> float:
        """Acceptance rate at which draft length ``k`` breaks even at the current c."""
        return float(break_even_table(self.c)[int(k) - 1])

    @property
    def theory_speedup(self) -> float:
        """Theory at the visitor's (q, k, c)."""
        return theory.expected_speedup(self.q, self.k, self.c)

    @property
    def misses(self) -> int:
        """Points whose 95% CI does not contain their theory value."""
        return sum(p.misses for p in self.points)

    @property
    def pooled(self) -> tuple[PooledPoint, ...]:
        """Every (q, k, c) simulated more than once, its runs pooled into one point (in the
        order the groups were first simulated): a dozen presses at one setting read as one
        point with a narrow interval, not a pile of dots."""
        groups: dict[tuple, list[SimPoint]] = {}
        for p in self.points:
            groups.setdefault((round(p.q, 6), p.k, round(p.c, 6)), []).append(p)
        out = []
        for pts in groups.values():
            if len(pts) < 2:
                continue
            sp, lo, hi = montecarlo.pool_runs([p.speedup for p in pts], [p.ci_low for p in pts],
                                              [p.ci_high for p in pts], N_ROUNDS)
            out.append(PooledPoint(q=pts[0].q, k=pts[0].k, c=pts[0].c, runs=len(pts), speedup=sp,
                                   ci_low=lo, ci_high=hi, theory=pts[0].theory))
        return tuple(out)

    @property
    def current_preset(self) -> presets.Preset | None:
        return None if self.preset is None else presets.by_key()[self.preset]

    @property
    def preset_still_applies(self) -> bool:
        """True while every knob the last preset set still has the preset's value."""
        p = self.current_preset
        return p is not None and all(
            np.isclose(getattr(self, name), value) for name, value in p.values().items())


# The page's opening table, computed when the server starts (see runtime.shared.warm).
break_even_table.prime(BreakEvenMap.param.c.default)
