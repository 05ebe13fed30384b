"""The numpy path: every product the kernel computes, in numpy on the same packed layouts (the
fallback without numba, and the reference the compiled tiles are tested against)."""

from __future__ import annotations

import numpy as np

from .layouts import Packed

F32 = np.float32


def matmul_t_numpy(x: np.ndarray, w) -> np.ndarray:
    """``x @ w.T`` with numpy only: the fallback of :func:`matmul_t`.

    A :class:`Packed` weight is multiplied panel by panel (one stacked matrix product); a plain
    ``(out, in)`` array by BLAS.
    """
    x = np.asarray(x, dtype=F32)
    if not isinstance(w, Packed):
        return np.ascontiguousarray(x @ w.T)
    b = w.blocks()
    nb, k, width = b.shape
    y = np.matmul(x, b.astype(F32) if w.half or w.int8 else b)  # (blocks, n, width)
    y = y.transpose(1, 0, 2).reshape(x.shape[0], nb * width)[:, :w.rows]
    if w.int8:
        return np.ascontiguousarray(y * w.scale[:w.rows])
    return np.ascontiguousarray(y)
