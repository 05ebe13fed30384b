"""The integer tile as LLVM IR: 16 rows of a weight in GGUF blocks times a few positions of 8-bit
activations, by the CPU's integer dot-product instructions.

A pass over several positions multiplies every weight by every position. The float tiles
(:mod:`.codegen_blocks`) widen each 4-bit code to float32 and spend one fused multiply-add per
weight and position. Here the activations of a pass are quantised once to 8 bits per block of 32
inputs (:mod:`.activations`: a float32 scale ``s`` per block, codes ``a`` in [-127, 127] and their
sum), and each block's sum over its 32 inputs is taken in integers:

* Q4_1, weight ``d q + m``: ``sum (d q + m) x ~ d s (sum q a) + m s (sum a)``;
* Q8_0, weight ``d q``: ``sum d q x ~ d s (sum q a)``.

The integer sums are exact (at most 32 x 127 x 128 in magnitude); only the 8-bit activations
round. A quad of the blocks' layout (:mod:`.blocks`) is one vector of 16 32-bit lanes, lane ``i``
row ``i``'s 4 codes, and one instruction multiplies it by a position's 4 activation codes
(broadcast to every lane) and adds the 4 products into each lane:

* ``vpdpbusd`` (AVX-512 VNNI, :data:`ISA` ``"vnni"``): unsigned by signed bytes into 32-bit
  lanes. Q4_1's codes are unsigned; Q8_0's signed codes are offset by 128 (``q xor 0x80``) and
  the block's sum starts at ``-128 sum a`` to take it back.
* ``vpmaddubsw`` then ``vpmaddwd`` by ones (AVX2, ``"avx2"``): unsigned by signed bytes into
  16-bit pairs, then pairs of pairs into 32-bit lanes. A pair of Q4_1 products is at most
  2 x 15 x 127, well inside 16 bits; Q8_0 multiplies ``|q|`` by ``a`` with ``q``'s sign
  (``vpsignb``), at most 2 x 128 x 127 = 32512, inside too (offsetting by 128 would overflow).

Each block then meets its float32 scales once per row and position: ``acc += float(sum) * (d s)``
and, for Q4_1, ``acc += m (s sum a)``. The accumulators of ``P`` positions (one integer vector for
the block, one float32 vector for the row) stay in registers for the whole unit.

:func:`tile_int` holds every position count from 1 to :data:`GROUP` and every instruction set in
one switch on the run-time ``code``; an instruction set this CPU lacks compiles to no code at all
(:func:`.tuning.blocks_plan` never picks it), so the code never holds an instruction the CPU cannot
run. The numpy reference of the same arithmetic is :func:`.reference.matmul_t_int_numpy`.
"""

from __future__ import annotations

from .backend import HAVE_NUMBA
from .blocks import BLOCK, QUAD
from .shapes import LANES
from .tuning import INT_GROUP_MAX as GROUP, ISA, supported

