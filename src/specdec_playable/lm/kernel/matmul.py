"""The kernel's entry points: :func:`matmul_t` (``x @ w.T`` on packed weights), :func:`read_all`
(the memory floor) and :func:`warmup` (compile now)."""

from __future__ import annotations

import numpy as np

from .backend import HAVE_NUMBA
from .blocks import FORMATS, KIND, QPacked, pack_blocks
from .layouts import Packed, group_positions, pack
from .reference import matmul_t_numpy
from .shapes import MAX_GROUP, PANEL
from .pool import prepare_threads
from .tuning import blocks_plan, prefetch_ahead

if HAVE_NUMBA:
    from .drive import products, products_int, products_q, read_weights

F32 = np.float32


def read_all(weights) -> float:
    """Stream every element of the given :class:`Packed` (or :class:`.blocks.QPacked`) weights
    once, as the one-position tile does, with the kernel's threads and nothing else: the memory
    floor a pass cannot beat (a benchmark's yardstick; blocks are read as their bytes, 256 to an
    input). Returns a number that depends on every weight (a zero here; for blocks, whose bytes
    are read as floats, it may be NaN)."""
    weights = list(weights)
    if not HAVE_NUMBA:
        return float(sum(np.sum(w.data if isinstance(w, (Packed, QPacked)) else w) for w in weights)) * 0.0
    weights = [_as_floats(w) for w in weights]
    prepare_threads()
    zeros = np.zeros((max(w.shape[1] for w in weights), 1), F32)
    sums = np.empty((1, max(w.data.shape[0] for w in weights) * PANEL), F32)
    total = 0.0
    for w in weights:
        read_weights(w.data, zeros, sums)
        total += float(sums[0, 0])
    return total


def _as_floats(w):
    """A :class:`.blocks.QPacked` weight's bytes seen as a float32 :class:`Packed`, for reading
    only (a view: each panel's bytes as 256-byte inputs; a copy in the rare shape whose panels
    end in a part of one, which is left out); anything else as it is."""
    if not isinstance(w, QPacked):
        return w
    floats = w.data.view(F32)
    k = floats.shape[1] // PANEL
    return Packed(np.ascontiguousarray(floats[:, :k * PANEL]).reshape(-1, k, PANEL), w.rows)


def matmul_t(x: np.ndarray, w, out: np.ndarray | None = None) -> np.ndarray:
    """Return ``x @ w.T`` in float32, streaming each weight from memory once.

    Parameters
    ----------
    x : numpy.ndarray
        float32 activations, shape ``(n, in)``; any strides (they are regrouped for the kernel
        anyway: :func:`group_positions`).
    w : Packed, QPacked or numpy.ndarray
        The weight, ``(out, in)``: packed by :func:`pack` (the kernel's layout, as the model keeps
        it), GGUF blocks repacked by :func:`.blocks.pack_blocks`, or a plain float32 array
        (multiplied by numpy).
    out : numpy.ndarray, optional
        C-contiguous float32 array of shape ``(n, out)`` to write into.

    Returns
    -------
    numpy.ndarray
        float32, shape ``(n, out)``, C-contiguous.

    Notes
    -----
    The kernel sums in a different order from BLAS; against a float64 reference its largest error,
    relative to the largest output, is below 1e-6 at the model's shapes. Tests use 1e-5.
    """
    _check(x, w, out)
    n = x.shape[0]
    if n == 0 or not HAVE_NUMBA or not isinstance(w, (Packed, QPacked)):
        y = matmul_t_numpy(x, w)
        if out is not None:
            out[...] = y
            return out
        return y
    m = w.shape[0]
    padded = w.data.shape[0] * PANEL
    y = out if out is not None and padded == m else np.empty((n, padded), F32)
    prepare_threads(n)
    if isinstance(w, QPacked):
        ahead, scratch, isa, group, int_ahead = blocks_plan(n)
        if isa >= 0:
            products_int(group_positions(x), w.data, n, y, 2 * KIND[w.kind] + w.strips, (isa, group, int_ahead))
        else:
            products_q(group_positions(x), w.data, n, y, ahead, 2 * KIND[w.kind] + w.strips + scratch)
    else:
        products(group_positions(x), w.data, n, y, prefetch_ahead(n, w.strips), w.strips)
    if isinstance(w, Packed) and w.scale is not None:
        y *= w.scale[:y.shape[1]]
    if padded != m:
        y = y[:, :m]
        if out is None:
            return np.ascontiguousarray(y)
        out[...] = y
        return out
    return y


def _check(x: np.ndarray, w, out: np.ndarray | None) -> None:
    """ValueError or TypeError unless :func:`matmul_t` can multiply ``x`` by ``w`` into ``out``."""
    if x.ndim != 2 or len(w.shape) != 2 or x.shape[1] != w.shape[1]:
        raise ValueError(f"matmul_t: shapes {x.shape} and {w.shape} do not match (n, in), (out, in)")
    kinds = (F32, np.float16, np.int8) if isinstance(w, Packed) else (np.uint8,) if isinstance(w, QPacked) else (F32,)
    if x.dtype != F32 or w.dtype not in kinds:
        raise TypeError(f"matmul_t: float32 activations and float32 weights (or float16 or int8 packed "
                        f"ones, or GGUF blocks) only, got {x.dtype} and {w.dtype}")
    if out is not None and (out.shape != (x.shape[0], w.shape[0]) or out.dtype != F32
                            or not out.flags.c_contiguous):
        raise ValueError("matmul_t: out must be C-contiguous float32 of shape (n, out)")


def warmup() -> float:
    """Compile (or load from cache) the kernel now, every tile shape, for weights in blocks the tiles
    this process uses (the integer tile where it is chosen, else the float tiles; the other kind
    compiles when first asked for); return the seconds it took."""
    import time
    t0 = time.perf_counter()
    if HAVE_NUMBA:
        w = pack(np.zeros((2 * PANEL + 1, 8), F32))
        blocks = [pack_blocks(np.zeros((PANEL + 1, size), np.uint8), kind) for kind, (size, _, _) in FORMATS.items()]
        for n in range(1, 2 * MAX_GROUP + 1):
            for b in [w, *blocks]:
                matmul_t(np.zeros((n, b.shape[1]), F32), b)
        read_all([w, *blocks])
    return time.perf_counter() - t0
