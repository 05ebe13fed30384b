"""The compiled drivers: whole products over packed weights, tiles shared between threads.

:func:`products` runs one matrix: with one group of positions (1-6) every panel in one tile over all
of its inputs, the tile prefetching its panel ahead (:func:`.tuning.prefetch_ahead`); with more,
equal groups of at most :data:`.shapes.MAX_GROUP` over each chunk of :data:`.shapes.CHUNK` inputs
while it is in L1, prefetching the next chunk into L2, spread over the groups. Narrow tiles on the
strips layout run one strip at a time the same way. :func:`products_q` does the same for weights
in GGUF blocks (:mod:`.blocks`), several groups over chunks unpacked once into L1. :func:`read_weights`
only reads (the floor).
"""

from __future__ import annotations

import numpy as np

from .backend import HAVE_NUMBA
from .blocks import BLOCK
from .shapes import CHUNK, LANES, PANEL, SCRATCH_BLOCKS

if HAVE_NUMBA:
    from numba import njit, prange, types
    from numba.extending import overload

    from .activations import quantize_grouped
    from .codegen import run_narrow, run_tile, tile
    from .codegen_blocks import tile_blocks, unpack_blocks
    from .codegen_int import GROUP, tile_int

    @njit(inline="always")
    def run_blocks_tile(w, x, out, at, code, form):
        """One block tile (:func:`.codegen_blocks.tile_blocks`), its format and width given at run
        time as ``form = 2 * kind + narrow`` (kind 0: Q4_1, 1: Q8_0)."""
        if form == 0:
            tile_blocks((w, x, out), at, code, 0, 0)
        elif form == 1:
            tile_blocks((w, x, out), at, code, 0, 1)
        elif form == 2:
            tile_blocks((w, x, out), at, code, 1, 0)
        else:
            tile_blocks((w, x, out), at, code, 1, 1)

    @njit(inline="always")
    def run_unpack(w, scratch, at, prefetch, form):
        """:func:`.codegen_blocks.unpack_blocks` with its format and width (``form``) and whether
        it prefetches given at run time."""
        if prefetch:
            if form == 0:
                unpack_blocks((w, scratch), at, 2, 0, 0)
            elif form == 1:
                unpack_blocks((w, scratch), at, 2, 0, 1)
            elif form == 2:
                unpack_blocks((w, scratch), at, 2, 1, 0)
            else:
                unpack_blocks((w, scratch), at, 2, 1, 1)
        elif form == 0:
            unpack_blocks((w, scratch), at, 0, 0, 0)
        elif form == 1:
            unpack_blocks((w, scratch), at, 0, 0, 1)
        elif form == 2:
            unpack_blocks((w, scratch), at, 0, 1, 0)
        else:
            unpack_blocks((w, scratch), at, 0, 1, 1)

    @njit(parallel=True, fastmath=True, cache=True)
    def products_q(xg, w, n, out, ahead, form):
        """``out[:n, :64 * panels] = x @ w.T`` for grouped inputs ``xg`` (groups, in, gs) and a
        weight in blocks ``w`` (uint8 ``(panels, bytes)``, :class:`.blocks.QPacked` data), in
        format and width ``form = 2 * kind + strips`` (kind 0: Q4_1, 1: Q8_0), plus 4 where one
        group, too, goes through scratch panels (:func:`.tuning.blocks_plan`).

        One group: each unit (panel or strip) in one block tile over all of its inputs,
        prefetching ``ahead`` blocks ahead (0: not at all). Several groups: each chunk of
        :data:`.shapes.SCRATCH_BLOCKS` blocks of a unit unpacked once into a float32 scratch
        panel in L1 (prefetching the next chunk when ``ahead`` is not 0), which every group then
        multiplies with the float32 tile."""
        groups, k_in, gs = xg.shape
        nb = k_in // BLOCK
        width = LANES if form & 1 else PANEL
        units = w.shape[0] * (PANEL // width)
        sb = width * (34 if form & 2 else 20)
        o_stride = out.shape[1]
        if groups == 1 and not form & 4:  # every position in registers for the whole of k
            pf = 2 if ahead > 0 else 0
            for u in prange(units):
                at = (u * nb * sb, 0, nb, 0, gs, 1, u * width, o_stride, (u * nb + ahead) * sb)
                run_blocks_tile(w, xg, out, at, 4 * n + pf, form & 3)
            return
        base = n // groups
        extra = n - base * groups
        for u in prange(units):  # chunks unpacked into L1, every group over each chunk
            scratch = np.empty(SCRATCH_BLOCKS * BLOCK * width, np.float32)
            for c in range(0, nb, SCRATCH_BLOCKS):
                hi = min(c + SCRATCH_BLOCKS, nb)
                run_unpack(w, scratch, (u * nb * sb, c, hi, (u * nb + hi) * sb), ahead > 0, form & 3)
                for g in range(groups):
                    lo = g * base + min(g, extra)
                    at = (-c * BLOCK * width, c * BLOCK, hi * BLOCK, g * k_in * gs, gs, 1,
                          lo * o_stride + u * width, o_stride, 0)
                    if form & 1:
                        run_narrow(scratch, xg, out, at, base + (g < extra), 1 if c > 0 else 0)
                    else:
                        run_tile(scratch, xg, out, at, base + (g < extra), 1 if c > 0 else 0)

    @njit(inline="always")
    def run_int_tile(arrays, at, p, form, isa):
        """One integer tile (:func:`.codegen_int.tile_int`), its format (``form >> 1``: 0 Q4_1,
        1 Q8_0) and instruction set (:data:`.codegen_int.ISA`'s index) given at run time."""
        if form & 2:
            if isa == 0:
                tile_int(arrays, at, p, 1, 0)
            else:
                tile_int(arrays, at, p, 1, 1)
        elif isa == 0:
            tile_int(arrays, at, p, 0, 0)
        else:
            tile_int(arrays, at, p, 0, 1)

    @njit(parallel=True, cache=True)  # no fast-math: the quantiser's codes are the reference's, bit for bit
    def products_int(xg, w, n, out, form, plan):
        """``out[:n, :64 * panels] = x @ w.T`` for grouped inputs ``xg`` (groups, in, gs) and a
        weight in blocks ``w`` by the integer tile: the positions quantised to 8 bits once
        (:func:`.activations.quantize_grouped`), then each 16 rows of the weight times every
        position, in equal groups of at most ``group`` (<= :data:`.codegen_int.GROUP`; the later
        groups read the rows from L1). ``form`` as :func:`products_q`'s (bit 0: strips; bit 1:
        Q8_0); ``plan = (isa, group, ahead)``: the instruction set's index in
        :data:`.codegen_int.ISA`, the positions a tile holds, and how many bytes ahead the first
        group prefetches the weights into L2 (0: none)."""
        isa, group, ahead = plan
        k_in = xg.shape[1]
        nb = k_in // BLOCK
        a = np.empty((n, k_in), np.int8)
        s = np.empty((n, nb), np.float32)
        ms = np.empty((n, nb), np.float32)
        sums = np.empty((n, nb), np.int32)
        quantize_grouped(xg, n, a, s, ms, sums)
        width = LANES if form & 1 else PANEL
        sb = width * (34 if form & 2 else 20)
        per_unit = width // LANES
        vectors = w.shape[0] * (PANEL // LANES)
        groups = -(-n // max(1, min(group, GROUP)))
        base = n // groups
        extra = n - base * groups
        o_stride = out.shape[1]
        for r in prange(vectors):
            u = r // per_unit
            v = r - u * per_unit
            for g in range(groups):
                lo = g * base + min(g, extra)
                at = (u * nb * sb, v, width, nb, lo, u * width, o_stride, ahead if g == 0 else 0)
                run_int_tile((w, a, s, ms, sums, out), at, base + (g < extra), form, isa)

    @njit(parallel=True, fastmath=True, cache=True)
    def products(xg, w, n, out, ahead, strips):
        """``out[:n, :64 * panels] = x @ w.T`` for grouped inputs ``xg`` (groups, in, gs) (see
        :func:`group_positions`), packed ``w`` (panels, in, 64) and ``out`` (>= n, >= 64 panels),
        all float32 C-contiguous. Padded rows are written too (as the zero rows' products).
        ``ahead``: how many inputs ahead a tile prefetches its weights (0: not at all;
        :func:`prefetch_ahead`), with one group of wide tiles or with narrow ones; -1: one group
        of wide tiles runs chunk by chunk like several, prefetching the next chunk. ``strips``:
        ``w`` is in the strips layout (:attr:`Packed.strips`), multiplied by narrow tiles."""
        groups, k_in, gs = xg.shape
        panels = w.shape[0]
        o_stride = out.shape[1]
        base = n // groups
        extra = n - base * groups
        if strips:
            # each strip is one sequential stream of 16 floats an input; every group works a chunk
            # of it while the chunk is in L1 (one group: the whole strip in one tile)
            pf = 2 if ahead > 0 else 0
            for s in prange(panels * (PANEL // LANES)):
                w_off = s * k_in * LANES
                o_col = s * LANES
                if groups == 1:
                    at = (w_off, 0, k_in, 0, gs, 1, o_col, o_stride, w_off + ahead * LANES)
                    run_narrow(w, xg, out, at, n, pf)
                    continue
                for c in range(0, k_in, CHUNK):
                    for g in range(groups):
                        lo = g * base + min(g, extra)
                        at = (w_off, c, min(c + CHUNK, k_in), g * k_in * gs, gs, 1,
                              lo * o_stride + o_col, o_stride, w_off + (c + ahead) * LANES)
                        run_narrow(w, xg, out, at, base + (g < extra), (pf if g == 0 else 0) + (c > 0))
            return
        if groups == 1 and ahead >= 0:  # every position in registers for the whole of k
            flags = 8 if ahead > 0 else 0
            for t in prange(panels):
                at = (t * k_in * PANEL, 0, k_in, 0, gs, 1, t * PANEL, o_stride, (t * k_in + ahead) * PANEL)
                run_tile(w, xg, out, at, n, flags)
            return
        # per input, so that the groups cover the next chunk (one group: all 4 lines of an input)
        lines = 4 if groups == 1 else 2 if groups <= 3 else 1
        for t in prange(panels):  # chunks of k in L1, every group over each chunk
            for c in range(0, k_in, CHUNK):
                nxt = (t * k_in + c + CHUNK) * PANEL  # the next chunk's first line (maybe the next panel's)
                for g in range(groups):
                    lo = g * base + min(g, extra)
                    at = (t * k_in * PANEL, c, min(c + CHUNK, k_in), g * k_in * gs, gs, 1,
                          lo * o_stride + t * PANEL, o_stride, nxt + g * CHUNK * lines * LANES)
                    run_tile(w, xg, out, at, base + (g < extra), 2 * lines + (c > 0))

    @njit(parallel=True, fastmath=True, error_model="numpy", cache=True)
    def read_weights(data, zeros, sums):
        # every weight read once, as a one-position tile reads it (times zero), nothing stored
        # but one row of sums: a pure sum loop (P = 0) measured 3-8% slower here
        panels, k_in, _ = data.shape
        for t in prange(panels):
            tile((data, zeros, sums), (t * k_in * PANEL, 0, k_in, 0, 1, 1, t * PANEL, 0, 0), 1, 0)


def multiply(xg, w, n, out, ahead, strips):
    """``out[:n] = x @ w.T`` in compiled code for either kind of packed weight: float32 (float16,
    int8) panels by :func:`products`, Q4_1 blocks by :func:`products_int` or :func:`products_q`,
    chosen by ``w``'s type as the caller compiles. ``ahead = (inputs ahead for float panels,
    blocks ahead for blocks, 4 where one group of blocks goes through scratch panels else 0, the
    integer tile's instruction set or -1 for the float tiles, its group size, the bytes ahead it
    prefetches)``
    (:func:`.tuning.prefetch_ahead`, :func:`.tuning.blocks_plan`). Callable only from compiled
    code (``lm.fused``)."""
    raise NotImplementedError("kernel.drive.multiply runs in compiled code only")


if HAVE_NUMBA:
    @overload(multiply)
    def _multiply(xg, w, n, out, ahead, strips):
        if isinstance(w, types.Array) and w.dtype == types.uint8:
            def blocks(xg, w, n, out, ahead, strips):
                if ahead[3] >= 0:
                    products_int(xg, w, n, out, 1 if strips else 0, (ahead[3], ahead[4], ahead[5]))
                else:
                    products_q(xg, w, n, out, ahead[1], (1 if strips else 0) + ahead[2])
            return blocks

        def panels(xg, w, n, out, ahead, strips):
            products(xg, w, n, out, ahead[0], strips)
        return panels
