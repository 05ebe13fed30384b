"""Weights as the model file stores them: GGUF's Q4_1 and Q8_0 blocks, repacked into panel order.

GGUF quantises each row of a weight ``(out, in)`` in blocks of 32 inputs (``gguf.quants``):

* **Q4_1**, 20 bytes a block: a float16 scale ``d``, a float16 minimum ``m``, then 16 bytes of
  4-bit codes; input ``j < 16`` is the low nibble of byte ``j``, input ``j + 16`` its high nibble,
  and the weight is ``d * q + m``.
* **Q8_0**, 34 bytes a block: a float16 scale ``d``, then 32 int8 codes; the weight is ``d * q``.

:func:`pack_blocks` repacks a tensor's blocks (the bytes GGUF stores, ``(rows, blocks * size)``)
into the kernel's order, losing nothing: for each *unit* of ``W`` rows (a panel of 64, or a strip
of 16 in the strips layout) and each block of 32 inputs, one *superblock* of ``W`` rows: their
``W`` scales ``d`` (float16), for Q4_1 their ``W`` minimums ``m``, then the codes in *quads*:
for each run of 4 code bytes (Q4_1: bytes ``4 t .. 4 t + 3`` of a row, holding inputs
``4 t .. 4 t + 3`` in their low nibbles and ``4 t + 16 ..`` in their high ones; Q8_0: inputs
``4 t .. 4 t + 3``), 16 rows at a time, each row's 4 bytes together: 64 bytes, one vector of 16
32-bit lanes whose lane ``i`` is row ``i``'s 4 bytes (a panel's four such vectors follow each
other). So a tile reads one superblock as a few cache lines in a row: a vector of 16 scales, one
of 16 minimums, and for each quad one 64-byte load per 16 rows, from which shifts take each
input's 16 codes (the float tiles), or which multiplies 4 inputs of 8-bit activations per lane in
one integer dot-product instruction (the integer tile, :mod:`.codegen_int`). A unit
is its superblocks in input order, a matrix its units in row order: one sequential stream of
20 bytes (Q4_1) or 34 bytes (Q8_0) per 32 weights, as in the file. Rows past ``rows`` (a last
partial panel) are zero blocks: ``d = m = 0``.

:class:`QPacked` is what the model keeps (the only copy of those weights); ``QPacked[ids]``
dequantises rows (the tied embedding's tokens), :meth:`QPacked.values` whole units, and
:func:`.reference.matmul_t_numpy` multiplies blockwise from them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .shapes import LANES, PANEL
from .tuning import BLOCKS_STRIPS

F32 = np.float32

#: Inputs per block, in both formats.
BLOCK = 32
#: The block formats the tile reads: bytes of a GGUF block, of its header (scale, minimum), and
#: the number of code bytes per row in a superblock.
FORMATS = {"q4_1": (20, 4, 16), "q8_0": (34, 2, 32)}
#: Each format's number in the compiled code (:func:`.drive.products_q`).
KIND = {"q4_1": 0, "q8_0": 1}
#: Code bytes a row keeps together in a superblock (a quad: one 32-bit lane of the integer tile).
QUAD = 4


def superblock_bytes(kind: str, width: int) -> int:
    """Bytes of one superblock: ``width`` rows by one block of 32 inputs, in format ``kind``."""
    return FORMATS[kind][0] * width


@dataclass(frozen=True, eq=False)
class QPacked:
    """A weight ``(rows, cols)`` in GGUF blocks, repacked by :func:`pack_blocks`.

    ``data`` is read-only uint8, ``(panels, bytes per panel)``: panel ``p`` holds rows
    ``64 p .. 64 p + 63`` as its superblocks (see the module docstring), or, in the strips layout,
    as four strips of 16 rows one after another.

    Examples
    --------
    >>> import gguf
    >>> w = np.linspace(-1, 1, 3 * 64, dtype=np.float32).reshape(3, 64)
    >>> raw = gguf.quants.quantize(w, gguf.GGMLQuantizationType.Q8_0)
    >>> pw = pack_blocks(raw, "q8_0")
    >>> pw.shape, pw.data.shape, pw.nbytes
    ((3, 64), (1, 4352), 4352)
    >>> bool(np.abs(pw[[2]] - w[2]).max() < 0.01)
    True
    """

    data: np.ndarray
    rows: int
    cols: int
    kind: str
    strips: bool = False

    @property
    def shape(self) -> tuple[int, int]:
        return self.rows, self.cols

    @property
    def dtype(self) -> np.dtype:
        """The storage (uint8 bytes of blocks)."""
        return self.data.dtype

    @property
    def nbytes(self) -> int:
        return int(self.data.nbytes)

    @property
    def width(self) -> int:
        """Rows of one unit: 16 in the strips layout, else 64."""
        return LANES if self.strips else PANEL

    def _fields(self, units=slice(None)):
        """Units ``units``' scales, minimums (Q8_0: None) and codes, views of ``data``: float16
        ``(u, blocks, width)`` twice and uint8 ``(u, blocks, quads, width // 16, 16, 4)`` (byte
        ``4 t + b`` of row ``16 v + i`` at ``[..., t, v, i, b]``)."""
        size, head, body = FORMATS[self.kind]
        w, nb = self.width, self.cols // BLOCK
        sb = self.data.reshape(-1, nb, size * w)[units]
        scales = sb[..., :head * w].reshape(sb.shape[:2] + (head // 2, w, 2)).view(np.float16)
        codes = sb[..., head * w:].reshape(sb.shape[:2] + (body // QUAD, w // LANES, LANES, QUAD))
        d = scales[..., 0, :, 0]
        m = scales[..., 1, :, 0] if head == 4 else None
        return d, m, codes

    def values(self, units=slice(None)) -> np.ndarray:
        """Units ``units`` dequantised, float32 ``(u, cols, width)`` (``[u, k, j]``: row
        ``width u + j``, input ``k``): ``d * q + m`` (Q4_1) or ``d * q`` (Q8_0), as GGUF defines
        them, block by block."""
        d, m, quads = self._fields(units)
        u, nb = quads.shape[:2]
        codes = quads.transpose(0, 1, 2, 5, 3, 4).reshape(u, nb, -1, self.width)  # (u, blocks, byte, row)
        if self.kind == "q4_1":
            q = np.concatenate((codes & 15, codes >> 4), axis=2).astype(F32)
            v = d.astype(F32)[:, :, None, :] * q + m.astype(F32)[:, :, None, :]
        else:
            v = d.astype(F32)[:, :, None, :] * codes.view(np.int8).astype(F32)
        return v.reshape(v.shape[0], self.cols, self.width)

    def __getitem__(self, ids) -> np.ndarray:
        """Rows ``ids`` (an int, a sequence or array of ints, or a slice) dequantised, as a new
        float32 ``(len(ids), cols)`` array (an int gives one row, ``(cols,)``)."""
        idx = _row_indices(ids, self.rows)
        d, m, quads = self._fields()
        u, j = idx // self.width, idx % self.width
        c = quads[u, :, :, j // LANES, j % LANES]  # (rows, blocks, quads, 4)
        c = c.reshape(c.shape[:-2] + (-1,))  # (rows, blocks, code bytes)
        if self.kind == "q4_1":
            q = np.concatenate((c & 15, c >> 4), axis=-1).astype(F32)
            v = d[u, :, j].astype(F32)[..., None] * q + m[u, :, j].astype(F32)[..., None]
        else:
            v = d[u, :, j].astype(F32)[..., None] * c.view(np.int8).astype(F32)
        return v.reshape(idx.shape + (self.cols,))

    def unpack(self) -> np.ndarray:
        """The weight dequantised in its original ``(rows, cols)`` layout (a new float32 array)."""
        v = self.values()
        return np.ascontiguousarray(v.transpose(0, 2, 1).reshape(-1, self.cols)[:self.rows])


def _row_indices(ids, rows: int) -> np.ndarray:
    """``ids`` as an int64 array of row indices in [0, rows), negative ones counted from the end."""
    if isinstance(ids, tuple):
        raise TypeError("QPacked[...] takes row indices only (one weight row per index)")
    if isinstance(ids, slice):
        ids = np.arange(rows)[ids]
    idx = np.asarray(ids)
    if idx.dtype.kind not in "iu" and idx.size:
        raise TypeError(f"row indices must be integers; got {idx.dtype}")
    idx = idx.astype(np.int64)
    if idx.size and (idx.min() < -rows or idx.max() >= rows):
        raise IndexError(f"row index out of range for {rows} rows")
    return np.where(idx < 0, idx + rows, idx)


def pack_blocks(raw: np.ndarray, kind: str, *, out: np.ndarray | None = None,
                strips: bool | None = None) -> QPacked:
    """Repack a GGUF tensor's blocks into panel order (see the module docstring; read-only).

    ``raw``: uint8 ``(rows, blocks * size)``, the bytes the file stores for a weight
    ``(rows, 32 * blocks)`` in format ``kind`` (``"q4_1"`` or ``"q8_0"``); rows may be taken
    from several tensors or reordered first, as long as each row keeps its bytes.
    ``out``: the uint8 C-contiguous ``(panels, bytes per panel)`` array to pack into (a slice of a
    larger one, so that several weights share one allocation). ``strips``: four strips of 16 rows
    per panel (:attr:`QPacked.strips`); ``None``: this CPU's choice, :data:`.tuning.BLOCKS_STRIPS`.
    """
    size, head, body = _check_raw(raw, kind)
    rows, nb = raw.shape[0], raw.shape[1] // size
    strips = BLOCKS_STRIPS if strips is None else bool(strips)
    width = LANES if strips else PANEL
    panels = -(-rows // PANEL)
    shape = (panels, nb * size * PANEL)
    if out is None:
        out = np.empty(shape, np.uint8)
    elif out.shape != shape or out.dtype != np.uint8 or not out.flags.c_contiguous:
        raise ValueError(f"pack_blocks: out must be uint8 C-contiguous {shape}")
    units = panels * PANEL // width
    dest = out.reshape(units, nb, size * width)
    full = rows // width
    _scatter(raw[:full * width].reshape(full, width, nb, size), dest[:full], head, body)
    if full < units:
        dest[full:] = 0
        last = np.zeros((1, width, nb, size), np.uint8)
        last[0, :rows - full * width] = raw[full * width:].reshape(-1, nb, size)
        _scatter(last, dest[full:full + 1], head, body)
    out.setflags(write=False)
    return QPacked(out, rows, nb * BLOCK, kind, strips)


def _check_raw(raw: np.ndarray, kind: str) -> tuple[int, int, int]:
    if kind not in FORMATS:
        raise ValueError(f"block format must be one of {sorted(FORMATS)}; got {kind!r}")
    size = FORMATS[kind][0]
    if raw.ndim != 2 or raw.dtype != np.uint8 or raw.shape[1] % size or not raw.shape[0] * raw.shape[1]:
        raise ValueError(f"pack_blocks: need uint8 (rows, blocks * {size}) bytes of {kind} blocks; "
                         f"got {raw.dtype} {raw.shape}")
    return FORMATS[kind]


def _scatter(src: np.ndarray, dest: np.ndarray, head: int, body: int) -> None:
    """Blocks ``src`` (units, width, blocks, size) into superblocks ``dest`` (units, blocks,
    size * width): the header fields of all ``width`` rows, field by field, then the codes quad by
    quad, 16 rows at a time, each row's 4 bytes together."""
    units, width, nb, _ = src.shape
    hdr = src[..., :head].reshape(units, width, nb, head // 2, 2).transpose(0, 2, 3, 1, 4)
    dest[..., :head * width] = hdr.reshape(units, nb, head * width)
    codes = src[..., head:].reshape(units, width // LANES, LANES, nb, body // QUAD, QUAD)
    # (units, blocks, quads, vectors, rows of a vector, bytes of a quad)
    dest[..., head * width:] = codes.transpose(0, 3, 4, 1, 2, 5).reshape(units, nb, body * width)