if HAVE_NUMBA:
    from llvmlite import ir
    from numba import types
    from numba.core import cgutils
    from numba.extending import intrinsic

    from .irtypes import I8 as _I8, I32 as _I32, IVEC as _IVEC, SIZES as _SIZES, VEC as _VEC
    from .irtypes import c64 as _c64, c_array as _c_array, half_vector, i64 as _i64, prefetch_l2, splat

    _I16 = ir.IntType(16)
    _BYTES = ir.VectorType(_I8, QUAD * LANES)
    _HALF_BYTES = ir.VectorType(_I8, 2 * LANES)

    @intrinsic
    def tile_int(typingctx, arrays, at, code, KIND, ISA_):
        """``out[p, r] = sum_k w[r, k] * x[k, p]`` for 16 rows of a weight in blocks and the
        positions ``p0 .. p0 + P - 1`` of 8-bit activations, where ``arrays = (w, xq, sx, mx, xs,
        out)``: ``w`` the uint8 blocks (:class:`.blocks.QPacked` data), ``xq`` int8 ``(n, in)``
        activation codes, ``sx``, ``mx`` float32 and ``xs`` int32 ``(n, blocks)`` each block's
        scale ``s``, ``s * sum a`` and ``sum a`` (:mod:`.activations`), ``out`` float32, all
        flat-indexed from their data pointers; ``at`` is the tuple of 8 ints ``(w_off, v, width,
        nb, p0, o_off, o_stride, ahead)``:

        * the unit (``width`` rows: 64 or 16) has ``nb`` superblocks from byte ``w_off``; its rows
          ``16 v .. 16 v + 15`` are multiplied, over all ``nb`` blocks;
        * position ``p``'s rows go to ``out[o_off + p * o_stride ...]``;
        * ``ahead > 0``: while a block is worked, the superblock's bytes ``ahead`` bytes on are
          prefetched into L2 (the weights' stream keeps coming while the tile computes).

        ``code = P`` (run time, 1 to :data:`GROUP`). ``KIND`` (literal): 0 Q4_1, 1 Q8_0; ``ISA_``
        (literal): the index of the instruction set in :data:`ISA` (one this CPU lacks compiles
        to nothing).
        """
        if not (isinstance(KIND, types.IntegerLiteral) and isinstance(ISA_, types.IntegerLiteral)
                and isinstance(code, types.Integer)):
            return None
        dtypes = (types.uint8, types.int8, types.float32, types.float32, types.int32, types.float32)
        if not (isinstance(arrays, types.BaseTuple) and len(arrays) == len(dtypes)
                and all(_c_array(a, t) for a, t in zip(arrays.types, dtypes))):
            return None
        if not (isinstance(at, types.BaseTuple) and len(at) == 8
                and all(isinstance(t, types.Integer) for t in at.types)):
            return None
        isa = ISA[ISA_.literal_value]
        kind = KIND.literal_value

        def codegen(context, builder, signature, args):
            if not supported(isa):
                return context.get_dummy_value()
            ptrs = [context.make_array(t)(context, builder, builder.extract_value(args[0], i)).data
                    for i, t in enumerate(signature.args[0].types)]
            offsets = [_i64(builder, builder.extract_value(args[1], i)) for i in range(8)]
            _emit_switch(builder, (ptrs, offsets), _i64(builder, args[2]), (kind, isa))
            return context.get_dummy_value()

        return types.void(arrays, at, code, KIND, ISA_), codegen

    def _emit_switch(builder, where, code, shape):
        """One case per position count: the run-time ``code`` picks it."""
        done = builder.append_basic_block("int.done")
        switch = builder.switch(code, done)
        for npos in range(1, GROUP + 1):
            case = builder.append_basic_block(f"int.p{npos}")
            switch.add_case(_c64(npos), case)
            builder.position_at_end(case)
            _emit_int_tile(builder, where, npos, shape)
            builder.branch(done)
        builder.position_at_end(done)

    def _emit_int_tile(builder, where, npos, shape):
        """The IR of one case of :func:`tile_int`: per block, integer sums in registers, then the
        scales into float32 sums; the stores at the end."""
        (wp, xqp, sxp, mxp, xsp, op), (w_off, v, width, nb, p0, o_off, o_stride, ahead) = where
        kind, isa = shape
        size, head, body = _SIZES[kind]
        quads = body // QUAD
        sb = builder.mul(width, _c64(size))
        xq32 = builder.bitcast(xqp, ir.PointerType(_I32))
        words = builder.mul(nb, _c64(BLOCK // QUAD))  # int32 words of one position's codes
        fma = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(_VEC, [_VEC, _VEC, _VEC]), "llvm.fmuladd.v16f32")
        pos = [builder.add(p0, _c64(p)) for p in range(npos)]
        facc = [cgutils.alloca_once_value(builder, ir.Constant(_VEC, [0.0] * LANES)) for _ in range(npos)]
        iacc = [cgutils.alloca_once(builder, _IVEC) for _ in range(npos)]
        row16 = builder.mul(v, _c64(LANES))
        with cgutils.for_range_slice(builder, _c64(0), nb, _c64(1), inc=True) as (b, _):
            blk = builder.add(w_off, builder.mul(b, sb))
            with builder.if_then(builder.icmp_signed(">", ahead, _c64(0)), likely=True):
                prefetch_l2(builder, wp, builder.add(blk, ahead), -(-size * LANES // 64))
            d = half_vector(builder, wp, builder.add(blk, builder.mul(row16, _c64(2))))
            m = (half_vector(builder, wp, builder.add(blk, builder.add(builder.mul(width, _c64(2)),
                                                                            builder.mul(row16, _c64(2)))))
                 if kind == 0 else None)
            cell = [builder.add(builder.mul(q, nb), b) for q in pos]  # (position, block) in sx, mx, xs
            for p in range(npos):
                if kind == 1 and isa == "vnni":  # the codes offset by 128: start from -128 sum a
                    xs = builder.load(builder.gep(xsp, [cell[p]]))
                    first = splat(builder, builder.mul(xs, ir.Constant(_I32, -128)), _IVEC)
                else:
                    first = ir.Constant(_IVEC, [0] * LANES)
                builder.store(first, iacc[p])
            codes0 = builder.add(blk, builder.add(builder.mul(width, _c64(head)), builder.mul(row16, _c64(QUAD))))
            for t in range(quads):  # unrolled: 4 quads (Q4_1) or 8 (Q8_0) a block
                at = builder.add(codes0, builder.mul(width, _c64(QUAD * t)))
                lanes = builder.load(builder.bitcast(builder.gep(wp, [at]), ir.PointerType(_IVEC)), align=1)
                if kind == 0:  # inputs 4t.. in the low nibbles, 4t + 16.. in the high ones
                    mask = ir.Constant(_IVEC, [0x0F0F0F0F] * LANES)
                    parts = [(builder.and_(lanes, mask), t),
                             (builder.and_(builder.lshr(lanes, ir.Constant(_IVEC, [4] * LANES)), mask), t + 4)]
                else:
                    parts = [(lanes, t)]
                for wlanes, word in parts:
                    weights = _prepare_weights(builder, wlanes, kind, isa)
                    for p in range(npos):
                        xw = builder.load(builder.gep(xq32, [builder.add(builder.mul(pos[p], words),
                                                                         builder.add(builder.mul(b, _c64(BLOCK // QUAD)),
                                                                                     _c64(word)))]))
                        acts = splat(builder, xw, _IVEC)
                        builder.store(_emit_dot(builder, builder.load(iacc[p]), weights, acts, (kind, isa)), iacc[p])
            for p in range(npos):
                sx = splat(builder, builder.load(builder.gep(sxp, [cell[p]])), _VEC)
                total = builder.sitofp(builder.load(iacc[p]), _VEC)
                acc = builder.call(fma, [total, builder.fmul(d, sx), builder.load(facc[p])])
                if m is not None:
                    acc = builder.call(fma, [m, splat(builder, builder.load(builder.gep(mxp, [cell[p]])), _VEC), acc])
                builder.store(acc, facc[p])
        for p in range(npos):
            at = builder.add(o_off, builder.add(builder.mul(o_stride, pos[p]), row16))
            builder.store(builder.load(facc[p]), builder.bitcast(builder.gep(op, [at]), ir.PointerType(_VEC)), align=4)

    def _halves(builder, v):
        """A 64-byte vector as its two 32-byte halves (rows 0-7, rows 8-15)."""
        undef = ir.Constant(_BYTES, ir.Undefined)
        return [builder.shuffle_vector(v, undef, ir.Constant(ir.VectorType(_I32, 2 * LANES),
                                                             list(range(h * 32, h * 32 + 32))))
                for h in (0, 1)]

    def _prepare_weights(builder, lanes, kind, isa):
        """What the dot products of every position share, from a quad's 16 lanes: the bytes as the
        instruction set multiplies them (see the module docstring)."""
        raw = builder.bitcast(lanes, _BYTES)
        if kind == 1 and isa == "vnni":
            return builder.xor(raw, ir.Constant(_BYTES, [-128] * (QUAD * LANES)))
        if kind == 1 and isa == "avx2":
            absf = cgutils.get_or_insert_function(
                builder.module, ir.FunctionType(_HALF_BYTES, [_HALF_BYTES, ir.IntType(1)]), "llvm.abs.v32i8")
            halves = _halves(builder, raw)
            return halves, [builder.call(absf, [h, ir.Constant(ir.IntType(1), 0)]) for h in halves]
        if isa == "avx2":
            return _halves(builder, raw)
        return raw

    def _emit_dot(builder, acc, weights, acts, shape):
        """``acc`` plus, in each lane, the 4 products of the weights' bytes and the activation
        codes ``acts`` (16 lanes holding one position's 4 codes), by the instruction set's way."""
        kind, isa = shape
        mod = builder.module
        a_bytes = builder.bitcast(acts, _BYTES)
        if isa == "vnni":
            f = cgutils.get_or_insert_function(mod, ir.FunctionType(_IVEC, [_IVEC] * 3), "llvm.x86.avx512.vpdpbusd.512")
            return builder.call(f, [acc, builder.bitcast(weights, _IVEC), acts])
        if isa == "avx2":  # noqa: RET503 (the two instruction sets; nothing else is compiled)
            v16 = ir.VectorType(_I16, LANES)
            v8 = ir.VectorType(_I32, LANES // 2)
            maddubs = cgutils.get_or_insert_function(
                mod, ir.FunctionType(v16, [_HALF_BYTES, _HALF_BYTES]), "llvm.x86.avx2.pmadd.ub.sw")
            maddwd = cgutils.get_or_insert_function(mod, ir.FunctionType(v8, [v16, v16]), "llvm.x86.avx2.pmadd.wd")
            ones = ir.Constant(v16, [1] * LANES)
            xs = _halves(builder, a_bytes)
            if kind == 1:  # |q| times a with q's sign
                sign = cgutils.get_or_insert_function(
                    mod, ir.FunctionType(_HALF_BYTES, [_HALF_BYTES, _HALF_BYTES]), "llvm.x86.avx2.psign.b")
                signed, absolute = weights
                pairs = [builder.call(maddubs, [absolute[h], builder.call(sign, [xs[h], signed[h]])]) for h in (0, 1)]
            else:
                pairs = [builder.call(maddubs, [weights[h], xs[h]]) for h in (0, 1)]
            sums = [builder.call(maddwd, [pr, ones]) for pr in pairs]
            joined = builder.shuffle_vector(sums[0], sums[1], ir.Constant(ir.VectorType(_I32, LANES), list(range(LANES))))
            return builder.add(acc, joined)
        raise AssertionError(f"no integer dot product for {isa!r}")
