"""How long one forward pass takes on this machine, for 1 to 32 new positions, measured now.

A server measures this once, as its first model process loads the model
(``runtime.calibration`` keeps the record), so every page that prices a verify pass on this CPU
uses the machine it runs on rather than the one that built the page.

Load only ever adds time to a pass, so the figure kept for a size is a low quantile of its
repeats (:data:`QUANTILE`, the 10th percentile), not their median: a median moves with the load
of the moment, while the low tail keeps the passes that ran with the machine to themselves. The
10th percentile, interpolated, rather than the minimum, so that one pass that was lucky with the
caches or the timer does not decide a size alone. (On ``tests/fake_load.py``'s machine, busy
43% of the time in stretches that make a pass 1.5-3x slower, it reads within 10% of the quiet
costs in 498 of 500 seeds; the 20th percentile did in 477, the median in 186.) Repeats are interleaved (one pass of each size per round, each round
starting one size later), so a stretch of load hits every size alike and no size twice in a row.

A pass over more positions does all the work of a pass over fewer, so the curve must not fall as
the positions grow. Where it falls by more than :data:`LEVEL` (2%: two sizes that cost the same,
as 1 to 9 positions nearly do with float32 weights, read that far apart on a quiet machine), the
size on the high side of the fall (the highest before it: load only adds time, so that is the
one most likely read high) is timed again, in more interleaved rounds of just those sizes, until
it holds or the time budget is spent; if it still falls then, the result says so
(:attr:`PassTimes.enforced`). Either way the figures kept are the minimum from the right (each
size's figure at most that of every larger size: load only adds time, so of two figures that
disagree the higher is the one read high), and the sizes it lowered are listed
(:attr:`PassTimes.lowered`).

:func:`calibrate_passes` is that procedure on any timing function (a test hands it a fake one
with injected load); :func:`measure_pass_times` runs it on the model.

Examples
--------
>>> times = PassTimes((1, 5), (20.0, 25.0), repeats=5, seconds=1.0, threads=1, kernel="numba")
>>> times.ratio(5), times.at(1)
(1.25, 20.0)
>>> cost = {1: 20.0, 2: 21.0, 4: 22.0}
>>> clock = [0.0]
>>> def fake(n):  # a pass that always takes cost[n] ms, on a fake clock
...     clock[0] += cost[n] / 1e3
...     return cost[n]
>>> t = calibrate_passes(fake, (1, 2, 4), budget_s=1.0, clock=lambda: clock[0])
>>> t.ms, t.enforced
((20.0, 21.0, 22.0), False)
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from . import kernel

#: The pass sizes timed at start-up: decode (1), the chains of k = 1, 3, 4, 7, 8, 15 and a tree.
CALIBRATION_NS = (1, 2, 4, 5, 8, 9, 16, 32)
#: Cached positions before each timed pass (a prompt plus some reply).
CONTEXT = 128
#: Seconds a calibration may take by default (a round of the 8 sizes is ~0.6 s on 1 core).
BUDGET_S = 6.0
#: The quantile of a size's repeats kept as its pass time (see the module's docstring).
QUANTILE = 0.1
#: The share of the budget the interleaved rounds of every size may use; the rest is for timing
#: again the sizes where the curve falls.
SAMPLE_SHARE = 0.6
#: A fall of at most this fraction counts as level: not timed again, just levelled.
LEVEL = 0.02


@dataclass(frozen=True)
class PassTimes:
    """Time of one forward pass per number of new positions, measured in one process.

    Attributes
    ----------
    n_positions, ms : tuple
        Sizes timed (ascending) and each one's pass time in milliseconds: the :attr:`quantile` of
        its repeats, never falling as the positions grow (see :attr:`enforced`).
    repeats : int
        Interleaved rounds of every size timed (after one warm-up round).
    seconds : float
        Wall time the measurement took.
    threads : int
        Threads each pass used (what :func:`.kernel.prepare_threads` had in force).
    kernel : str
        ``"numba"`` (the register-tile kernel) or ``"numpy"`` (the fallback).
    measured_at : float
        ``time.time()`` when it finished.
    quantile : float
        The quantile of the repeats kept (:data:`QUANTILE`).
    retimed : int
        Rounds of extra timing given to sizes where the curve fell.
    enforced : bool
        True when the curve still fell by more than :data:`LEVEL` after the extra timing (the
        minimum from the right was taken over a real fall).
    lowered : tuple
        The sizes the minimum from the right lowered (by at most :data:`LEVEL` unless
        :attr:`enforced`).
    """

    n_positions: tuple
    ms: tuple
    repeats: int
    seconds: float
    threads: int
    kernel: str
    measured_at: float = 0.0
    quantile: float = QUANTILE
    retimed: int = 0
    enforced: bool = False
    lowered: tuple = ()

    def at(self, n: int) -> float:
        """The pass time over ``n`` positions (one of :attr:`n_positions`)."""
        if n not in self.n_positions:
            raise ValueError(f"n must be one of {self.n_positions}; got {n}")
        return self.ms[self.n_positions.index(n)]

    def ratio(self, n: int) -> float:
        """A pass over ``n`` positions over one decoding step (a pass over 1)."""
        return self.at(n) / self.at(1)

    @property
    def monotone(self) -> bool:
        """Whether the pass time never falls as the positions grow (always true of a result)."""
        return all(b >= a for a, b in zip(self.ms, self.ms[1:]))


def _check(ns, budget_s: float, min_repeats: int, max_repeats: int, quantile: float) -> tuple:
    ns = tuple(sorted({int(n) for n in ns}))
    if not ns or ns[0] < 1 or ns[-1] > 64:
        raise ValueError(f"pass sizes must be in 1..64; got {ns}")
    if not 1 <= min_repeats <= max_repeats <= 99 or not budget_s > 0:
        raise ValueError(f"need 1 <= min_repeats <= max_repeats <= 99 and budget_s > 0; got "
                         f"min_repeats={min_repeats}, max_repeats={max_repeats}, budget_s={budget_s}")
    if not 0.0 <= quantile <= 0.5:
        raise ValueError(f"quantile must be in [0, 0.5]; got {quantile}")
    return ns


def _falls(ms: np.ndarray) -> list[int]:
    """Indices ``i`` where the curve falls from ``i - 1`` to ``i`` by more than :data:`LEVEL`
    (of the highest figure before it)."""
    top = np.maximum.accumulate(ms)
    return [i for i in range(1, len(ms)) if ms[i] < top[i - 1] * (1.0 - LEVEL)]


def calibrate_passes(time_pass: Callable[[int], float], ns=CALIBRATION_NS, *,
                     budget_s: float = BUDGET_S, min_repeats: int = 5, max_repeats: int = 15,
                     quantile: float = QUANTILE, stopped: Callable[[], bool] = lambda: False,
                     threads: Callable[[], int] = lambda: 1, kernel_name: str = "numpy",
                     clock: Callable[[], float] = time.perf_counter) -> PassTimes:
    """Time ``time_pass(n)`` (milliseconds of one pass over ``n`` positions) for each of ``ns``.

    Interleaved rounds of every size run until ``max_repeats``, or until ``min_repeats`` are done
    and :data:`SAMPLE_SHARE` of ``budget_s`` is spent, or ``stopped()`` (then with the rounds done so
    far, at least one). Then, while the ``quantile`` of the repeats falls somewhere by more than
    :data:`LEVEL` as the positions grow, one more round times just the size on the high side of
    each fall (the highest before it), until ``budget_s`` is spent, and at least
    for the rest of the budget's share (``1 - SAMPLE_SHARE``) after the rounds of every size (a
    loaded machine may need all of ``budget_s`` for ``min_repeats``), or until ``stopped()``. So the
    whole takes at most the rounds of every size plus ``(1 - SAMPLE_SHARE) * budget_s`` and one
    round. ``threads()`` is asked before every round (the most is recorded); ``clock`` gives seconds
    (a test hands in a fake one).
    """
    ns = _check(ns, budget_s, min_repeats, max_repeats, quantile)
    t0 = clock()
    samples: list[list[float]] = [[] for _ in ns]
    used = set()
    rounds = 0
    while rounds < max_repeats and not (rounds and stopped()):
        used.add(int(threads()))
        for i in np.roll(np.arange(len(ns)), -rounds):  # each round starts one size later
            samples[i].append(float(time_pass(ns[i])))
        rounds += 1
        if rounds >= min_repeats and clock() - t0 > SAMPLE_SHARE * budget_s:
            break

    def figures() -> np.ndarray:
        return np.array([np.quantile(s, quantile) for s in samples])

    retimed = 0
    ms = figures()
    end = max(t0 + budget_s, clock() + (1.0 - SAMPLE_SHARE) * budget_s)
    while (falls := _falls(ms)) and clock() <= end and not stopped():
        again = sorted({int(np.argmax(ms[:i])) for i in falls})  # the high side: load only adds
        used.add(int(threads()))
        for j in np.roll(again, -retimed):
            samples[j].append(float(time_pass(ns[j])))
        retimed += 1
        ms = figures()
    enforced = bool(_falls(ms))
    kept = np.minimum.accumulate(ms[::-1])[::-1]
    lowered = tuple(n for n, a, b in zip(ns, ms, kept) if b < a)
    return PassTimes(ns, tuple(round(float(m), 2) for m in kept), rounds, clock() - t0, max(used),
                     kernel_name, time.time(), quantile, retimed, enforced, lowered)


def _pass_timer(model, ns) -> Callable[[int], float]:
    """``time_pass(n)``: one forward pass over ``n`` new positions after :data:`CONTEXT` cached
    ones (rolled back after it), in milliseconds; each size warmed up once first."""
    vocab = model.config.vocab_size
    ids = (np.arange(CONTEXT + max(ns)) * 7919 + 1000) % vocab
    cache = model.new_cache(capacity=CONTEXT + max(ns))
    model.forward(ids[:CONTEXT], cache, logits="none")
    new = {n: ids[CONTEXT:CONTEXT + n] for n in ns}

    def time_pass(n: int) -> float:
        t0 = time.perf_counter()
        model.forward(new[n], cache, logits="all")
        seconds = time.perf_counter() - t0
        cache.rollback(CONTEXT)
        return seconds * 1e3

    for n in ns:  # warm-up: the kernel's first call per shape, the caches
        time_pass(n)
    return time_pass


def measure_pass_times(model, ns=CALIBRATION_NS, *, budget_s: float = BUDGET_S, min_repeats: int = 5,
                       max_repeats: int = 15, quantile: float = QUANTILE,
                       stopped: Callable[[], bool] = lambda: False) -> PassTimes:
    """:func:`calibrate_passes` of ``model``'s forward passes over each of ``ns`` new positions
    after :data:`CONTEXT` cached ones. ``budget_s`` bounds the timing; the result's ``seconds``
    also counts the prompt's pass and the warm-up round before it."""
    ns = _check(ns, budget_s, min_repeats, max_repeats, quantile)
    t0 = time.perf_counter()
    time_pass = _pass_timer(model, ns)
    times = calibrate_passes(time_pass, ns, budget_s=budget_s,
                             min_repeats=min_repeats, max_repeats=max_repeats, quantile=quantile,
                             stopped=stopped, threads=kernel.prepare_threads,
                             kernel_name="numba" if kernel.HAVE_NUMBA else "numpy")
    return replace(times, seconds=time.perf_counter() - t0)


__all__ = ["BUDGET_S", "CALIBRATION_NS", "CONTEXT", "LEVEL", "QUANTILE", "SAMPLE_SHARE", "PassTimes",
           "calibrate_passes", "measure_pass_times"]
