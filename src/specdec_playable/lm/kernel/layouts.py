"""The packed layouts the tiles stream: float32 (or float16, int8) panels and strips.

:func:`pack` stores a weight ``(out, in)`` once, at load, as *panels* of :data:`.shapes.PANEL` = 64
output rows: ``data[p, k, :]`` holds the 64 weights of rows ``64 p .. 64 p + 63`` for input ``k``
(256 bytes: four cache lines, four AVX-512 registers). A panel is one sequential stream, and so is
a whole matrix. The packed copy replaces the original (:class:`Packed` is what the model keeps);
``Packed[ids]`` gathers rows, which is how the tied embedding reads its tokens.

Strips, for CPUs without AVX-512 (:data:`.tuning.NARROW`): each panel's memory is its four 16-row
strips one after another, each strip one sequential stream of a cache line an input; the shape of
``Packed.data`` is the same, only the order of its floats differs.

The inputs are passed transposed and grouped (:func:`group_positions`), so the broadcasts of one
``k`` come from one cache line.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .shapes import LANES, MAX_GROUP, PANEL
from .tuning import NARROW

F32 = np.float32


@dataclass(frozen=True, eq=False)
class Packed:
    """A weight ``(rows, cols)`` stored as panels of :data:`PANEL` rows, for :func:`matmul_t`.

    ``data[p, k, j]`` is the weight of row ``PANEL * p + j`` and input ``k``; rows past ``rows``
    (the last panel's padding) are zero. ``data`` is C-contiguous and read-only: float32, or for a
    weight packed in half precision (``pack(w, half=True)``: half the bytes to stream) the float16
    bit patterns as uint16 (numba has no float16 arrays; the tile widens each vector to float32 as
    it loads it, so the sums are float32 either way), or for one packed in eight bits
    (``pack(w, int8=True)``: a quarter of the bytes) int8 with one float32 ``scale`` per row: the
    weight of row ``r`` is ``data[...] * scale[r]`` (the tile widens the int8 to float32 and sums;
    :func:`matmul_t` multiplies each output by its row's scale).

    Examples
    --------
    >>> w = np.arange(6, dtype=np.float32).reshape(2, 3)
    >>> pw = pack(w)
    >>> pw.shape, pw.data.shape
    ((2, 3), (1, 3, 64))
    >>> pw[[1]]
    array([[3., 4., 5.]], dtype=float32)
    """

    data: np.ndarray
    rows: int
    #: The strips layout (:data:`NARROW`): each panel's memory is its four 16-row strips one after
    #: another, ``data[p]`` read as ``(4, cols, 16)`` (``strip(p, s)[k, j]`` is the weight of row
    #: ``64 p + 16 s + j``, input ``k``); ``data`` keeps its ``(panels, cols, 64)`` shape, so
    #: index it through :meth:`blocks`, ``Packed[ids]`` or :meth:`unpack`, never directly.
    strips: bool = False
    #: For an int8 packing, each row's scale (float32, ``panels * PANEL`` long, the padding rows'
    #: zero); None otherwise.
    scale: np.ndarray | None = None

    @property
    def shape(self) -> tuple[int, int]:
        return self.rows, int(self.data.shape[1])

    @property
    def half(self) -> bool:
        """Whether the weights are stored in half precision (float16)."""
        return self.data.dtype == np.uint16

    @property
    def int8(self) -> bool:
        """Whether the weights are stored in eight bits (int8 and a scale per row)."""
        return self.data.dtype == np.int8

    @property
    def dtype(self) -> np.dtype:
        """The weights' storage: float32, float16 for a half-precision packing, int8 for an
        eight-bit one (whose rows are scaled: :attr:`scale`)."""
        return np.dtype(np.float16) if self.half else self.data.dtype

    def values(self) -> np.ndarray:
        """``data`` as stored (a view: float16 for a half-precision packing; int8, unscaled, for an
        eight-bit one)."""
        return self.data.view(np.float16) if self.half else self.data

    def blocks(self) -> np.ndarray:
        """The floats as ``(blocks, cols, width)`` (a view): rows ``width b .. width b + width - 1``
        of the weight, input by input; ``width`` is 16 in the strips layout, else 64."""
        p, k, lanes = self.data.shape
        v = self.values()
        return v.reshape(p * (PANEL // LANES), k, LANES) if self.strips else v

    @property
    def nbytes(self) -> int:
        return int(self.data.nbytes)

    def __getitem__(self, ids) -> np.ndarray:
        """Rows ``ids`` (an int, a sequence or array of ints, or a slice) as a new float32
        ``(len(ids), cols)`` array (an int gives one row, ``(cols,)``)."""
        if isinstance(ids, tuple):
            raise TypeError("Packed[...] takes row indices only (one weight row per index)")
        if isinstance(ids, slice):
            ids = np.arange(self.rows)[ids]
        idx = np.asarray(ids)
        if idx.dtype.kind not in "iu" and idx.size:
            raise TypeError(f"row indices must be integers; got {idx.dtype}")
        idx = idx.astype(np.int64)
        if idx.size and (idx.min() < -self.rows or idx.max() >= self.rows):
            raise IndexError(f"row index out of range for {self.rows} rows")
        idx = np.where(idx < 0, idx + self.rows, idx)
        b = self.blocks()
        width = b.shape[2]
        rows = b[idx // width, :, idx % width]  # a new array (fancy indexing)
        if self.int8:
            return rows.astype(F32) * self.scale[idx][..., None]
        return rows.astype(F32) if self.half else rows

    def unpack(self) -> np.ndarray:
        """The weight in its original ``(rows, cols)`` layout (a new float32 array)."""
        b = self.blocks()
        nb, k, width = b.shape
        v = b.transpose(0, 2, 1).reshape(nb * width, k)[:self.rows]
        if self.int8:
            return v.astype(F32) * self.scale[:self.rows, None]
        return np.ascontiguousarray(v, dtype=F32)


def quantize_rows(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``w`` (rows, cols) in eight bits: int8 ``q`` and float32 ``scale`` (rows,) with
    ``w ~ q * scale[:, None]``, each row scaled by its largest magnitude over 127 (symmetric,
    rounded to nearest; an all-zero row gets scale 0).

    Examples
    --------
    >>> q, s = quantize_rows(np.array([[1.0, -0.5, 0.25]], np.float32))
    >>> q, s
    (array([[ 127,  -64,   32]], dtype=int8), array([0.00787402], dtype=float32))
    """
    w = np.asarray(w, dtype=F32)
    if w.ndim != 2:
        raise ValueError(f"quantize_rows: need a (rows, cols) array; got shape {w.shape}")
    if not np.isfinite(w).all():
        raise ValueError("quantize_rows: the weight has a non-finite value")
    scale = (np.abs(w).max(axis=1) / F32(127.0)).astype(F32)
    safe = np.where(scale > 0, scale, F32(1.0))
    q = np.clip(np.rint(w / safe[:, None]), -127, 127).astype(np.int8)
    return q, scale


def pack(w: np.ndarray, out: np.ndarray | None = None, *, half: bool = False, int8: bool = False,
         strips: bool | None = None) -> Packed:
    """Pack a float32 weight ``(rows, cols)`` into panels of :data:`PANEL` rows (read-only).

    ``out``, if given, is the float32 C-contiguous ``(ceil(rows / PANEL), cols, PANEL)`` array to
    pack into (a slice of a larger array, so that several weights share one allocation).
    ``half``: store the weights rounded to float16 (a float16 array is taken as it is), half the
    bytes a product streams (``out`` is then not allowed).
    ``int8``: store them in eight bits with a scale per row (:func:`quantize_rows`; a float16 array
    is widened first), a quarter of the bytes (``out`` not allowed; not with ``half``).
    ``strips``: each panel as four strips of 16 rows (:attr:`Packed.strips`), for narrow tiles;
    ``None``: this CPU's choice, :data:`NARROW`.
    """
    w = np.asarray(w)
    if half and int8:
        raise ValueError("pack: half or int8, not both")
    if w.ndim != 2 or w.dtype not in ((F32, np.float16) if half or int8 else (F32,)):
        raise ValueError(f"pack: need a float32 (rows, cols) array; got {w.dtype} {w.shape}")
    m, k = w.shape
    if m == 0 or k == 0:
        raise ValueError(f"pack: empty weight {w.shape}")
    panels = -(-m // PANEL)
    scale = None
    if int8:
        if out is not None:
            raise ValueError("pack: out is for float32 packing only")
        w, row_scale = quantize_rows(w)
        scale = np.zeros(panels * PANEL, F32)
        scale[:m] = row_scale
        scale.setflags(write=False)
        out = np.empty((panels, k, PANEL), np.int8)
    elif half:
        if out is not None:
            raise ValueError("pack: out is for float32 packing only")
        w = w.astype(np.float16)
        out = np.empty((panels, k, PANEL), np.float16)
    elif out is None:
        out = np.empty((panels, k, PANEL), F32)
    elif out.shape != (panels, k, PANEL) or out.dtype != F32 or not out.flags.c_contiguous:
        raise ValueError(f"pack: out must be float32 C-contiguous {(panels, k, PANEL)}")
    strips = NARROW if strips is None else bool(strips)
    width = LANES if strips else PANEL
    dest = out.reshape(panels * (PANEL // width), k, width)  # a view: blocks of `width` rows
    nb = -(-m // width)
    full = m // width
    dest[:full] = w[:full * width].reshape(full, width, k).transpose(0, 2, 1)
    if full < nb:
        dest[full] = 0.0
        dest[full, :, :m - full * width] = w[full * width:].T
    dest[nb:] = 0.0  # the last panel's padding strips
    if half:
        out = out.view(np.uint16)
    out.setflags(write=False)
    return Packed(out, m, strips, scale)


def group_positions(x: np.ndarray) -> np.ndarray:
    """``x`` (n, in) as the kernel reads it: ``(groups, in, size)``, ``groups`` equal groups of at
    most :data:`MAX_GROUP` positions (the first ones one longer where ``n`` does not divide), each
    group's inputs transposed (zero-padded where a group is one short)."""
    n, k = x.shape
    if n == 1 and x.flags.c_contiguous and x.dtype == F32:  # one row is already that layout
        return x.reshape(1, k, 1)
    groups = -(-n // MAX_GROUP)
    gs = -(-n // groups)
    xg = np.zeros((groups, k, gs), F32)
    for g in range(groups):
        lo, hi = _group_bounds(n, groups, g)
        xg[g, :, :hi - lo] = x[lo:hi].T
    return xg


def _group_bounds(n: int, groups: int, g: int) -> tuple[int, int]:
    base, extra = divmod(n, groups)
    lo = g * base + min(g, extra)
    return lo, lo + base + (g < extra)
