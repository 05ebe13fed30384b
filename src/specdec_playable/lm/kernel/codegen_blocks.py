"""The block tiles as LLVM IR: a unit of weights in GGUF blocks (:mod:`.blocks`) times a few positions.

:func:`tile_blocks` multiplies one unit (a panel of 64 rows, four vectors an input, or a strip of
16, one vector) by up to :data:`.shapes.MAX_GROUP` positions, like the float32 tile
(:mod:`.codegen`), with its accumulators in registers; what differs is how it gets each input's
weights. For each block of 32 inputs it loads the unit's scales ``d`` (and Q4_1's minimums ``m``)
as float16 vectors widened to float32; then for each step it loads 16 bytes of codes per vector of
rows and turns them into float32 weights in registers, exactly as the file defines them:

* Q4_1: the 16 bytes widen to 16 integers; ``& 15`` gives input ``j``'s codes, ``>> 4`` input
  ``j + 16``'s; each becomes ``d * q + m`` (one fused multiply-add, so one rounding where numpy's
  ``d * q + m`` has two). A step covers two inputs.
* Q8_0: the 16 bytes widen as signed integers to ``d * q``. A step covers one input.

Each weight vector then meets the ``P`` broadcast activations, float32 and not quantised, in ``P``
fused multiply-adds: the float32 path's arithmetic, up to the order of the sums and the rounding of
the weights. One compiled tile holds every position count and flag combination (a switch on the
run-time code ``4 P + flags``), one per format and width.

Passes over more positions than one tile holds run in groups; :func:`unpack_blocks` then widens a
chunk of a unit's blocks once into a float32 scratch panel in L1, which every group multiplies
with the float32 tile (:mod:`.codegen`), so the codes are unpacked once per pass, not once per
group.
"""

from __future__ import annotations

from .backend import HAVE_NUMBA
from .blocks import BLOCK, QUAD
from .shapes import LANES, MAX_GROUP, PANEL

