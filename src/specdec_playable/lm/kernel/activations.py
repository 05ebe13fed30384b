"""Activations in 8 bits for the integer tile (:mod:`.codegen_int`): each position's inputs in blocks
of 32, as llama.cpp's Q8 blocks quantise them.

For each position and block of 32 inputs ``x``: ``amax = max |x|``, the scale ``s = amax / 127``
and the codes ``a = rint(x * (127 / amax))`` in [-127, 127] (all zero, ``s = 0``, where the block
is zero), so ``x ~ s a`` to within ``s / 2`` per input. The codes and the scale are computed in
float64 and rounded once. Beside them each block's ``sum a`` (int32) and ``s * sum a`` (float32,
for Q4_1's minimum). :func:`quantize` is the numpy reference;
:func:`quantize_grouped` the compiled form, which reads the kernel's grouped inputs
(:func:`.layouts.group_positions`) and gives the same codes and scales bit for bit (the same
float64 operations, in the same order, with no fast-math).
"""

from __future__ import annotations

import numpy as np

from .backend import HAVE_NUMBA
from .blocks import BLOCK

F32 = np.float32


def quantize(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``x`` (n, in), ``in`` a multiple of 32, in 8-bit blocks: ``(a, s, s * sum a, sum a)``, int8
    ``(n, in)``, float32 ``(n, in / 32)`` twice and int32 ``(n, in / 32)``."""
    x = np.asarray(x, dtype=F32)
    n, k = x.shape
    if k % BLOCK:
        raise ValueError(f"quantize: the inputs must be blocks of {BLOCK}; got {k}")
    blocks = x.reshape(n, k // BLOCK, BLOCK)
    amax = np.abs(blocks).max(axis=2)
    zero = amax == 0
    amax64 = np.where(zero, 1.0, amax.astype(np.float64))
    a = np.clip(np.rint(blocks.astype(np.float64) * (127.0 / amax64)[..., None]), -127, 127)
    a[zero] = 0
    s = np.where(zero, F32(0.0), (amax64 / 127.0).astype(F32)).astype(F32)
    sums = a.sum(axis=2).astype(np.int32)
    return a.astype(np.int8).reshape(n, k), s, (s * sums.astype(F32)).astype(F32), sums


if HAVE_NUMBA:
    from numba import njit

    @njit(error_model="numpy", cache=True)
    def quantize_grouped(xg, n, a, s, ms, sums):
        """:func:`quantize` of the ``n`` positions of grouped inputs ``xg`` (groups, in, size)
        into ``a`` int8 (>= n, in), ``s``, ``ms`` float32 and ``sums`` int32 (>= n, in / 32)."""
        groups, k, gs = xg.shape
        base = n // groups
        extra = n - base * groups
        p = 0
        for g in range(groups):
            for j in range(base + (g < extra)):
                for blk in range(k // BLOCK):
                    amax = F32(0.0)
                    for i in range(BLOCK):
                        amax = max(amax, abs(xg[g, BLOCK * blk + i, j]))
                    if amax == 0:
                        for i in range(BLOCK):
                            a[p, BLOCK * blk + i] = 0
                        s[p, blk] = F32(0.0)
                        ms[p, blk] = F32(0.0)
                        sums[p, blk] = 0
                        continue
                    inv = 127.0 / np.float64(amax)
                    total = 0
                    for i in range(BLOCK):
                        c = np.rint(np.float64(xg[g, BLOCK * blk + i, j]) * inv)
                        c = min(max(c, -127.0), 127.0)
                        a[p, BLOCK * blk + i] = np.int8(c)
                        total += np.int32(c)
                    sc = np.float32(np.float64(amax) / 127.0)
                    s[p, blk] = sc
                    ms[p, blk] = sc * F32(total)
                    sums[p, blk] = total
                p += 1
