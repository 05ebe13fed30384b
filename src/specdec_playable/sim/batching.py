"""Speculative decoding on a busy accelerator: what a batch of users does to the speedup.

With one user, a verify pass over ``k + 1`` positions costs about as much as a
decode step over one, because both are bound by reading the weights. A server
decodes ``B`` users at once: a plain decode step scores ``B`` positions, a
speculative verify pass scores ``B (k + 1)``. Once that many positions make the
pass compute-bound, verification stops being free and speculation can lose.

The cost model here prices every pass with a measured pass-time curve
(:class:`PassTimeCurve`): measured points inside the measured range, and beyond
it a roofline fitted to them (a memory-bound floor and a compute-bound slope).

Assumptions, stated once:

- each of the ``B`` sequences accepts each drafted token with probability ``q``
  until its first miss, independently of the others (as in the earlier
  episodes), so a round yields ``B * E(q, k)`` tokens on average;
- one draft step over the batch costs ``c`` times a target decode step over the
  same batch (the draft's pass grows with ``B`` as the target's does);
- a round costs ``k`` draft steps and one verify pass over ``B (k + 1)``
  positions; plain decoding costs one pass over ``B`` positions per token each.

So, with ``T(n)`` the time of a pass over ``n`` positions,

    speedup(q, k, c, B) = E(q, k) T(B) / (k c T(B) + T(B (k + 1))),

which is Episode 5's ``E / (1 + k c)`` when ``T`` is flat.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import validate as _v
from . import theory

#: Largest batch the cost model takes.
BATCH_MAX = 4096
#: A point is compute-bound when its pass takes this many times the floor.
COMPUTE_BOUND_FACTOR = 1.2


@dataclass(frozen=True, eq=False)
class PassTimeCurve:
    """Time of one forward pass against the positions it scores.

    Attributes
    ----------
    n_positions, median_ms : numpy.ndarray
        The measured points, sorted by ``n_positions`` (read-only).
    floor_ms : float
        Memory-bound floor of the fit: the median time of the points that are
        not compute-bound (the flat start of the curve).
    slope_ms, intercept_ms : float
        Compute-bound line of the fit: ``intercept_ms + slope_ms * n``.
    label : str
        What was measured (shown beside the curve).

    Examples
    --------
    >>> curve = fit_roofline([1, 2, 4, 8], [1.0, 1.0, 2.0, 4.0])
    >>> round(curve.time_ms(16), 6), curve.is_fit(16), curve.is_fit(4)
    (8.0, True, False)
    """

    n_positions: np.ndarray
    median_ms: np.ndarray
    floor_ms: float
    slope_ms: float
    intercept_ms: float
    label: str = ""

    @property
    def n_max(self) -> int:
        """Largest measured number of positions; beyond it the fit is used."""
        return int(self.n_positions[-1])

    def fit_ms(self, n):
        """The roofline fit at ``n`` positions: ``max(floor, intercept + slope n)``."""
        n = np.asarray(n, dtype=float)
        out = np.maximum(self.floor_ms, self.intercept_ms + self.slope_ms * n)
        return float(out) if out.ndim == 0 else out

    def time_ms(self, n):
        """Time of a pass over ``n`` positions (broadcasts).

        Measured points are joined by straight lines inside the measured range;
        beyond it the roofline fit is used (see :meth:`is_fit`).
        """
        n = np.asarray(n, dtype=float)
        inside = np.interp(n, self.n_positions, self.median_ms)
        out = np.where(n > self.n_max, self.fit_ms(n), inside)
        return float(out) if out.ndim == 0 else out

    def is_fit(self, n):
        """True where :meth:`time_ms` comes from the fit, not from measurement."""
        out = np.asarray(n) > self.n_max
        return bool(out) if out.ndim == 0 else out


def fit_roofline(n_positions, median_ms, *, label: str = "") -> PassTimeCurve:
    """Fit a roofline (memory-bound floor, compute-bound slope) to measured pass times.

    The floor is the median time of the points that are not compute-bound (a
    point is compute-bound once it takes ``COMPUTE_BOUND_FACTOR`` times the
    fastest measured pass). The slope is a least-squares line through the
    compute-bound points, or through the last two points when fewer than two
    are compute-bound (then the fit only extends the curve's end).

    Parameters
    ----------
    n_positions : array_like of int
        Positions scored per pass, at least two distinct values >= 1.
    median_ms : array_like of float
        Measured time of each pass, > 0.

    Examples
    --------
    >>> c = fit_roofline([1, 64, 256, 512], [4.8, 4.96, 6.77, 11.14])
    >>> round(c.floor_ms, 2), round(c.slope_ms, 4)
    (4.88, 0.0171)
    """
    n = _v.int_array("n_positions", n_positions, 1, 10**9)
    ms = _v.real_array("median_ms", median_ms, 0.0, 1e9, lo_open=True)
    if n.ndim != 1 or ms.shape != n.shape or n.size < 2:
        raise ValueError(
            f"n_positions and median_ms must be 1-D of equal length >= 2; got shapes "
            f"{np.shape(n_positions)} and {np.shape(median_ms)}"
        )
    order = np.argsort(n, kind="stable")
    n, ms = n[order], ms[order]
    if np.unique(n).size != n.size:
        raise ValueError("n_positions must not repeat")
    bound = ms >= COMPUTE_BOUND_FACTOR * ms.min()
    floor = float(np.median(ms[~bound])) if (~bound).any() else float(ms.min())
    idx = np.flatnonzero(bound) if bound.sum() >= 2 else np.arange(n.size - 2, n.size)
    slope, intercept = np.polyfit(n[idx].astype(float), ms[idx], 1)
    slope = max(float(slope), 0.0)
    n.setflags(write=False)
    ms.setflags(write=False)
    return PassTimeCurve(n_positions=n, median_ms=ms, floor_ms=floor, slope_ms=slope,
                         intercept_ms=float(intercept), label=label)


@dataclass(frozen=True, eq=False)
class BatchCosts:
    """Per-round costs and speedups of speculative decoding at batch sizes ``batch``.

    Every array attribute has the broadcast shape of the inputs.

    Attributes
    ----------
    q, k, c : float, numpy.ndarray, float
        The knobs.
    batch : numpy.ndarray
        Batch sizes ``B``.
    plain_step_ms : numpy.ndarray
        One plain decode step over ``B`` positions: ``T(B)``.
    draft_ms : numpy.ndarray
        The round's ``k`` draft steps over the batch: ``k c T(B)``.
    verify_ms : numpy.ndarray
        The round's verify pass over ``B (k + 1)`` positions.
    tokens_per_round : numpy.ndarray
        Tokens one sequence gains per round, ``E(q, k)`` (the batch gains ``B`` times it).
    speedup : numpy.ndarray
        Plain time over speculative time for the same tokens.
    verify_fitted : numpy.ndarray of bool
        True where the verify pass is priced by the roofline fit, not by measurement.

    Examples
    --------
    >>> flat = fit_roofline([1, 10_000], [1.0, 1.0])
    >>> r = batch_costs(0.8, 4, 0.1, [1, 64], flat)
    >>> r.speedup.round(3).tolist()
    [2.401, 2.401]
    """

    q: float
    k: np.ndarray
    c: float
    batch: np.ndarray
    plain_step_ms: np.ndarray
    draft_ms: np.ndarray
    verify_ms: np.ndarray
    tokens_per_round: np.ndarray
    speedup: np.ndarray
    verify_fitted: np.ndarray

    @property
    def round_ms(self) -> np.ndarray:
        return self.draft_ms + self.verify_ms

    @property
    def plain_tokens_per_s(self) -> np.ndarray:
        """Tokens per second the whole batch gets from plain decoding."""
        return 1000.0 * self.batch / self.plain_step_ms

    @property
    def speculative_tokens_per_s(self) -> np.ndarray:
        """Tokens per second the whole batch gets from speculative decoding."""
        return 1000.0 * self.batch * self.tokens_per_round / self.round_ms


def _batch(value) -> np.ndarray:
    return _v.int_array("batch", value, 1, BATCH_MAX)


def batch_costs(q, k, c, batch, curve: PassTimeCurve) -> BatchCosts:
    """Price one speculative round and one plain step at each batch size.

    Parameters
    ----------
    q : float
        Acceptance probability of a drafted token, in [0, 1].
    k : int or array_like of int
        Draft length(s), in [1, 64].
    c : float
        Draft step cost as a fraction of a target step at the same batch, in [0, 10].
    batch : int or array_like of int
        Batch sizes, in [1, 4096].
    curve : PassTimeCurve
        Pass time against positions scored.

    Returns
    -------
    BatchCosts
    """
    q = _v.probability("q", q)
    c = _v.draft_cost(c)
    k = _v.int_array("k", k, 1, _v.K_MAX)
    b = _batch(batch)
    k, b = np.broadcast_arrays(k, b)
    plain = np.asarray(curve.time_ms(b), dtype=float)
    verify_n = b * (k + 1)
    verify = np.asarray(curve.time_ms(verify_n), dtype=float)
    draft = k * c * plain
    e = np.asarray(theory.expected_tokens_per_round(q, k), dtype=float)
    return BatchCosts(
        q=q, k=k, c=c, batch=b,
        plain_step_ms=plain, draft_ms=draft, verify_ms=verify,
        tokens_per_round=e,
        speedup=e * plain / (draft + verify),
        verify_fitted=np.asarray(curve.is_fit(verify_n)),
    )


@dataclass(frozen=True, eq=False)
class BestK:
    """The fastest draft length at each batch size, and whether it beats plain decoding.

    Attributes
    ----------
    batch : numpy.ndarray
        Batch sizes.
    k : numpy.ndarray
        The draft length in ``1..k_max`` with the highest speedup (ties: shorter).
    speedup : numpy.ndarray
        That draft length's speedup.
    speculate : numpy.ndarray of bool
        ``speedup > 1``: False where the best choice is not to speculate at all.
    """

    batch: np.ndarray
    k: np.ndarray
    speedup: np.ndarray
    speculate: np.ndarray


def best_k_per_batch(q, c, batch, curve: PassTimeCurve, k_max: int = 16) -> BestK:
    """For each batch size, the draft length with the highest speedup.

    Examples
    --------
    >>> flat = fit_roofline([1, 10_000], [1.0, 1.0])
    >>> best_k_per_batch(0.8, 0.1, [1, 8], flat).k.tolist()
    [6, 6]
    """
    k_max = _v.integer("k_max", k_max, 1, _v.K_MAX)
    b = _batch(batch)
    ks = np.arange(1, k_max + 1)
    s = batch_costs(q, ks[:, None], c, b[None, :], curve).speedup
    best = np.argmax(s, axis=0)
    speed = s[best, np.arange(b.size)]
    return BestK(batch=b, k=ks[best], speedup=speed, speculate=speed > 1.0)


def effective_cost(k, c, batch, curve: PassTimeCurve):
    """The draft cost that gives the same speedup in Episode 5's formula ``E / (1 + k c)``.

    ``speedup = E T(B) / (k c T(B) + T(B (k + 1)))`` is ``E / (1 + k c_eff)`` with

        c_eff = c + (T(B (k + 1)) / T(B) - 1) / k,

    so a verify pass that costs more than a plain step acts like a dearer draft: every
    point of Episode 5's break-even map applies with ``c_eff`` in place of ``c``.

    Examples
    --------
    >>> flat = fit_roofline([1, 10_000], [1.0, 1.0])
    >>> float(effective_cost(4, 0.1, 64, flat))
    0.1
    """
    c = _v.draft_cost(c)
    k = _v.int_array("k", k, 1, _v.K_MAX)
    b = _batch(batch)
    k, b = np.broadcast_arrays(k, b)
    ratio = np.asarray(curve.time_ms(b * (k + 1)), dtype=float) / np.asarray(curve.time_ms(b), dtype=float)
    out = c + (ratio - 1.0) / k
    return float(out) if out.ndim == 0 else out


def break_even_q(k, c, batch, curve: PassTimeCurve) -> float:
    """Smallest acceptance rate at which speculation at this batch is no slower than plain decoding.

    NaN when no q in [0, 1] breaks even (the effective cost is above 1); 0 when the verify pass
    and the drafts together cost no more than a plain step (a measured curve can dip: then every q
    breaks even).

    Examples
    --------
    >>> flat = fit_roofline([1, 10_000], [1.0, 1.0])
    >>> round(break_even_q(4, 0.15, 1, flat), 2)           # Episode 5's 0.38
    0.38
    >>> break_even_q(1, 0.0, 1, fit_roofline([1, 2, 4], [10.0, 9.0, 12.0]))
    0.0
    """
    c_eff = float(effective_cost(k, c, batch, curve))
    k = _v.draft_length(k)
    if c_eff > 1.0:
        return float("nan")
    return float(theory.break_even_q(k, max(c_eff, 0.0)))


def break_even_batch(q, k, c, curve: PassTimeCurve, batch_max: int = 256) -> int | None:
    """Smallest batch size in ``1..batch_max`` at which speculation is slower than plain decoding.

    ``None`` when speculation pays at every batch size up to ``batch_max``; 1 when it
    never pays.

    Examples
    --------
    >>> flat = fit_roofline([1, 10_000], [1.0, 1.0])
    >>> break_even_batch(0.8, 4, 0.1, flat) is None
    True
    >>> break_even_batch(0.0, 4, 0.1, flat)
    1
    """
    batch_max = _v.integer("batch_max", batch_max, 1, BATCH_MAX)
    b = np.arange(1, batch_max + 1)
    slower = batch_costs(q, k, c, b, curve).speedup < 1.0
    return int(b[np.argmax(slower)]) if slower.any() else None
