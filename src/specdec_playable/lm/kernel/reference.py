"""The numpy path: every product the kernel computes, in numpy on the same packed layouts (the
fallback without numba, and the reference the compiled tiles are tested against)."""

from __future__ import annotations

import numpy as np

from .blocks import QPacked
from .layouts import Packed
from .shapes import PANEL

F32 = np.float32


def matmul_t_numpy(x: np.ndarray, w) -> np.ndarray:
    """``x @ w.T`` with numpy only: the fallback of :func:`matmul_t`.

    A :class:`Packed` weight is multiplied panel by panel (one stacked matrix product); one in GGUF
    blocks (:class:`.blocks.QPacked`) is dequantised a few panels at a time and multiplied the same
    way; a plain ``(out, in)`` array by BLAS.
    """
    x = np.asarray(x, dtype=F32)
    if isinstance(w, QPacked):
        return _matmul_blocks(x, w)
    if not isinstance(w, Packed):
        return np.ascontiguousarray(x @ w.T)
    b = w.blocks()
    nb, k, width = b.shape
    y = np.matmul(x, b.astype(F32) if w.half or w.int8 else b)  # (blocks, n, width)
    y = y.transpose(1, 0, 2).reshape(x.shape[0], nb * width)[:, :w.rows]
    if w.int8:
        return np.ascontiguousarray(y * w.scale[:w.rows])
    return np.ascontiguousarray(y)


def _matmul_blocks(x: np.ndarray, w: QPacked, units: int = 64) -> np.ndarray:
    """``x @ w.T`` for a weight in blocks: ``units`` panels (or strips) dequantised at a time
    (:meth:`.blocks.QPacked.values`, float32 as GGUF defines them), each multiplied by BLAS."""
    width = w.width
    total = w.data.shape[0] * PANEL // width
    y = np.empty((x.shape[0], total * width), F32)
    for lo in range(0, total, units):
        v = w.values(slice(lo, lo + units))  # (u, cols, width)
        y[:, lo * width:(lo + v.shape[0]) * width] = np.matmul(x, v).transpose(1, 0, 2).reshape(x.shape[0], -1)
    return np.ascontiguousarray(y[:, :w.rows])