if HAVE_NUMBA:
    from llvmlite import ir
    from numba import types
    from numba.core import cgutils
    from numba.extending import intrinsic

    from .irtypes import IVEC as _IVEC, SIZES as _SIZES, VEC as _VEC
    from .irtypes import c64 as _c64, c_array as _c_array, half_vector, i64 as _i64, prefetch_l2, splat

    @intrinsic
    def tile_blocks(typingctx, arrays, at, code, KIND, NARROW):
        """``out[p, r] (+)= sum_k w[r, k] * x[k, p]`` for one unit of a weight in blocks, where
        ``arrays = (w, x, out)``: ``w`` the uint8 blocks (:class:`.blocks.QPacked` data), ``x``
        and ``out`` float32, all flat-indexed from their data pointers; ``at`` is the tuple of 9
        ints ``(w_off, b_lo, b_hi, x_off, x_stride, x_pstride, o_off, o_stride, pf_off)``:

        * the unit's superblocks start at byte ``w_off``; blocks ``b_lo <= b < b_hi`` are summed
          (inputs ``32 b .. 32 b + 31``);
        * position ``p``'s input ``k`` is ``x[x_off + k * x_stride + p * x_pstride]``;
        * the unit's rows of position ``p`` go to ``out[o_off + p * o_stride ...]``.

        ``code = 4 P + flags`` (run time): ``P`` positions (1 to :data:`.shapes.MAX_GROUP`); flag
        bit 0 would add to ``out`` instead of overwriting it (no case is compiled with it: a code
        with it does nothing), bit 1 prefetches into L2, while block
        ``b`` is worked, the bytes at ``pf_off + (b - b_lo) * superblock`` on. ``KIND`` (literal):
        0 Q4_1, 1 Q8_0; ``NARROW`` (literal): 1 for a strip of 16 rows, 0 for a panel of 64.
        """
        if not (isinstance(KIND, types.IntegerLiteral) and isinstance(NARROW, types.IntegerLiteral)
                and isinstance(code, types.Integer)):
            return None
        if not (isinstance(arrays, types.BaseTuple) and len(arrays) == 3
                and _c_array(arrays.types[0], types.uint8)
                and all(_c_array(a, types.float32) for a in arrays.types[1:])):
            return None
        if not (isinstance(at, types.BaseTuple) and len(at) == 9
                and all(isinstance(t, types.Integer) for t in at.types)):
            return None
        shape = (KIND.literal_value, 1 if NARROW.literal_value else PANEL // LANES)

        def codegen(context, builder, signature, args):
            ptrs = [context.make_array(t)(context, builder, builder.extract_value(args[0], i)).data
                    for i, t in enumerate(signature.args[0].types)]
            offsets = [_i64(builder, builder.extract_value(args[1], i)) for i in range(9)]
            _emit_switch(builder, (ptrs, offsets), _i64(builder, args[2]), shape)
            return context.get_dummy_value()

        return types.void(arrays, at, code, KIND, NARROW), codegen

    def _emit_switch(builder, where, code, shape):
        """One case per position count and prefetch flag: the run-time ``code`` picks it. (Adding
        to ``out``, flag bit 0, is compiled for no case: nothing needs it, since several groups go
        through scratch panels, and each case is machine code every model process holds.)"""
        done = builder.append_basic_block("blocks.done")
        switch = builder.switch(code, done)
        for npos in range(1, MAX_GROUP + 1):
            for flags in (0, 2):
                case = builder.append_basic_block(f"blocks.p{npos}.f{flags}")
                switch.add_case(_c64(4 * npos + flags), case)
                builder.position_at_end(case)
                _emit_block_tile(builder, where, (npos, flags), shape)
                builder.branch(done)
        builder.position_at_end(done)

    def _emit_block_tile(builder, where, run, shape):
        """The IR of one case of :func:`tile_blocks`: accumulators, blocks, steps, stores."""
        (wp, xp, op), (w_off, b_lo, b_hi, x_off, x_stride, x_pstride, o_off, o_stride, pf_off) = where
        npos, flags = run
        kind, nv = shape
        size, head, body = _SIZES[kind]
        width = LANES * nv
        sb = size * width
        steps = BLOCK // 2 if kind == 0 else BLOCK
        fma = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(_VEC, [_VEC, _VEC, _VEC]), "llvm.fmuladd.v16f32")

        def out_ptr(v, p):
            at = builder.add(o_off, builder.add(builder.mul(o_stride, _c64(p)), _c64(LANES * v)))
            return builder.bitcast(builder.gep(op, [at]), ir.PointerType(_VEC))

        acc = [[cgutils.alloca_once(builder, _VEC) for _ in range(npos)] for _ in range(nv)]
        for v in range(nv):
            for p in range(npos):
                first = builder.load(out_ptr(v, p), align=4) if flags & 1 else ir.Constant(_VEC, [0.0] * LANES)
                builder.store(first, acc[v][p])
        with cgutils.for_range_slice(builder, b_lo, b_hi, _c64(1), inc=True) as (b, _):
            blk = builder.add(w_off, builder.mul(b, _c64(sb)))
            scales = [_emit_scales(builder, wp, blk, (v, width), head) for v in range(nv)]
            ahead = builder.add(pf_off, builder.mul(builder.sub(b, b_lo), _c64(sb)))
            k0 = builder.mul(b, _c64(BLOCK))
            quads = steps // QUAD
            with cgutils.for_range_slice(builder, _c64(0), _c64(quads), _c64(1), inc=True) as (t, _):
                if flags & 2:
                    prefetch_l2(builder, wp, builder.add(ahead, builder.mul(t, _c64(sb // quads))),
                                   -(-(sb // quads) // 64))
                codes = builder.add(blk, builder.add(_c64(head * width), builder.mul(t, _c64(QUAD * width))))
                words = [_emit_quad(builder, wp, builder.add(codes, _c64(QUAD * LANES * v))) for v in range(nv)]
                for b in range(QUAD):
                    j = builder.add(builder.mul(t, _c64(QUAD)), _c64(b))
                    ks = [builder.add(k0, j)] + ([builder.add(k0, builder.add(j, _c64(steps)))] if kind == 0 else [])
                    xs = [[_emit_broadcast(builder, xp, builder.add(x_off, builder.add(
                        builder.mul(k, x_stride), builder.mul(x_pstride, _c64(p))))) for p in range(npos)]
                          for k in ks]
                    for v in range(nv):
                        ws = _emit_weights(builder, (words[v], b), scales[v], fma)
                        for w, xk in zip(ws, xs):
                            for p in range(npos):
                                builder.store(builder.call(fma, [w, xk[p], builder.load(acc[v][p])]), acc[v][p])
        for v in range(nv):
            for p in range(npos):
                builder.store(builder.load(acc[v][p]), out_ptr(v, p), align=4)

    @intrinsic
    def unpack_blocks(typingctx, arrays, at, FLAGS, KIND, NARROW):
        """``scratch[(32 (b - b_lo) + k) * width + r]`` = the float32 weight of the unit's row
        ``r``, input ``32 b + k``, for blocks ``b_lo <= b < b_hi`` of the unit whose superblocks
        start at byte ``w_off``: ``arrays = (w, scratch)``, ``at = (w_off, b_lo, b_hi, pf_off)``.
        The scratch is then the float32 panel (strip) layout of those inputs. ``FLAGS`` (literal):
        bit 1 prefetches into L2 the bytes at ``pf_off + (b - b_lo) * superblock`` on while block
        ``b`` is unpacked; ``KIND`` and ``NARROW`` as for :func:`tile_blocks`."""
        if not all(isinstance(a, types.IntegerLiteral) for a in (FLAGS, KIND, NARROW)):
            return None
        if not (isinstance(arrays, types.BaseTuple) and len(arrays) == 2
                and _c_array(arrays.types[0], types.uint8) and _c_array(arrays.types[1], types.float32)):
            return None
        if not (isinstance(at, types.BaseTuple) and len(at) == 4
                and all(isinstance(t, types.Integer) for t in at.types)):
            return None
        shape = (KIND.literal_value, 1 if NARROW.literal_value else PANEL // LANES)
        flags = FLAGS.literal_value

        def codegen(context, builder, signature, args):
            ptrs = [context.make_array(t)(context, builder, builder.extract_value(args[0], i)).data
                    for i, t in enumerate(signature.args[0].types)]
            offsets = [_i64(builder, builder.extract_value(args[1], i)) for i in range(4)]
            _emit_unpack(builder, (ptrs, offsets), flags, shape)
            return context.get_dummy_value()

        return types.void(arrays, at, FLAGS, KIND, NARROW), codegen

    def _emit_unpack(builder, where, flags, shape):
        """The IR of :func:`unpack_blocks`."""
        (wp, sp), (w_off, b_lo, b_hi, pf_off) = where
        kind, nv = shape
        size, head, _ = _SIZES[kind]
        width = LANES * nv
        sb = size * width
        steps = BLOCK // 2 if kind == 0 else BLOCK
        fma = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(_VEC, [_VEC, _VEC, _VEC]), "llvm.fmuladd.v16f32")
        with cgutils.for_range_slice(builder, b_lo, b_hi, _c64(1), inc=True) as (b, _):
            blk = builder.add(w_off, builder.mul(b, _c64(sb)))
            scales = [_emit_scales(builder, wp, blk, (v, width), head) for v in range(nv)]
            ahead = builder.add(pf_off, builder.mul(builder.sub(b, b_lo), _c64(sb)))
            row0 = builder.mul(builder.sub(b, b_lo), _c64(BLOCK * width))
            quads = steps // QUAD
            with cgutils.for_range_slice(builder, _c64(0), _c64(quads), _c64(1), inc=True) as (t, _):
                if flags & 2:
                    prefetch_l2(builder, wp, builder.add(ahead, builder.mul(t, _c64(sb // quads))),
                                   -(-(sb // quads) // 64))
                codes = builder.add(blk, builder.add(_c64(head * width), builder.mul(t, _c64(QUAD * width))))
                for v in range(nv):
                    word = _emit_quad(builder, wp, builder.add(codes, _c64(QUAD * LANES * v)))
                    for b in range(QUAD):
                        ws = _emit_weights(builder, (word, b), scales[v], fma)
                        for i, w in enumerate(ws):
                            k = builder.add(builder.add(builder.mul(t, _c64(QUAD)), _c64(b)), _c64(i * steps))
                            at = builder.add(row0, builder.add(builder.mul(k, _c64(width)), _c64(LANES * v)))
                            builder.store(w, builder.bitcast(builder.gep(sp, [at]), ir.PointerType(_VEC)), align=4)

    def _emit_scales(builder, wp, blk, vw, head):
        """Vector ``v``'s scales (and Q4_1's minimums) of the superblock at byte ``blk``, float32:
        ``(d, m)``, ``m`` None for Q8_0."""
        v, width = vw

        def field(f):
            return half_vector(builder, wp, builder.add(blk, _c64(2 * width * f + 2 * LANES * v)))

        return field(0), (field(1) if head == 4 else None)

    def _emit_quad(builder, wp, at):
        """The 64 code bytes at byte ``at`` as 16 32-bit lanes: lane ``i`` holds row ``i``'s 4 bytes
        of a quad (:mod:`.blocks`)."""
        return builder.load(builder.bitcast(builder.gep(wp, [at]), ir.PointerType(_IVEC)), align=1)

    def _emit_weights(builder, word, scale, fma):
        """The float32 weights of 16 rows from byte ``b`` of each lane of a quad, ``word = (lanes,
        b)``: Q4_1 two vectors (the low nibbles, then the high ones), Q8_0 one."""
        (lanes, b), (d, m) = word, scale
        if m is None:  # byte b to the top, then an arithmetic shift: the signed code
            top = builder.shl(lanes, ir.Constant(_IVEC, [8 * (QUAD - 1 - b)] * LANES))
            q = builder.ashr(top, ir.Constant(_IVEC, [8 * (QUAD - 1)] * LANES))
            return [builder.fmul(d, builder.sitofp(q, _VEC))]
        nibble = ir.Constant(_IVEC, [15] * LANES)
        lo = builder.and_(builder.lshr(lanes, ir.Constant(_IVEC, [8 * b] * LANES)), nibble)
        hi = builder.and_(builder.lshr(lanes, ir.Constant(_IVEC, [8 * b + 4] * LANES)), nibble)
        return [builder.call(fma, [d, builder.sitofp(n, _VEC), m]) for n in (lo, hi)]

    def _emit_broadcast(builder, xp, at):
        """``x[at]`` in every lane of a vector."""
        return splat(builder, builder.load(builder.gep(xp, [at])), _VEC)
