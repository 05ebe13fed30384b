"""Input validation shared by the core's entry points.

Every check raises ``ValueError`` naming the parameter, the bad value and the
allowed range, so a caller (or a visitor's URL) gets a message it can act on.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

K_MAX = 64
#: The draft length the pages and the command line open at.
K_DEFAULT = 4
C_MAX = 10.0
ROUNDS_MAX = 10**7


def _fail(name: str, value: object, allowed: str) -> ValueError:
    if isinstance(value, np.generic):
        value = value.item()  # "nan", not "np.float64(nan)"
    shown = repr(value)
    if len(shown) > 80:
        shown = shown[:77] + "..."
    return ValueError(f"{name} must be {allowed}; got {shown}")


def _real_range(lo: float, hi: float, lo_open: bool) -> str:
    return f"a finite number in {'(' if lo_open else '['}{lo:g}, {hi:g}]"


def real_array(name: str, value, lo: float, hi: float, *, lo_open: bool = False) -> np.ndarray:
    """Return ``value`` as a float array, every element finite and in range."""
    allowed = _real_range(lo, hi, lo_open)
    if isinstance(value, (bool, np.bool_, str, bytes)):
        raise _fail(name, value, allowed)
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise _fail(name, value, allowed) from None
    if arr.size == 0:
        raise _fail(name, value, allowed)
    bad = ~np.isfinite(arr) | (arr > hi) | ((arr <= lo) if lo_open else (arr < lo))
    if bad.any():
        first = arr.flat[int(np.flatnonzero(bad)[0])] if arr.ndim else value
        raise _fail(name, first, allowed)
    return arr


def int_array(name: str, value, lo: int, hi: int) -> np.ndarray:
    """Return ``value`` as an int64 array, every element an integer in [lo, hi]."""
    allowed = f"an integer in [{lo}, {hi}]"
    if isinstance(value, (bool, np.bool_, str, bytes)):
        raise _fail(name, value, allowed)
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError):
        raise _fail(name, value, allowed) from None
    if arr.size == 0 or arr.dtype.kind not in "iu":
        raise _fail(name, value, allowed)
    bad = (arr < lo) | (arr > hi)
    if bad.any():
        first = arr.flat[int(np.flatnonzero(bad)[0])] if arr.ndim else value
        raise _fail(name, first, allowed)
    return arr.astype(np.int64)


def real(name: str, value, lo: float, hi: float, *, lo_open: bool = False) -> float:
    """Return ``value`` as a Python float, finite and in range."""
    # A plain float skips the slower ABC check (and bool is never a float); the
    # message is only formatted on failure. Both matter at interactive call rates.
    if type(value) is not float and (isinstance(value, bool) or not isinstance(value, numbers.Real)):
        raise _fail(name, value, _real_range(lo, hi, lo_open))
    v = float(value)
    if not math.isfinite(v) or v > hi or (v <= lo if lo_open else v < lo):
        raise _fail(name, value, _real_range(lo, hi, lo_open))
    return v


def integer(name: str, value, lo: int, hi: int) -> int:
    """Return ``value`` as a Python int in [lo, hi]."""
    if type(value) is not int and (
        isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral)
    ):
        raise _fail(name, value, f"an integer in [{lo}, {hi}]")
    v = int(value)
    if not lo <= v <= hi:
        raise _fail(name, value, f"an integer in [{lo}, {hi}]")
    return v


def probability(name: str, value) -> float:
    return real(name, value, 0.0, 1.0)


def draft_length(value) -> int:
    return integer("k", value, 1, K_MAX)


def draft_cost(value) -> float:
    return real("c", value, 0.0, C_MAX)


def duration_ms(name: str, value) -> float:
    return real(name, value, 0.0, 1e9, lo_open=True)


def generator(rng) -> np.random.Generator:
    """Normalise ``rng`` (a Generator, a seed or None) with ``default_rng``."""
    if isinstance(rng, bool):
        raise ValueError(f"rng must be a numpy Generator, an integer seed or None; got {rng!r}")
    try:
        return np.random.default_rng(rng)
    except (TypeError, ValueError) as exc:
        raise ValueError(
            f"rng must be a numpy Generator, an integer seed or None; got {rng!r}"
        ) from exc
