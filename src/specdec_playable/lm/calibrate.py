"""How long one forward pass takes on this machine, for 1 to 32 new positions, measured now.

A server's model process calls :func:`measure_pass_times` as it loads the model, so every page
that prices a verify pass on this CPU uses the machine it runs on rather than the one that built
the page. The measurement is bounded: interleaved rounds (one pass of each size per round, so a
change of load hits every size alike) until ``budget_s`` is spent, at least ``min_repeats``
rounds and at most ``max_repeats``; each size's figure is its median.

Examples
--------
>>> times = PassTimes((1, 5), (20.0, 25.0), repeats=5, seconds=1.0, threads=1, kernel="numba")
>>> times.ratio(5), times.at(1)
(1.25, 20.0)
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from . import kernel

#: The pass sizes timed at start-up: decode (1), the chains of k = 1, 3, 4, 7, 8, 15 and a tree.
CALIBRATION_NS = (1, 2, 4, 5, 8, 9, 16, 32)
#: Cached positions before each timed pass (a prompt plus some reply).
CONTEXT = 128
#: Seconds a start-up calibration may take by default (a round of the 8 sizes is ~0.6 s on 1 core).
BUDGET_S = 6.0


@dataclass(frozen=True)
class PassTimes:
    """Median time of one forward pass per number of new positions, measured in one process.

    Attributes
    ----------
    n_positions, median_ms : tuple
        Sizes timed (ascending) and each one's median over ``repeats`` rounds, in milliseconds.
    repeats : int
        Interleaved rounds timed (after one warm-up round).
    seconds : float
        Wall time the measurement took.
    threads : int
        Threads each pass used (what :func:`.kernel.prepare_threads` had in force).
    kernel : str
        ``"numba"`` (the register-tile kernel) or ``"numpy"`` (the fallback).
    measured_at : float
        ``time.time()`` when it finished.
    """

    n_positions: tuple
    median_ms: tuple
    repeats: int
    seconds: float
    threads: int
    kernel: str
    measured_at: float = 0.0

    def at(self, n: int) -> float:
        """The median pass time over ``n`` positions (one of :attr:`n_positions`)."""
        if n not in self.n_positions:
            raise ValueError(f"n must be one of {self.n_positions}; got {n}")
        return self.median_ms[self.n_positions.index(n)]

    def ratio(self, n: int) -> float:
        """A pass over ``n`` positions over one decoding step (a pass over 1)."""
        return self.at(n) / self.at(1)


def _timed_pass(model, cache, ids: np.ndarray) -> float:
    t0 = time.perf_counter()
    model.forward(ids, cache, logits="all")
    seconds = time.perf_counter() - t0
    cache.rollback(CONTEXT)
    return seconds * 1e3


def measure_pass_times(model, ns=CALIBRATION_NS, *, budget_s: float = BUDGET_S, min_repeats: int = 3,
                       max_repeats: int = 9, stopped=lambda: False) -> PassTimes:
    """Time forward passes over each of ``ns`` new positions after :data:`CONTEXT` cached ones.

    Stops after ``max_repeats`` rounds, or once ``budget_s`` is spent and ``min_repeats`` rounds
    are done, or when ``stopped()`` is true (then with the rounds done so far, at least one).
    """
    ns = tuple(sorted({int(n) for n in ns}))
    if not ns or ns[0] < 1 or ns[-1] > 64:
        raise ValueError(f"pass sizes must be in 1..64; got {ns}")
    if not 1 <= min_repeats <= max_repeats <= 99 or budget_s <= 0:
        raise ValueError("need 1 <= min_repeats <= max_repeats <= 99 and budget_s > 0")
    t0 = time.perf_counter()
    vocab = model.config.vocab_size
    ids = (np.arange(CONTEXT + ns[-1]) * 7919 + 1000) % vocab
    cache = model.new_cache(capacity=CONTEXT + ns[-1])
    model.forward(ids[:CONTEXT], cache, logits="none")
    new = [ids[CONTEXT:CONTEXT + n] for n in ns]
    for x in new:  # warm-up: the kernel's first call per shape, the caches
        _timed_pass(model, cache, x)
    rounds: list[list[float]] = []
    threads = set()
    while len(rounds) < max_repeats and not (rounds and stopped()):
        threads.add(kernel.prepare_threads())
        rounds.append([_timed_pass(model, cache, x) for x in new])
        if len(rounds) >= min_repeats and time.perf_counter() - t0 > budget_s:
            break
    med = np.median(np.array(rounds), axis=0)
    return PassTimes(ns, tuple(round(float(m), 2) for m in med), len(rounds),
                     time.perf_counter() - t0, max(threads), "numba" if kernel.HAVE_NUMBA else "numpy",
                     time.time())


__all__ = ["BUDGET_S", "CALIBRATION_NS", "CONTEXT", "PassTimes", "measure_pass_times"]
