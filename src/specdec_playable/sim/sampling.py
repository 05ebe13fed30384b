"""Speculative sampling: a draft's guesses, kept or replaced, give exactly the big model's distribution.

The draft model proposes a token ``x`` drawn from its distribution ``p_draft``.
The big model, whose distribution is ``p_big``, keeps it with probability
``min(1, p_big(x) / p_draft(x))``; otherwise it draws a replacement from the
leftover distribution ``norm(max(0, p_big - p_draft))``. Every output is then
distributed exactly as ``p_big``, whatever ``p_draft`` is, and a proposal is kept
with probability ``sum(min(p_big, p_draft))`` (Leviathan, Kalman and Matias, "Fast Inference from
Transformers via Speculative Decoding", ICML 2023, Appendix A.1; Chen et al.,
"Accelerating Large Language Model Decoding with Speculative Sampling", 2023,
Theorem 1). The papers write p and q for the two distributions; here ``q`` is kept
for what it means everywhere else in the project, the acceptance probability, and
``acceptance_theory`` is the q speculative sampling gives.

The rule is written once, here, vectorised: :func:`keep_probability`, :func:`leftover` and
:func:`draw`. The simulation's draws (:func:`speculative_sample`, Episode 6) and the real model's
verify pass (:func:`verify_chain`, which ``lm.decode`` calls) both use it, so the chi-square check
on Episode 6 exercises the code the real decoder runs.

This module also has the chi-square goodness-of-fit test the page uses to check
that claim, with its p-value computed in numpy (no scipy).

Examples
--------
>>> r = speculative_sample([0.5, 0.5], [0.9, 0.1], 10_000, rng=1)
>>> abs(r.acceptance_rate - acceptance_theory([0.5, 0.5], [0.9, 0.1])) < 0.02
True
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from . import validate as _v
from .acceptance import Acceptance

#: Largest number of samples one call draws.
N_MAX = 10**7
#: Largest vocabulary accepted.
VOCAB_MAX = 100_000
#: How far from 1 a distribution's sum may be before it is refused.
SUM_TOL = 1e-9


def _distribution(name: str, value) -> np.ndarray:
    """A 1-D, finite, non-negative array summing to 1 within 1e-9, returned renormalised."""
    if isinstance(value, (bool, np.bool_, str, bytes)):
        raise ValueError(f"{name} must be a 1-D array of probabilities; got {value!r}")
    try:
        arr = np.array(value, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a 1-D array of probabilities; got {value!r}") from None
    if arr.ndim != 1 or not 1 <= arr.size <= VOCAB_MAX:
        raise ValueError(
            f"{name} must be a 1-D array of 1 to {VOCAB_MAX:,} probabilities; got shape {arr.shape}")
    bad = ~np.isfinite(arr) | (arr < 0)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"{name}[{i}] must be a finite number >= 0; got {arr[i]!r}")
    total = float(arr.sum())
    if abs(total - 1.0) > SUM_TOL:
        raise ValueError(f"{name} must sum to 1 (within {SUM_TOL:g}); got a sum of {total!r}")
    return arr / total


def _check(p_big, p_draft, n):
    p_big = _distribution("p_big", p_big)
    p_draft = _distribution("p_draft", p_draft)
    if p_big.shape != p_draft.shape:
        raise ValueError(f"p_big and p_draft must have the same length; got {p_big.size} and "
                         f"{p_draft.size}")
    n = _v.integer("n", n, 1, N_MAX)
    return p_big, p_draft, n


def acceptance_theory(p_big, p_draft) -> float:
    """Probability that a draft proposal is kept: ``sum(min(p_big, p_draft))``.

    Examples
    --------
    >>> acceptance_theory([0.5, 0.5, 0.0], [0.25, 0.25, 0.5])
    0.5
    """
    p_big, p_draft, _ = _check(p_big, p_draft, 1)
    return float(np.minimum(p_big, p_draft).sum())


def residual(p_big, p_draft) -> np.ndarray:
    """The leftover distribution ``norm(max(0, p_big - p_draft))`` rejected proposals are redrawn from.

    Where ``p_big == p_draft`` there is nothing left over and nothing is ever rejected;
    the function then returns ``p_big`` (any choice is correct, since it is never used).
    """
    p_big, p_draft, _ = _check(p_big, p_draft, 1)
    return leftover(p_big, p_draft)


# --- the rule, written once (checked inputs are the callers' job: these run per verify pass) ---


def keep_probability(p_x, q_x) -> np.ndarray:
    """``min(1, p_big(x) / p_draft(x))`` for proposals ``x``, elementwise: the chance the big model
    keeps each. Where ``p_draft(x) = 0`` (never proposed) it is 1.

    Examples
    --------
    >>> keep_probability([0.5, 0.2, 0.3], [0.25, 0.4, 0.0]).tolist()
    [1.0, 0.5, 1.0]
    """
    p_x = np.asarray(p_x, dtype=float)
    q_x = np.asarray(q_x, dtype=float)
    ratio = p_x / np.where(q_x > 0, q_x, 1.0)
    return np.where((q_x <= 0) | (p_x >= q_x), 1.0, ratio)


def leftover(p_big: np.ndarray, p_draft: np.ndarray) -> np.ndarray:
    """``norm(max(0, p_big - p_draft))``, unchecked; ``p_big`` (a copy) where nothing is left."""
    r = np.maximum(p_big - p_draft, 0.0)
    total = r.sum()
    return r / total if total > 0 else p_big.copy()


def draw(probs: np.ndarray, u) -> np.ndarray:
    """Inverse-CDF draws from ``probs`` for uniforms ``u`` in [0, 1): the first index whose
    cumulative probability exceeds ``u`` (scaled by the total, so float rounding never runs off
    the end)."""
    cdf = np.cumsum(probs)
    idx = np.searchsorted(cdf, np.asarray(u) * cdf[-1], side="right")
    return np.minimum(idx, probs.size - 1)


def verify_chain(p_big: np.ndarray, drafts, p_draft: np.ndarray | None,
                 rng: np.random.Generator) -> tuple[int, int]:
    """One verify pass of speculative sampling over a chain of drafted tokens: (kept, next token).

    Parameters
    ----------
    p_big : numpy.ndarray, shape (d + 1, vocab)
        The big model's distributions at the pending token and after each drafted token.
    drafts : sequence of int, length d
    p_draft : numpy.ndarray, shape (d, vocab), or None
        The draft's distributions (None: the draft was certain, one-hot on each drafted token).
    rng : numpy.random.Generator
        ``d`` uniforms for the keep decisions, drawn up front, then one for the token that follows.

    Each drafted ``x`` is kept with :func:`keep_probability`; the first one rejected is replaced
    by a draw from :func:`leftover`, and if all ``d`` are kept one more token comes from
    ``p_big`` at the last position. The real decoder (``lm.decode``) calls this.

    Examples
    --------
    >>> p = np.array([[0.0, 1.0], [0.5, 0.5]])
    >>> verify_chain(p, [0], None, np.random.default_rng(0))  # a certain draft of a token p_big never writes
    (0, 1)
    """
    d = len(drafts)
    u = rng.random(d)
    x = np.asarray(drafts, dtype=np.int64)
    rows = np.arange(d)
    q_x = 1.0 if p_draft is None else p_draft[rows, x]
    kept = u < keep_probability(p_big[rows, x], q_x)
    a = d if kept.all() else int(np.argmin(kept))
    if a == d:
        return d, int(draw(p_big[d], rng.random()))
    q = _one_hot(x[a], p_big.shape[1]) if p_draft is None else p_draft[a]
    return a, int(draw(leftover(p_big[a], q), rng.random()))


def _one_hot(token: int, size: int) -> np.ndarray:
    out = np.zeros(size)
    out[token] = 1.0
    return out


@dataclass(frozen=True, eq=False)
class SampleResult:
    """``n`` outputs of speculative sampling.

    Attributes
    ----------
    p_big, p_draft : numpy.ndarray
        The big model's and the draft's distributions (normalised copies).
    proposals : numpy.ndarray of int
        What the draft proposed each time (drawn from ``p_draft``).
    samples : numpy.ndarray of int
        What came out: the proposal where it was kept, else a draw from the leftover.
    accepted : numpy.ndarray of bool
        Whether each proposal was kept.

    Examples
    --------
    >>> r = speculative_sample([0.2, 0.8], [0.2, 0.8], 5, rng=0)
    >>> bool(r.accepted.all()), r.n
    (True, 5)
    """

    p_big: np.ndarray
    p_draft: np.ndarray
    proposals: np.ndarray
    samples: np.ndarray
    accepted: np.ndarray

    @property
    def n(self) -> int:
        return int(self.samples.size)

    @property
    def acceptance(self) -> Acceptance:
        """Every proposal is judged; this counts them and the kept ones."""
        return Acceptance.of_proposals(self.accepted)

    @property
    def acceptance_rate(self) -> float:
        """Share of proposals the big model kept (measured)."""
        return self.acceptance.rate

    @property
    def acceptance_theory(self) -> float:
        """``sum(min(p_big, p_draft))``: the acceptance rate in theory."""
        return float(np.minimum(self.p_big, self.p_draft).sum())

    def counts(self) -> np.ndarray:
        """How often each token came out."""
        return np.bincount(self.samples, minlength=self.p_big.size)

    def proposal_counts(self) -> np.ndarray:
        """How often the draft proposed each token."""
        return np.bincount(self.proposals, minlength=self.p_big.size)


def speculative_sample(p_big, p_draft, n: int, *, rng=None) -> SampleResult:
    """Draw ``n`` tokens by speculative sampling (all at once, vectorised).

    Each draw: propose ``x ~ p_draft``; keep it with probability
    ``min(1, p_big[x] / p_draft[x])``; otherwise replace it with a draw from
    ``norm(max(0, p_big - p_draft))``. The outputs are distributed exactly as
    ``p_big`` (Leviathan et al. 2023; Chen et al. 2023).

    Parameters
    ----------
    p_big, p_draft : array_like
        The big model's and the draft's distributions over the same vocabulary:
        1-D, same length, finite, non-negative, each summing to 1 within 1e-9.
        ``p_draft`` may be 0 where ``p_big`` is not (the leftover draw covers those tokens).
    n : int
        Number of draws, in [1, 10**7].
    rng : numpy.random.Generator, int or None
        Source of randomness (normalised with ``numpy.random.default_rng``).

    Returns
    -------
    SampleResult

    Raises
    ------
    ValueError
        Naming the bad argument, its value and what is allowed.

    Examples
    --------
    >>> r = speculative_sample([0.0, 1.0], [1.0, 0.0], 3, rng=0)
    >>> r.samples.tolist(), r.accepted.tolist()
    ([1, 1, 1], [False, False, False])
    """
    p_big, p_draft, n = _check(p_big, p_draft, n)
    rng = _v.generator(rng)
    u = rng.random((3, n))
    proposals = draw(p_draft, u[0])
    accepted = u[1] < keep_probability(p_big[proposals], p_draft[proposals])
    samples = proposals.copy()
    rejected = ~accepted
    if rejected.any():
        samples[rejected] = draw(leftover(p_big, p_draft), u[2][rejected])
    for arr in (p_big, p_draft, proposals, samples, accepted):
        arr.setflags(write=False)
    return SampleResult(p_big, p_draft, proposals, samples, accepted)


# ---------------------------------------------------------------------------
# Chi-square goodness of fit, without scipy
# ---------------------------------------------------------------------------


def _upper_gamma_regularized(a: float, x: float) -> float:
    """``Q(a, x) = Gamma(a, x) / Gamma(a)`` (Numerical Recipes, 3rd ed., section 6.2)."""
    if x <= 0.0:
        return 1.0
    log_front = a * math.log(x) - x - math.lgamma(a)
    if x < a + 1.0:
        # Series for the lower function P(a, x); Q = 1 - P.
        term = total = 1.0 / a
        ap = a
        for _ in range(10_000):
            ap += 1.0
            term *= x / ap
            total += term
            if abs(term) < abs(total) * 1e-16:
                break
        return max(0.0, 1.0 - total * math.exp(log_front))
    # Continued fraction for Q(a, x), modified Lentz.
    tiny = 1e-300
    b = x + 1.0 - a
    c = 1.0 / tiny
    d = 1.0 / b
    h = d
    for i in range(1, 10_000):
        an = -i * (i - a)
        b += 2.0
        d = an * d + b
        d = tiny if abs(d) < tiny else d
        c = b + an / c
        c = tiny if abs(c) < tiny else c
        d = 1.0 / d
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-16:
            break
    return min(1.0, math.exp(log_front) * h)


def chi_square_sf(x, df) -> float:
    """Probability that a chi-square variable with ``df`` degrees of freedom exceeds ``x``.

    Equal to ``scipy.stats.chi2.sf(x, df)``, computed as the regularized upper
    incomplete gamma function ``Q(df / 2, x / 2)``.

    Examples
    --------
    >>> round(chi_square_sf(3.841458820694124, 1), 6)
    0.05
    >>> chi_square_sf(float("inf"), 3)
    0.0
    """
    df = _v.real("df", df, 0.0, 1e6, lo_open=True)
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, float, np.integer, np.floating)):
        raise ValueError(f"x must be a number >= 0; got {x!r}")
    x = float(x)
    if math.isnan(x) or x < 0:
        raise ValueError(f"x must be a number >= 0; got {x!r}")
    if math.isinf(x):
        return 0.0
    return _upper_gamma_regularized(0.5 * df, 0.5 * x)


@dataclass(frozen=True)
class ChiSquare:
    """Pearson's chi-square test of observed counts against a distribution.

    Attributes
    ----------
    statistic : float
        ``sum((observed - expected)**2 / expected)`` over tokens with ``expected > 0``;
        ``inf`` if a token with probability 0 was observed.
    df : int
        Degrees of freedom: tokens with probability > 0, minus one.
    p_value : float
        Chance of a statistic at least this large if the counts came from the distribution.

    Examples
    --------
    >>> t = chi_square([50, 50], [0.5, 0.5])
    >>> t.statistic, t.df, t.p_value
    (0.0, 1, 1.0)
    """

    statistic: float
    df: int
    p_value: float


def chi_square(observed, probs) -> ChiSquare:
    """Test whether ``observed`` counts were drawn from ``probs`` (Pearson's chi-square)."""
    obs = np.asarray(observed, dtype=float)
    probs = _distribution("probs", probs)
    if obs.shape != probs.shape or (obs < 0).any() or not np.isfinite(obs).all():
        raise ValueError("observed must be non-negative counts, one per entry of probs")
    n = obs.sum()
    if n <= 0:
        raise ValueError(f"observed must hold at least one count; got a total of {n!r}")
    live = probs > 0
    df = int(live.sum()) - 1
    if (obs[~live] > 0).any():
        return ChiSquare(math.inf, max(df, 1), 0.0)
    if df < 1:
        return ChiSquare(0.0, 0, 1.0)
    expected = n * probs[live]
    stat = float((((obs[live] - expected) ** 2) / expected).sum())
    return ChiSquare(stat, df, chi_square_sf(stat, df))
