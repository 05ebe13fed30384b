"""The numpy path: every product the kernel computes, in numpy on the same packed layouts (the
fallback without numba, and the reference the compiled tiles are tested against)."""

from __future__ import annotations

import numpy as np

from .activations import quantize
from .blocks import BLOCK, QPacked
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


def block_codes(w: QPacked, units=slice(None)) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Units ``units`` of a weight in blocks as integers: codes int64 ``(u, blocks, 32, width)``
    (Q4_1: 0-15, Q8_0: -128-127; ``[u, b, k, j]``: row ``width u + j``, input ``32 b + k``), the
    scales ``d`` and minimums ``m`` (Q8_0: None) float64 ``(u, blocks, width)``."""
    d, m, quads = w._fields(units)
    u, nb = quads.shape[:2]
    codes = quads.transpose(0, 1, 2, 5, 3, 4).reshape(u, nb, -1, w.width)  # (u, blocks, byte, row)
    if w.kind == "q4_1":
        q = np.concatenate((codes & 15, codes >> 4), axis=2).astype(np.int64)
    else:
        q = codes.view(np.int8).astype(np.int64)
    return q, d.astype(np.float64), None if m is None else m.astype(np.float64)


def matmul_t_int_numpy(x: np.ndarray, w: QPacked) -> np.ndarray:
    """``x @ w.T`` as the integer tile computes it (:mod:`.codegen_int`), in numpy: ``x`` quantised
    to 8 bits per block (:func:`.activations.quantize`), each block's sum over its 32 inputs taken
    in integers (exact), then ``d s (sum q a) + m (s sum a)`` summed over the blocks in float64,
    rounded to float32 once. The compiled tile sums the blocks in float32, so it agrees to float32
    rounding, not bit for bit; its integer sums are exact."""
    a, s, ms, _ = quantize(x)
    n = a.shape[0]
    q, d, m = block_codes(w)
    isum = np.einsum("pbk,ubkr->pubr", a.reshape(n, -1, BLOCK).astype(np.int64), q)
    y = np.einsum("pubr,ubr,pb->pur", isum.astype(np.float64), d, s.astype(np.float64))
    if m is not None:
        y += np.einsum("ubr,pb->pur", m, ms.astype(np.float64))
    return np.ascontiguousarray(y.reshape(n, -1)[:, :w.rows].astype(F32))
