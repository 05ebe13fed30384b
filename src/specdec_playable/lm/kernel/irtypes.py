"""The LLVM IR types and small helpers the block tiles share (:mod:`.codegen_blocks`,
:mod:`.codegen_int`): float32 and integer scalars, 16-lane vectors of both, 64-bit constants and
offsets, and the check that an argument is a C-contiguous array of a given type."""

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
