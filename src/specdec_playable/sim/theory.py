"""Closed-form theory of speculative decoding (Leviathan, Kalman and Matias, 2023).

A round drafts ``k`` tokens; each is accepted with probability ``q`` until the
first rejection, and the big model always adds one token of its own (the
correction at the first miss, or a bonus token when all ``k`` were accepted).
The number of tokens a round yields is ``1 + min(Geometric, k)``, whose mean is

    E(q, k) = (1 - q**(k+1)) / (1 - q)          (k + 1 at q = 1)

A round costs one big-model pass plus ``k`` draft steps of ``c`` passes each,
so plain decoding (one token a pass) is beaten by the factor

    speedup(q, k, c) = E(q, k) / (1 + k c).

All functions broadcast over numpy arrays and return Python scalars for scalar input.
"""

from __future__ import annotations

import numpy as np

from . import validate as _v


def _out(arr: np.ndarray, kind=float):
    return kind(arr) if np.ndim(arr) == 0 else arr


def _q_k(q, k):
    q = _v.real_array("q", q, 0.0, 1.0)
    k = _v.int_array("k", k, 1, _v.K_MAX)
    return q, k


def _tokens(q: np.ndarray, k: np.ndarray) -> np.ndarray:
    # sum_{i=0..k} q**i written as expm1 ratios: exact at q = 0 and free of the
    # cancellation that (1 - q**(k+1)) / (1 - q) suffers as q approaches 1.
    with np.errstate(divide="ignore", invalid="ignore"):
        log_q = np.log(q)
        e = np.expm1((k + 1) * log_q) / np.expm1(log_q)
    return np.where(q >= 1.0, k + 1.0, e)


def expected_tokens_per_round(q, k):
    """Mean tokens one draft/verify round yields.

    Parameters
    ----------
    q : float or array_like
        Probability that one drafted token matches the big model, in [0, 1].
    k : int or array_like of int
        Tokens drafted per round, in [1, 64].

    Returns
    -------
    float or numpy.ndarray
        ``(1 - q**(k+1)) / (1 - q)``, and ``k + 1`` where ``q == 1``.

    Examples
    --------
    >>> round(expected_tokens_per_round(0.8, 5), 2)
    3.69
    >>> expected_tokens_per_round(1.0, 4)
    5.0
    """
    q, k = _q_k(q, k)
    return _out(_tokens(q, k))


def expected_speedup(q, k, c):
    """Expected speedup over plain decoding: ``E(q, k) / (1 + k c)``.

    Parameters
    ----------
    q : float or array_like
        Acceptance probability of a drafted token, in [0, 1].
    k : int or array_like of int
        Draft length, in [1, 64].
    c : float or array_like
        Cost of one draft step as a fraction of a big-model pass, in [0, 10].

    Examples
    --------
    >>> round(expected_speedup(0.9, 10, 0.0), 2)
    6.86
    >>> expected_speedup(0.0, 4, 0.25)
    0.5
    """
    q, k = _q_k(q, k)
    c = _v.real_array("c", c, 0.0, _v.C_MAX)
    return _out(_tokens(q, k) / (1.0 + k * c))


def break_even_q(k, c):
    """Smallest acceptance rate at which speculation is no slower than plain decoding.

    Solves ``expected_speedup(q, k, c) == 1`` for ``q`` in [0, 1]. The speedup grows
    with ``q`` from ``1 / (1 + k c)`` to ``(k + 1) / (1 + k c)``, so a break-even
    point exists exactly when ``c <= 1``.

    Returns
    -------
    float or numpy.ndarray
        The break-even ``q``; NaN where no ``q`` in [0, 1] breaks even (``c > 1``).

    Examples
    --------
    >>> round(break_even_q(1, 0.15), 2)
    0.15
    >>> round(break_even_q(4, 0.15), 2)
    0.38
    >>> import math; math.isnan(break_even_q(2, 1.5))
    True
    """
    k = _v.int_array("k", k, 1, _v.K_MAX)
    c = _v.real_array("c", c, 0.0, _v.C_MAX)
    k, c = np.broadcast_arrays(k, c)
    target = 1.0 + k * c
    lo = np.zeros(k.shape)
    hi = np.ones(k.shape)
    # E(q, k) is increasing in q; 60 bisection steps pin q to below 1e-15.
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        above = _tokens(mid, k) >= target
        hi = np.where(above, mid, hi)
        lo = np.where(above, lo, mid)
    q = np.where(c <= 0.0, 0.0, hi)
    q = np.where(c > 1.0, np.nan, q)
    return _out(q)


def best_k(q, c, k_max: int = 16):
    """The draft length in ``1..k_max`` with the highest expected speedup.

    Ties go to the shorter draft.

    Examples
    --------
    >>> best_k(0.8, 0.1)
    6
    >>> best_k(0.0, 0.1)
    1
    """
    k_max = _v.integer("k_max", k_max, 1, _v.K_MAX)
    q = _v.real_array("q", q, 0.0, 1.0)
    c = _v.real_array("c", c, 0.0, _v.C_MAX)
    q, c = np.broadcast_arrays(q, c)
    ks = np.arange(1, k_max + 1)
    s = _tokens(q[..., None], ks) / (1.0 + ks * c[..., None])
    return _out(ks[np.argmax(s, axis=-1)], int)


def accepted_pmf(q, k: int) -> np.ndarray:
    """Probability of 0, 1, ..., k accepted drafts in one round.

    ``P(a) = q**a (1 - q)`` for ``a < k`` and ``P(k) = q**k``.

    Examples
    --------
    >>> accepted_pmf(0.5, 2).tolist()
    [0.5, 0.25, 0.25]
    """
    q = _v.probability("q", q)
    k = _v.draft_length(k)
    a = np.arange(k + 1)
    p = q**a * (1.0 - q)
    p[k] = q**k
    return p
