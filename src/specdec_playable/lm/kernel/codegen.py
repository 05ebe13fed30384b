"""The tiles as LLVM IR: one register tile of weights times a few positions, generated per shape.

:func:`tile` is a numba intrinsic that emits one specialisation per tile shape (positions ``P``,
flags), so the compiler has nothing to get wrong: for each input ``k`` it loads the panel's four
vectors (one, narrow), broadcasts the ``P`` inputs ``x[p, k]`` and does ``4 P`` fused
multiply-adds into ``4 P`` vector accumulators (at most 24 of the 32 registers), which stay in
registers for the whole loop: no horizontal sums, no stores until the end. :func:`run_tile` and
:func:`run_narrow` pick the literal specialisation for a shape given at run time. :func:`vexp` is
an ``exp`` that LLVM vectorises (used by :mod:`..fused`).
"""

from __future__ import annotations

import numpy as np

from .backend import HAVE_NUMBA
from .shapes import LANES, NARROW_FLAG, PANEL

if HAVE_NUMBA:
    from llvmlite import ir
    from numba import njit, types
    from numba.core import cgutils
    from numba.extending import intrinsic

if HAVE_NUMBA:
    _F32 = ir.FloatType()
    _I32 = ir.IntType(32)
    _I64 = ir.IntType(64)
    _VEC = ir.VectorType(_F32, LANES)

    def _as_i64(builder, v):
        return v if v.type == _I64 else builder.sext(v, _I64)

    def _c64(v: int):
        return ir.Constant(_I64, v)

    def _is_f32_c(a) -> bool:
        return isinstance(a, types.Array) and a.dtype == types.float32 and a.layout == "C"

    def _is_weight_c(a) -> bool:
        """float32, uint16 holding float16 weights (a half-precision :class:`Packed`) or int8 (an
        eight-bit one)."""
        return _is_f32_c(a) or (isinstance(a, types.Array) and a.dtype in (types.uint16, types.int8)
                                and a.layout == "C")

    @intrinsic
    def tile(typingctx, arrays, at, P, FLAGS):
        """``out[p, r] (+)= sum_k w[k, r] * x[k, p]`` for the 64 rows of one panel and ``P``
        positions (a literal int), inputs ``k_lo <= k < k_hi``, where ``arrays = (w, x, out)`` and
        ``at`` is the tuple of 9 ints ``(w_off, k_lo, k_hi, x_off, x_stride, x_pstride, o_off,
        o_stride, pf_off)``; the arrays are flat-indexed from their data pointers:

        * ``w``: input ``k`` of the panel is the 64 floats at ``w_off + 64 k`` (narrow: 16 at
          ``w_off + 16 k``);
        * ``x``: position ``p``'s input ``k`` at ``x_off + k * x_stride + p * x_pstride``;
        * ``out``: the 64 rows of position ``p`` at ``o_off + p * o_stride``.

        ``FLAGS`` (a literal int): bit 0 set adds to ``out`` (a later chunk of inputs) instead of
        overwriting it; bits 1-4 (``(FLAGS >> 1) & 15``) are how many cache lines of ``w`` to
        prefetch per input, consecutive lines from ``w[pf_off]`` on (0: none); bit 5 set makes the
        tile *narrow*: one strip of the strips layout (:attr:`Packed.strips`): input ``k``'s 16
        weights at ``w_off + 16 k``, its 16 rows at ``o_off + p * o_stride``.

        The ``4 x P`` accumulators (``P`` narrow) are vector registers (allocas that LLVM
        promotes); each input is 4 vector loads (1 narrow), ``P`` broadcasts and ``4 P`` fused
        multiply-adds (``P`` narrow). ``P = 0`` only reads:
        it sums the panel's vectors into ``out[o_off .. o_off + 63]`` (the memory floor).
        """
        if not (isinstance(P, types.IntegerLiteral) and isinstance(FLAGS, types.IntegerLiteral)):
            return None
        if not (isinstance(arrays, types.BaseTuple) and len(arrays) == 3
                and _is_weight_c(arrays.types[0]) and all(_is_f32_c(a) for a in arrays.types[1:])):
            return None
        if not (isinstance(at, types.BaseTuple) and len(at) == 9
                and all(isinstance(t, types.Integer) for t in at.types)):
            return None
        npos, flags = P.literal_value, FLAGS.literal_value

        half = arrays.types[0].dtype == types.uint16

        def codegen(context, builder, signature, args):
            ptrs = [context.make_array(t)(context, builder, builder.extract_value(args[0], i)).data
                    for i, t in enumerate(signature.args[0].types)]
            if half:  # the uint16 storage read as float16
                ptrs[0] = builder.bitcast(ptrs[0], ir.PointerType(ir.HalfType()))
            offsets = [_as_i64(builder, builder.extract_value(args[1], i)) for i in range(9)]
            _emit_tile(builder, ptrs, offsets, npos, flags)
            return context.get_dummy_value()

        return types.void(arrays, at, P, FLAGS), codegen

    def _emit_tile(builder, ptrs, offsets, npos, flags):
        """The IR of one :func:`tile` (see there): accumulators, the loop over inputs, the stores."""
        wp, xp, op = ptrs
        w_off, k_lo, k_hi, x_off, x_stride, x_pstride, o_off, o_stride, pf_off = offsets
        nv = 1 if flags & NARROW_FLAG else PANEL // LANES
        add, lines = flags & 1, (flags >> 1) & 15
        vptr = ir.PointerType(_VEC)
        fma = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(_VEC, [_VEC, _VEC, _VEC]), "llvm.fmuladd.v16f32")
        undef = ir.Constant(_VEC, ir.Undefined)
        splat = ir.Constant(ir.VectorType(_I32, LANES), [0] * LANES)

        def out_ptr(v, p):
            at = builder.add(o_off, builder.add(builder.mul(o_stride, _c64(p)), _c64(LANES * v)))
            return builder.bitcast(builder.gep(op, [at]), vptr)

        byte = wp.type.pointee == ir.IntType(8)
        # A narrow int8 tile of one or two positions has too few sums in flight: each input's
        # multiply-add waits for the one before it, slower than the bytes arrive. It keeps 4 // P
        # sets of sums over alternate inputs and adds them at the end (only there: every other
        # tile sums in the same order as before).
        split = max(1, 4 // npos) if byte and nv == 1 and npos >= 1 else 1
        acc = [[[cgutils.alloca_once(builder, _VEC) for _ in range(max(npos, 1))] for _ in range(nv)]
               for _ in range(split)]
        for u in range(split):
            for v in range(nv):
                for p in range(max(npos, 1)):
                    first = (builder.load(out_ptr(v, p), align=4) if add and u == 0
                             else ir.Constant(_VEC, [0.0] * LANES))
                    builder.store(first, acc[u][v][p])

        def body(k, a):
            row = builder.gep(wp, [builder.add(w_off, builder.mul(k, _c64(LANES * nv)))])
            wv = _emit_weights(builder, row, nv)
            if lines:
                first = builder.add(pf_off, builder.mul(builder.sub(k, k_lo), _c64(LANES * lines)))
                _emit_prefetch(builder, wp, first, lines)
            xrow = builder.add(x_off, builder.mul(k, x_stride))
            if npos == 0:
                for v in range(nv):
                    builder.store(builder.fadd(wv[v], builder.load(a[v][0])), a[v][0])
            for p in range(npos):
                s = builder.load(builder.gep(xp, [builder.add(xrow, builder.mul(x_pstride, _c64(p)))]))
                b = builder.shuffle_vector(builder.insert_element(undef, s, ir.Constant(_I32, 0)),
                                           undef, splat)
                for v in range(nv):
                    builder.store(builder.call(fma, [wv[v], b, builder.load(a[v][p])]), a[v][p])

        _emit_inputs(builder, body, (k_lo, k_hi), acc, npos)
        for v in range(nv):
            for p in range(max(npos, 1)):
                builder.store(builder.load(acc[0][v][p]), out_ptr(v, p), align=4)

    def _emit_weights(builder, row, nv):
        """Load an input's ``16 nv`` weights from ``row`` as ``nv`` float32 vectors: float32 as they
        are, float16 and int8 widened as they load (an int8 row's scale comes after the sums)."""
        kind = row.type.pointee
        if kind == ir.HalfType():
            vec, align, widen = ir.VectorType(ir.HalfType(), LANES), 2, builder.fpext
        elif kind == ir.IntType(8):
            vec, align, widen = ir.VectorType(ir.IntType(8), LANES), 1, builder.sitofp
        else:
            vec, align, widen = _VEC, 4, None
        out = []
        for v in range(nv):
            w = builder.load(builder.bitcast(builder.gep(row, [_c64(LANES * v)]), ir.PointerType(vec)),
                             align=align)
            out.append(widen(w, _VEC) if widen else w)
        return out

    def _emit_inputs(builder, body, k_range, acc, npos):
        """The loop over inputs ``k_lo <= k < k_hi``, ``body(k, sums)`` for each: with one set of
        sums in ``acc`` in order; with ``split`` sets, inputs in groups of ``split`` (the ``u``-th
        of each into set ``u``), the 0-``split - 1`` left over into set 0, then every set added
        into set 0."""
        k_lo, k_hi = k_range
        split = len(acc)
        if split == 1:
            with cgutils.for_range_slice(builder, k_lo, k_hi, _c64(1), inc=True) as (k, _):
                body(k, acc[0])
            return
        main = builder.add(k_lo, builder.mul(builder.udiv(builder.sub(k_hi, k_lo), _c64(split)),
                                             _c64(split)))
        with cgutils.for_range_slice(builder, k_lo, main, _c64(split), inc=True) as (k, _):
            for u in range(split):
                body(builder.add(k, _c64(u)), acc[u])
        with cgutils.for_range_slice(builder, main, k_hi, _c64(1), inc=True) as (k, _):
            body(k, acc[0])
        for u in range(1, split):
            for v in range(len(acc[0])):
                for p in range(npos):
                    builder.store(builder.fadd(builder.load(acc[0][v][p]), builder.load(acc[u][v][p])),
                                  acc[0][v][p])

    def _emit_prefetch(builder, wp, first, lines):
        """Ask for ``lines`` cache lines of ``w`` from float ``first`` on, into L2 (a hint: it never
        faults, wherever it points; into L1 it evicted the chunk the groups were still using)."""
        i8p = ir.PointerType(ir.IntType(8))
        prefetch = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.VoidType(), [i8p, _I32, _I32, _I32]), "llvm.prefetch.p0i8")
        for i in range(lines):
            line = builder.gep(wp, [builder.add(first, _c64(LANES * i))])
            # read, locality 2 (L2 and outward), data cache
            builder.call(prefetch, [builder.bitcast(line, i8p), ir.Constant(_I32, 0),
                                    ir.Constant(_I32, 2), ir.Constant(_I32, 1)])

    @njit(inline="always")
    def run_tile(w, x, out, at, p, flags):
        """One tile product, :func:`tile` ``((w, x, out), at, p, flags)`` with ``p`` positions
        (1-6) and ``flags`` (0: overwrite, no prefetch; 1: add, no prefetch; 8: overwrite, the
        whole input row prefetched from ``at[8]`` on; 9 (2-6 positions): add, the same; 2, 3, 4,
        5: the chunked forms of several groups :func:`products` uses) given at run time: the
        literal specialisations, chosen here."""
        if 2 <= flags <= 5:
            run_chunk(w, x, out, at, p, flags)
        elif flags == 0:  # one group: all of k, no prefetch
            if p == 1:
                tile((w, x, out), at, 1, 0)
            elif p == 2:
                tile((w, x, out), at, 2, 0)
            elif p == 3:
                tile((w, x, out), at, 3, 0)
            elif p == 4:
                tile((w, x, out), at, 4, 0)
            elif p == 5:
                tile((w, x, out), at, 5, 0)
            else:
                tile((w, x, out), at, 6, 0)
        elif flags == 1:  # a later chunk from L1 (a scratch panel): no prefetch
            if p == 1:
                tile((w, x, out), at, 1, 1)
            elif p == 2:
                tile((w, x, out), at, 2, 1)
            elif p == 3:
                tile((w, x, out), at, 3, 1)
            elif p == 4:
                tile((w, x, out), at, 4, 1)
            elif p == 5:
                tile((w, x, out), at, 5, 1)
            else:
                tile((w, x, out), at, 6, 1)
        elif flags == 8:  # one group: all of k, a whole input row (4 lines) prefetched per input
            if p == 1:
                tile((w, x, out), at, 1, 8)
            elif p == 2:
                tile((w, x, out), at, 2, 8)
            elif p == 3:
                tile((w, x, out), at, 3, 8)
            elif p == 4:
                tile((w, x, out), at, 4, 8)
            elif p == 5:
                tile((w, x, out), at, 5, 8)
            else:
                tile((w, x, out), at, 6, 8)
        elif flags == 9:  # one group, a later chunk, the next chunk's 4 lines prefetched per input
            if p == 2:
                tile((w, x, out), at, 2, 9)
            elif p == 3:
                tile((w, x, out), at, 3, 9)
            elif p == 4:
                tile((w, x, out), at, 4, 9)
            elif p == 5:
                tile((w, x, out), at, 5, 9)
            else:
                tile((w, x, out), at, 6, 9)

    @njit(inline="always")
    def run_chunk(w, x, out, at, p, flags):
        """:func:`run_tile`'s chunked forms of several groups (``flags`` 2-5: bit 0 adds, 1 or 2
        lines prefetched per input)."""
        if flags == 4:  # a first chunk, 2 lines prefetched per input
            if p == 3:
                tile((w, x, out), at, 3, 4)
            elif p == 4:
                tile((w, x, out), at, 4, 4)
            elif p == 5:
                tile((w, x, out), at, 5, 4)
            else:
                tile((w, x, out), at, 6, 4)
        elif flags == 5:  # a later chunk, 2 lines per input
            if p == 3:
                tile((w, x, out), at, 3, 5)
            elif p == 4:
                tile((w, x, out), at, 4, 5)
            elif p == 5:
                tile((w, x, out), at, 5, 5)
            else:
                tile((w, x, out), at, 6, 5)
        elif flags == 2:  # a first chunk, 1 line per input
            if p == 4:
                tile((w, x, out), at, 4, 2)
            elif p == 5:
                tile((w, x, out), at, 5, 2)
            else:
                tile((w, x, out), at, 6, 2)
        elif flags == 3:  # a later chunk, 1 line per input
            if p == 4:
                tile((w, x, out), at, 4, 3)
            elif p == 5:
                tile((w, x, out), at, 5, 3)
            else:
                tile((w, x, out), at, 6, 3)

    @njit(inline="always")
    def run_narrow(w, x, out, at, p, flags):
        """One narrow tile product (16 rows of a panel: :data:`NARROW_FLAG`), ``p`` positions
        (1-6) and ``flags`` 0-3 (bit 0: add to ``out``; bit 1: one line prefetched per input)
        given at run time."""
        if flags == 0:
            if p == 1:
                tile((w, x, out), at, 1, 32)
            elif p == 2:
                tile((w, x, out), at, 2, 32)
            elif p == 3:
                tile((w, x, out), at, 3, 32)
            elif p == 4:
                tile((w, x, out), at, 4, 32)
            elif p == 5:
                tile((w, x, out), at, 5, 32)
            else:
                tile((w, x, out), at, 6, 32)
        elif flags == 1:
            if p == 1:
                tile((w, x, out), at, 1, 33)
            elif p == 2:
                tile((w, x, out), at, 2, 33)
            elif p == 3:
                tile((w, x, out), at, 3, 33)
            elif p == 4:
                tile((w, x, out), at, 4, 33)
            elif p == 5:
                tile((w, x, out), at, 5, 33)
            else:
                tile((w, x, out), at, 6, 33)
        elif flags == 2:
            if p == 1:
                tile((w, x, out), at, 1, 34)
            elif p == 2:
                tile((w, x, out), at, 2, 34)
            elif p == 3:
                tile((w, x, out), at, 3, 34)
            elif p == 4:
                tile((w, x, out), at, 4, 34)
            elif p == 5:
                tile((w, x, out), at, 5, 34)
            else:
                tile((w, x, out), at, 6, 34)
        else:
            if p == 1:
                tile((w, x, out), at, 1, 35)
            elif p == 2:
                tile((w, x, out), at, 2, 35)
            elif p == 3:
                tile((w, x, out), at, 3, 35)
            elif p == 4:
                tile((w, x, out), at, 4, 35)
            elif p == 5:
                tile((w, x, out), at, 5, 35)
            else:
                tile((w, x, out), at, 6, 35)

    @intrinsic
    def _f32_from_bits(typingctx, bits):
        """The float32 whose bit pattern is the int32 ``bits``."""
        if not isinstance(bits, types.Integer):
            return None

        def codegen(context, builder, signature, args):
            return builder.bitcast(builder.trunc(args[0], _I32) if args[0].type != _I32 else args[0],
                                   _F32)

        return types.float32(bits), codegen

    @njit(inline="always", fastmath=True)
    def vexp(x):
        """``exp(x)`` in float32, written so that LLVM vectorises a loop of it (numba's ``math.exp``
        is a scalar library call): Cody-Waite range reduction and Cephes' degree-6 polynomial
        (error about 1 ulp); ``x`` is clamped to [-87, 88], so the result is finite and
        positive."""
        x = min(max(x, np.float32(-87.0)), np.float32(88.0))
        kf = np.floor(x * np.float32(1.44269504088896341) + np.float32(0.5))
        f = x - kf * np.float32(0.693359375) + kf * np.float32(2.12194440e-4)
        p = np.float32(1.9875691500e-4)
        p = p * f + np.float32(1.3981999507e-3)
        p = p * f + np.float32(8.3334519073e-3)
        p = p * f + np.float32(4.1665795894e-2)
        p = p * f + np.float32(1.6666665459e-1)
        p = p * f + np.float32(5.0000001201e-1)
        y = p * (f * f) + f + np.float32(1.0)
        return y * _f32_from_bits((np.int32(kf) + np.int32(127)) << np.int32(23))
