"""Vectorised Monte-Carlo of draft/verify rounds.

All accept/reject uniforms of a batch of rounds are drawn in one call and the
accepted prefix of every round is found with array operations; there is no
Python loop over rounds (only over the k draft positions, and over
memory-sized chunks of a very large run).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from . import validate as _v
from . import theory

#: Uniforms drawn per chunk: bounds memory at ~8 MB for any n_rounds and k.
_CHUNK_ELEMENTS = 1 << 20
#: Two-sided 95% normal quantile.
_Z95 = 1.959963984540054
#: The share of repeats whose interval (:func:`simulate`'s and :func:`pool_runs`') holds the true
#: mean: 0.95, from the quantile.
INTERVAL_LEVEL = math.erf(_Z95 / math.sqrt(2.0))


@dataclass(frozen=True, eq=False)
class SimulationResult:
    """Outcome of :func:`simulate`.

    Attributes
    ----------
    q, k, c : float, int, float
        The parameters simulated.
    accepted : numpy.ndarray
        Accepted drafts in each round, integers in ``0..k``, shape ``(n_rounds,)``.
    total_tokens : int
        Tokens produced: ``sum(accepted + 1)``.
    total_time : float
        Time spent, in big-model passes: ``n_rounds * (1 + k c)``.
    speedup : float
        ``total_tokens / total_time``; plain decoding makes one token per pass.
    ci_low, ci_high : float
        95% normal-approximation confidence interval for the speedup.

    Examples
    --------
    >>> r = simulate(0.8, 4, 0.1, 2000, rng=7)
    >>> r.ci_low < r.speedup < r.ci_high
    True
    """

    q: float
    k: int
    c: float
    accepted: np.ndarray
    total_tokens: int
    total_time: float
    speedup: float
    ci_low: float
    ci_high: float

    @property
    def n_rounds(self) -> int:
        return int(self.accepted.shape[0])

    @property
    def mean_accepted(self) -> float:
        return float(self.accepted.mean())

    @property
    def tokens_per_round(self) -> float:
        return self.total_tokens / self.n_rounds

    @property
    def cost_per_round(self) -> float:
        return 1.0 + self.k * self.c

    @property
    def theory_speedup(self) -> float:
        return theory.expected_speedup(self.q, self.k, self.c)

    def accepted_histogram(self) -> np.ndarray:
        """Rounds with 0, 1, ..., k accepted drafts."""
        return np.bincount(self.accepted, minlength=self.k + 1)


def accepted_per_round(uniforms: np.ndarray, q: float) -> np.ndarray:
    """Length of the accepted prefix of each row: leading ``uniforms < q``.

    Examples
    --------
    >>> accepted_per_round(np.array([[0.1, 0.9, 0.1], [0.1, 0.2, 0.3]]), 0.5).tolist()
    [1, 3]
    """
    q = _v.probability("q", q)
    uniforms = np.asarray(uniforms, dtype=float)
    if uniforms.ndim != 2 or uniforms.shape[1] == 0:
        raise ValueError(
            f"uniforms must be a 2-D array (rounds, k) with k >= 1; got shape {uniforms.shape}"
        )
    return _accepted_prefix(uniforms, q)


def _accepted_prefix(uniforms: np.ndarray, q: float) -> np.ndarray:
    # The unchecked kernel of accepted_per_round, for simulate's validated inputs.
    # Walk the k draft positions in order, each over all rounds at once: a round
    # stays alive while its drafts are accepted and counts one per position it
    # survives. That is one vector operation per position and none per round
    # (argmax/any along a short axis 1 cost more per row than drawing the
    # uniforms did; see benchmarks/bench_core.py). Counters are the smallest
    # unsigned type that holds k, widened once at the end.
    hit = (uniforms < q).view(np.uint8)
    alive = hit[:, 0].copy()
    accepted = alive.astype(np.min_scalar_type(hit.shape[1]))
    for j in range(1, hit.shape[1]):
        alive &= hit[:, j]
        accepted += alive
    return accepted.astype(np.int64)


def draw_rounds(q: float, k: int, n_rounds: int, *, rng: np.random.Generator) -> np.ndarray:
    """Accepted drafts of each of ``n_rounds`` rounds: all uniforms drawn at once, in chunks of
    at most :data:`_CHUNK_ELEMENTS` so memory stays bounded (inputs already validated)."""
    rows = max(1, _CHUNK_ELEMENTS // k)
    if n_rounds <= rows:
        return _accepted_prefix(rng.random((n_rounds, k)), q)
    return np.concatenate([
        _accepted_prefix(rng.random((min(rows, n_rounds - start), k)), q)
        for start in range(0, n_rounds, rows)
    ])


def simulate(q, k, c, n_rounds, *, rng) -> SimulationResult:
    """Simulate ``n_rounds`` draft/verify rounds and measure the speedup.

    Each round drafts ``k`` tokens, each accepted with probability ``q`` until the
    first rejection. The round yields ``accepted + 1`` tokens (the big model's
    correction, or its bonus token when all ``k`` were accepted) and costs
    ``1 + k c`` big-pass units.

    Parameters
    ----------
    q : float
        Acceptance probability of a drafted token, in [0, 1].
    k : int
        Draft length, in [1, 64].
    c : float
        Draft step cost as a fraction of a big pass, in [0, 10].
    n_rounds : int
        Rounds to simulate, in [1, 10**7].
    rng : numpy.random.Generator, int or None
        Source of randomness (normalised with ``numpy.random.default_rng``).

    Returns
    -------
    SimulationResult

    Examples
    --------
    >>> r = simulate(1.0, 4, 0.0, 10, rng=0)
    >>> r.total_tokens, r.speedup
    (50, 5.0)
    """
    q = _v.probability("q", q)
    k = _v.draft_length(k)
    c = _v.draft_cost(c)
    n_rounds = _v.integer("n_rounds", n_rounds, 1, _v.ROUNDS_MAX)
    rng = _v.generator(rng)

    accepted = draw_rounds(q, k, n_rounds, rng=rng)
    cost = 1.0 + k * c
    tokens = accepted + 1
    total_tokens = int(tokens.sum())
    mean = total_tokens / n_rounds
    # tokens.std(ddof=1) written out (same operations, same bits): ndarray.std's
    # Python-level bookkeeping cost more than the arithmetic at interactive sizes.
    dev = tokens - mean
    sd = math.sqrt(float(np.add.reduce(dev * dev)) / (n_rounds - 1)) if n_rounds > 1 else 0.0
    half = _Z95 * sd / math.sqrt(n_rounds)
    return SimulationResult(
        q=q,
        k=k,
        c=c,
        accepted=accepted,
        total_tokens=total_tokens,
        total_time=float(n_rounds * cost),
        speedup=float(mean / cost),
        ci_low=float((mean - half) / cost),
        ci_high=float((mean + half) / cost),
    )


def expected_half_width(q: float, k: int, c: float, n_rounds: int) -> float:
    """The half-width :func:`simulate`'s 95% interval has on average: 1.96 standard deviations of
    a round's tokens (from the theory's distribution of accepted drafts) over ``sqrt(n_rounds)``,
    over the round's cost. How far a measured speedup moves from run to run.

    Examples
    --------
    >>> round(expected_half_width(0.8, 6, 0.1, 2000), 3)
    0.063
    """
    q, k, c = _v.probability("q", q), _v.draft_length(k), _v.draft_cost(c)
    n_rounds = _v.integer("n_rounds", n_rounds, 1, _v.ROUNDS_MAX)
    pmf = theory.accepted_pmf(q, k)
    tokens = np.arange(k + 1) + 1.0
    mean = float(pmf @ tokens)
    sd = math.sqrt(max(float(pmf @ tokens ** 2) - mean ** 2, 0.0))
    return _Z95 * sd / math.sqrt(n_rounds) / (1.0 + k * c)


def pool_runs(speedups, ci_low, ci_high, n_rounds: int) -> tuple[float, float, float]:
    """Several :func:`simulate` runs at one (q, k, c), ``n_rounds`` rounds each, as one run of all
    their rounds: the speedup over every round and its 95% interval (normal approximation over
    the pooled rounds, the spread between the runs' means included).

    Each run's standard deviation of a round's speedup is read back from its interval's
    half-width (:func:`simulate` writes it as ``1.96 sd / sqrt(n_rounds)``).

    Returns
    -------
    (speedup, ci_low, ci_high) : tuple of float

    Examples
    --------
    >>> rs = [simulate(0.6, 4, 0.15, 400, rng=i) for i in range(12)]
    >>> pooled = pool_runs([r.speedup for r in rs], [r.ci_low for r in rs], [r.ci_high for r in rs], 400)
    >>> round(pooled[0], 6) == round(sum(r.total_tokens for r in rs) / (12 * 400) / 1.6, 6)
    True
    """
    m = np.asarray(speedups, float)
    lo, hi = np.asarray(ci_low, float), np.asarray(ci_high, float)
    if m.ndim != 1 or m.size == 0 or lo.shape != m.shape or hi.shape != m.shape:
        raise ValueError(f"speedups, ci_low and ci_high must be equal, non-empty 1-d sequences; "
                         f"got shapes {m.shape}, {lo.shape}, {hi.shape}")
    n = _v.integer("n_rounds", n_rounds, 2, _v.ROUNDS_MAX)
    sd = (hi - lo) / 2 * math.sqrt(n) / _Z95
    mean = float(m.mean())
    total = m.size * n
    var = (float(((n - 1) * sd ** 2).sum()) + n * float(((m - mean) ** 2).sum())) / (total - 1)
    half = _Z95 * math.sqrt(max(var, 0.0)) / math.sqrt(total)
    return mean, mean - half, mean + half
