"""The LLVM IR types and small helpers the block tiles share (:mod:`.codegen_blocks`,
:mod:`.codegen_int`): float32 and integer scalars, 16-lane vectors of both, 64-bit constants and
offsets, the check that an argument is a C-contiguous array of a given type, and three emitters
(a value in every lane, 16 float16 scales widened, a prefetch into L2)."""

from __future__ import annotations

from .backend import HAVE_NUMBA
from .blocks import FORMATS
from .shapes import LANES

#: The block formats in the order of their compiled numbers (:data:`.blocks.KIND`): (bytes of a
#: block, of its header, code bytes per row).
SIZES = (FORMATS["q4_1"], FORMATS["q8_0"])

if HAVE_NUMBA:
    from llvmlite import ir
    from numba import types
    from numba.core import cgutils

    F32 = ir.FloatType()
    I8 = ir.IntType(8)
    I32 = ir.IntType(32)
    I64 = ir.IntType(64)
    VEC = ir.VectorType(F32, LANES)
    IVEC = ir.VectorType(I32, LANES)

    def i64(builder, v):
        """``v`` as a 64-bit integer (sign-extended where it is narrower)."""
        return v if v.type == I64 else builder.sext(v, I64)

    def c64(v: int):
        """The 64-bit integer constant ``v``."""
        return ir.Constant(I64, v)

    def c_array(a, dtype) -> bool:
        """Whether the numba type ``a`` is a C-contiguous array of ``dtype``."""
        return isinstance(a, types.Array) and a.dtype == dtype and a.layout == "C"

    def splat(builder, value, vec):
        """``value`` in every lane of a vector of type ``vec`` (16 lanes)."""
        undef = ir.Constant(vec, ir.Undefined)
        return builder.shuffle_vector(builder.insert_element(undef, value, ir.Constant(I32, 0)), undef,
                                      ir.Constant(ir.VectorType(I32, LANES), [0] * LANES))

    def half_vector(builder, wp, at):
        """The 16 float16 values at byte ``at`` of the bytes ``wp``, widened to float32."""
        hvec = ir.PointerType(ir.VectorType(ir.HalfType(), LANES))
        return builder.fpext(builder.load(builder.bitcast(builder.gep(wp, [at]), hvec), align=2), VEC)

    def prefetch_l2(builder, wp, at, lines):
        """Ask for ``lines`` cache lines of the bytes ``wp`` from byte ``at`` on, into L2 (a hint:
        it never faults)."""
        prefetch = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.VoidType(), [ir.PointerType(I8), I32, I32, I32]),
            "llvm.prefetch.p0i8")
        for i in range(lines):
            builder.call(prefetch, [builder.gep(wp, [builder.add(at, c64(64 * i))]), ir.Constant(I32, 0),
                                    ir.Constant(I32, 2), ir.Constant(I32, 1)])
