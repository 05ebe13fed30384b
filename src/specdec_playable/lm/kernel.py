"""``x @ w.T`` for a few positions, streaming each weight from memory once, the arithmetic under it.

Decoding and verifying with a small model on a CPU is memory-bound: a pass over ``n`` new positions
multiplies every weight matrix by ``n`` activation vectors. One core of this project's CPU (Zen 4,
AVX-512 with FMA) reads about 27 GB/s and does about 100 GFLOP/s in float32: 20 ms to stream the
538 MB of weights, 2.7 ms of arithmetic per position (0.27 GFLOP). So up to 6-7 positions the
arithmetic fits under the stream, if the two overlap.

The layout. :func:`pack` stores a weight ``(out, in)`` once, at load, as *panels* of
:data:`PANEL` = 64 output rows: ``data[p, k, :]`` holds the 64 weights of rows ``64 p .. 64 p + 63``
for input ``k`` (256 bytes: four cache lines, four AVX-512 registers). A panel is one sequential
stream, and so is a whole matrix. The packed copy replaces the original (:class:`Packed` is what
the model keeps); ``Packed[ids]`` gathers rows, which is how the tied embedding reads its tokens.

The tile. One panel times ``P <= 6`` positions: for each input ``k`` it loads the panel's four
registers, broadcasts the ``P`` inputs ``x[p, k]`` and does ``4 P`` fused multiply-adds into ``4 P``
vector accumulators (at most 24 of the 32 registers), which stay in registers for the whole loop:
no horizontal sums, no stores until the end. :func:`_tile` generates it as LLVM IR (a numba
intrinsic), one specialisation per shape, so the compiler has nothing to get wrong; the driver
:func:`products` shares panels between threads with ``prange``.

Shapes by the number of positions:

* 1-6 positions (a decoding step, and checks of up to 5 drafted tokens): one group, the whole of
  ``k`` in registers. While the arithmetic of several positions runs, the hardware prefetcher
  alone lets the stream fall behind, so the tile also asks for its panel a few KB ahead, into L2
  (:func:`prefetch_ahead`: how far, per position count, measured per CPU family).
* 7 or more: equal groups of at most 6 (7-12: two, 13-18: three, ...). Each panel is worked in
  chunks of :data:`CHUNK` inputs (16 KB, kept in L1) and every group runs over a chunk before the
  next, so the weights still come from memory once; the accumulators go to ``out`` between chunks.
  While the groups work on one chunk they prefetch the next into L2, spread over the groups, so
  the memory stream does not wait for the arithmetic (without it 9 positions took 1.4x as long).

Strips, for CPUs without AVX-512 (:data:`NARROW`). There a vector register holds 8 floats and
there are 16, so a wide tile's ``4 P`` accumulators of 16 floats spill from 2 positions on. The
weights are then packed in strips (``pack(..., strips=True)``): each panel's memory is its four
16-row strips one after another, each strip one sequential stream of a cache line an input, and a
*narrow* tile multiplies one strip by up to 6 positions (``P`` accumulators). One group runs a whole
strip; more positions run in groups over each chunk of it (4 KB) while the chunk is in L1. The shape of
``Packed.data`` is the same; only the order of its floats differs.

The inputs are passed transposed and grouped (:func:`group_positions`), so the broadcasts of one
``k`` come from one cache line.

numba is optional. Without it (or with ``SPECDEC_NO_NUMBA=1`` in the environment) every call uses
:func:`matmul_t_numpy` (numpy on the same packed layout); results agree with the kernel to float32
rounding (the sums are taken in a different order). A plain (unpacked) weight array is also
accepted and multiplied by numpy.

The first call compiles the kernel (several seconds: one specialisation per tile shape);
``cache=True`` stores the machine code next to this file (or in numba's user cache directory when
that is not writable), so it happens once per machine. Nothing requires the cache to exist. The
model process calls :func:`warmup` as it loads.

Threads: the kernel uses :func:`threads` of them unless told otherwise (a server's model processes
are given one each, like their BLAS; see ``runtime.jobs.blas_env``), and :func:`use_threads` changes
it for the calling thread. If numba's OpenMP layer is used, idle threads sleep rather than spin
(``OMP_WAIT_POLICY=PASSIVE`` unless the environment says otherwise): a spinning pool on a shared
2-core machine takes the cores from the other process and both slow down.
"""

from __future__ import annotations

import functools
import os
import threading
from dataclasses import dataclass

import numpy as np

__all__ = ["HAVE_NUMBA", "LANES", "MAX_GROUP", "NARROW", "PANEL", "PREFETCH", "STRIP_AHEAD", "Packed", "check_prefetch", "cpu_vendor",
           "group_positions", "matmul_t", "matmul_t_numpy", "own_threads", "pack", "prefetch_ahead",
           "prepare_threads", "read_all", "set_prefetch", "set_process_threads", "threads", "use_threads",
           "warmup"]

F32 = np.float32

#: Floats in one vector register (512 bits), and one cache line.
LANES = 16
#: Output rows per panel: four vector registers a position, four cache lines an input.
PANEL = 64
#: Positions of one tile (4 x 6 = 24 accumulators of the 32 vector registers); more positions are
#: split into equal groups of at most this many.
MAX_GROUP = 6
#: The tile flag (bit 5) for a narrow tile on the strips layout: 16 rows of a panel (one vector,
#: one cache line an input) times up to :data:`MAX_GROUP` positions, ``P`` accumulators.
NARROW_FLAG = 32
#: In a pass over 2 or more positions, how many inputs (cache lines) ahead a narrow tile
#: prefetches its strip into L2: ``(one group of 2-6 positions, several groups)``; a decoding step
#: does not (the hardware prefetcher keeps up with one sequential stream). Measured on AMD Zen 3
#: at one thread (2026-12-03, whole passes, ``bench_lm.py --only prefetch --repeats 7``): 16 lines
#: took 3-4 positions from 1.23-1.28x the read floor to 1.10-1.12x; with several groups 32 took 9
#: positions from 2.09x to 1.78x; none and 64 were slower for every count from 3 on.
#: ``SPECDEC_STRIP_AHEAD`` in the environment (one number 0-256, or two separated by a comma)
#: overrides.
STRIP_AHEAD = (16, 32)
#: With several groups, inputs per chunk: a panel's chunk (16 KB) stays in L1 while every group
#: uses it.
CHUNK = 64
#: With one group of 1-6 positions, how many inputs (of 256 bytes: four cache lines) ahead a tile
#: prefetches its panel into L2, by the number of positions (0: no prefetch), per CPU vendor, each
#: measured at one thread with ``benchmarks/bench_lm.py --only prefetch``:
#:
#: * AMD (Zen 4, 2026-12-01): 2 KB ahead took 3 positions from about 1.4x the read floor to 1.05x;
#:   with 1 or 4-6 positions prefetching did not help, and 4 KB or more made every shape slower.
#: * Intel (Xeon, Sapphire Rapids family, 2026-12-02): without it 5 positions took 1.7x the read
#:   floor, with 4 KB ahead 1.2x; 3-12 KB were alike, 2 KB half as good; one position gained a
#:   few per cent.
#:
#: Other vendors get AMD's (what shipped first). ``SPECDEC_PREFETCH`` in the environment (one
#: number for every count, or six separated by commas) overrides the table; so does
#: :func:`set_prefetch`.
PREFETCH = {
    "AuthenticAMD": (0, 8, 8, 0, 0, 0),
    "GenuineIntel": (16, 16, 16, 16, 16, 16),
}


@functools.cache
def _vector_registers() -> int:
    """How many 16-float vector registers this CPU has: 32 with AVX-512, else the 16 of AVX2
    (each 16-float vector then takes two of them), as the compiler sees the host."""
    try:
        from llvmlite import binding
        return 32 if binding.get_host_cpu_features().get("avx512f") else 16
    except Exception:  # no llvmlite (the numpy path), or a platform it cannot describe
        return 32


def _default_narrow() -> bool:
    env = os.environ.get("SPECDEC_TILES", "").strip().lower()
    if env not in ("", "narrow", "wide"):
        raise ValueError(f"SPECDEC_TILES must be 'narrow' or 'wide' (or unset); got {env!r}")
    return env == "narrow" if env else _vector_registers() < 32


#: Whether weights are packed in *strips* and multiplied by narrow tiles, rather than in panels
#: multiplied by wide tiles (see the module docstring): on a CPU without AVX-512 a wide tile's
#: ``4 P`` accumulators of 16 floats take ``8 P`` of its 16 vector registers, so from 2
#: positions on they spill to memory (AMD Zen 3, 2026-12-03: a pass over 5 positions took 2.4x a
#: step), while a narrow tile's ``P`` accumulators take ``2 P``. ``SPECDEC_TILES`` (``narrow`` or
#: ``wide``) in the environment overrides.
NARROW = _default_narrow()


def threads() -> int:
    """Threads the kernel uses: the first of ``NUMBA_NUM_THREADS``, ``OMP_NUM_THREADS``,
    ``OPENBLAS_NUM_THREADS`` that is set, else the CPUs this process may run on."""
    for var in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        v = os.environ.get(var, "").strip()
        if v.isdigit() and int(v) > 0:
            return int(v)
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def cpu_vendor() -> str:
    """The CPU's vendor string (``GenuineIntel``, ``AuthenticAMD``, ...) from ``/proc/cpuinfo``,
    or ``""`` where it cannot be read."""
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("vendor_id"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return ""


def _parse_prefetch(text: str) -> tuple[int, ...]:
    parts = [p.strip() for p in text.split(",")]
    if not all(p.isdigit() for p in parts) or len(parts) not in (1, MAX_GROUP):
        raise ValueError(f"SPECDEC_PREFETCH must be one number or {MAX_GROUP} separated by commas "
                         f"(inputs ahead, 0-256); got {text!r}")
    return check_prefetch(tuple(int(p) for p in parts) * (MAX_GROUP if len(parts) == 1 else 1))


def check_prefetch(ahead) -> tuple[int, ...]:
    """``ahead`` as a tuple of :data:`MAX_GROUP` ints in [0, 256], or ValueError."""
    ahead = tuple(int(a) for a in ahead)
    if len(ahead) != MAX_GROUP or not all(0 <= a <= 256 for a in ahead):
        raise ValueError(f"prefetch distances: {MAX_GROUP} numbers of inputs ahead in [0, 256]; "
                         f"got {ahead}")
    return ahead


def _default_prefetch() -> tuple[int, ...]:
    env = os.environ.get("SPECDEC_PREFETCH", "").strip()
    if env:
        return _parse_prefetch(env)
    return PREFETCH.get(cpu_vendor(), PREFETCH["AuthenticAMD"])


_AHEAD = [_default_prefetch()]


def _strip_ahead() -> tuple[int, int]:
    env = os.environ.get("SPECDEC_STRIP_AHEAD", "").strip()
    if not env:
        return STRIP_AHEAD
    parts = [p.strip() for p in env.split(",")]
    if len(parts) not in (1, 2) or not all(p.isdigit() and int(p) <= 256 for p in parts):
        raise ValueError("SPECDEC_STRIP_AHEAD must be one number of inputs ahead (0-256) or two "
                         f"separated by a comma; got {env!r}")
    return (int(parts[0]), int(parts[-1]))


_STRIP_AHEAD = _strip_ahead()


def prefetch_ahead(n: int, strips: bool = False) -> int:
    """Inputs ahead that a tile prefetches its weights, in a pass over ``n`` positions: for wide
    tiles (0: none, and for more than :data:`MAX_GROUP` positions, whose groups prefetch chunk by
    chunk) the table's, for narrow ones (``strips``) :data:`STRIP_AHEAD`."""
    if strips:
        return 0 if n <= 1 else _STRIP_AHEAD[0] if n <= MAX_GROUP else _STRIP_AHEAD[1]
    return _AHEAD[0][n - 1] if 1 <= n <= MAX_GROUP else 0


def set_prefetch(ahead=None) -> tuple[int, ...]:
    """Set the process's prefetch distances (:data:`MAX_GROUP` ints, one per position count;
    ``None``: back to the default for this CPU); return them. A benchmark's knob: results do not
    depend on it, only speed."""
    _AHEAD[0] = _default_prefetch() if ahead is None else check_prefetch(ahead)
    return _AHEAD[0]


# -- the packed layout -------------------------------------------------------------------------

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


# -- the numpy path ----------------------------------------------------------------------------

def matmul_t_numpy(x: np.ndarray, w) -> np.ndarray:
    """``x @ w.T`` with numpy only: the fallback of :func:`matmul_t`.

    A :class:`Packed` weight is multiplied panel by panel (one stacked matrix product); a plain
    ``(out, in)`` array by BLAS.
    """
    x = np.asarray(x, dtype=F32)
    if not isinstance(w, Packed):
        return np.ascontiguousarray(x @ w.T)
    b = w.blocks()
    nb, k, width = b.shape
    y = np.matmul(x, b.astype(F32) if w.half or w.int8 else b)  # (blocks, n, width)
    y = y.transpose(1, 0, 2).reshape(x.shape[0], nb * width)[:, :w.rows]
    if w.int8:
        return np.ascontiguousarray(y * w.scale[:w.rows])
    return np.ascontiguousarray(y)


# -- the kernel --------------------------------------------------------------------------------

try:
    if os.environ.get("SPECDEC_NO_NUMBA"):
        raise ImportError("numba disabled by SPECDEC_NO_NUMBA")
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    # a layer that may be entered from two Python threads at once (numba's workqueue may not)
    os.environ.setdefault("NUMBA_THREADING_LAYER", "threadsafe")
    import numba
    from llvmlite import ir
    from numba import njit, prange, types
    from numba.core import cgutils
    from numba.extending import intrinsic
    HAVE_NUMBA = True
except ImportError:  # pragma: no cover - exercised when numba is absent
    numba = None
    HAVE_NUMBA = False


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
    def _tile(typingctx, arrays, at, P, FLAGS):
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
        """The IR of one :func:`_tile` (see there): accumulators, the loop over inputs, the stores."""
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
        """One tile product, :func:`_tile` ``((w, x, out), at, p, flags)`` with ``p`` positions
        (1-6) and ``flags`` (0: overwrite, no prefetch; 8: overwrite, the whole input row
        prefetched from ``at[8]`` on; 2, 3, 4, 5: the chunked forms :func:`products` uses) given at
        run time: the literal specialisations, chosen here."""
        if flags == 0:  # one group: all of k, no prefetch
            if p == 1:
                _tile((w, x, out), at, 1, 0)
            elif p == 2:
                _tile((w, x, out), at, 2, 0)
            elif p == 3:
                _tile((w, x, out), at, 3, 0)
            elif p == 4:
                _tile((w, x, out), at, 4, 0)
            elif p == 5:
                _tile((w, x, out), at, 5, 0)
            else:
                _tile((w, x, out), at, 6, 0)
        elif flags == 8:  # one group: all of k, a whole input row (4 lines) prefetched per input
            if p == 1:
                _tile((w, x, out), at, 1, 8)
            elif p == 2:
                _tile((w, x, out), at, 2, 8)
            elif p == 3:
                _tile((w, x, out), at, 3, 8)
            elif p == 4:
                _tile((w, x, out), at, 4, 8)
            elif p == 5:
                _tile((w, x, out), at, 5, 8)
            else:
                _tile((w, x, out), at, 6, 8)
        elif flags == 4:  # a first chunk, 2 lines prefetched per input
            if p == 3:
                _tile((w, x, out), at, 3, 4)
            elif p == 4:
                _tile((w, x, out), at, 4, 4)
            elif p == 5:
                _tile((w, x, out), at, 5, 4)
            else:
                _tile((w, x, out), at, 6, 4)
        elif flags == 5:  # a later chunk, 2 lines per input
            if p == 3:
                _tile((w, x, out), at, 3, 5)
            elif p == 4:
                _tile((w, x, out), at, 4, 5)
            elif p == 5:
                _tile((w, x, out), at, 5, 5)
            else:
                _tile((w, x, out), at, 6, 5)
        elif flags == 2:  # a first chunk, 1 line per input
            if p == 4:
                _tile((w, x, out), at, 4, 2)
            elif p == 5:
                _tile((w, x, out), at, 5, 2)
            else:
                _tile((w, x, out), at, 6, 2)
        elif flags == 3:  # a later chunk, 1 line per input
            if p == 4:
                _tile((w, x, out), at, 4, 3)
            elif p == 5:
                _tile((w, x, out), at, 5, 3)
            else:
                _tile((w, x, out), at, 6, 3)

    @njit(inline="always")
    def run_narrow(w, x, out, at, p, flags):
        """One narrow tile product (16 rows of a panel: :data:`NARROW_FLAG`), ``p`` positions
        (1-6) and ``flags`` 0-3 (bit 0: add to ``out``; bit 1: one line prefetched per input)
        given at run time."""
        if flags == 0:
            if p == 1:
                _tile((w, x, out), at, 1, 32)
            elif p == 2:
                _tile((w, x, out), at, 2, 32)
            elif p == 3:
                _tile((w, x, out), at, 3, 32)
            elif p == 4:
                _tile((w, x, out), at, 4, 32)
            elif p == 5:
                _tile((w, x, out), at, 5, 32)
            else:
                _tile((w, x, out), at, 6, 32)
        elif flags == 1:
            if p == 1:
                _tile((w, x, out), at, 1, 33)
            elif p == 2:
                _tile((w, x, out), at, 2, 33)
            elif p == 3:
                _tile((w, x, out), at, 3, 33)
            elif p == 4:
                _tile((w, x, out), at, 4, 33)
            elif p == 5:
                _tile((w, x, out), at, 5, 33)
            else:
                _tile((w, x, out), at, 6, 33)
        elif flags == 2:
            if p == 1:
                _tile((w, x, out), at, 1, 34)
            elif p == 2:
                _tile((w, x, out), at, 2, 34)
            elif p == 3:
                _tile((w, x, out), at, 3, 34)
            elif p == 4:
                _tile((w, x, out), at, 4, 34)
            elif p == 5:
                _tile((w, x, out), at, 5, 34)
            else:
                _tile((w, x, out), at, 6, 34)
        else:
            if p == 1:
                _tile((w, x, out), at, 1, 35)
            elif p == 2:
                _tile((w, x, out), at, 2, 35)
            elif p == 3:
                _tile((w, x, out), at, 3, 35)
            elif p == 4:
                _tile((w, x, out), at, 4, 35)
            elif p == 5:
                _tile((w, x, out), at, 5, 35)
            else:
                _tile((w, x, out), at, 6, 35)

    @njit(parallel=True, fastmath=True, cache=True)
    def products(xg, w, n, out, ahead, strips):
        """``out[:n, :64 * panels] = x @ w.T`` for grouped inputs ``xg`` (groups, in, gs) (see
        :func:`group_positions`), packed ``w`` (panels, in, 64) and ``out`` (>= n, >= 64 panels),
        all float32 C-contiguous. Padded rows are written too (as the zero rows' products).
        ``ahead``: how many inputs ahead a tile prefetches its weights (0: not at all;
        :func:`prefetch_ahead`), with one group of wide tiles or with narrow ones. ``strips``:
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
        if groups == 1:  # every position in registers for the whole of k
            flags = 8 if ahead > 0 else 0
            for t in prange(panels):
                at = (t * k_in * PANEL, 0, k_in, 0, gs, 1, t * PANEL, o_stride, (t * k_in + ahead) * PANEL)
                run_tile(w, xg, out, at, n, flags)
            return
        lines = 2 if groups <= 3 else 1  # per input, so that the groups cover the next chunk
        for t in prange(panels):  # chunks of k in L1, every group over each chunk
            for c in range(0, k_in, CHUNK):
                nxt = (t * k_in + c + CHUNK) * PANEL  # the next chunk's first line (maybe the next panel's)
                for g in range(groups):
                    lo = g * base + min(g, extra)
                    at = (t * k_in * PANEL, c, min(c + CHUNK, k_in), g * k_in * gs, gs, 1,
                          lo * o_stride + t * PANEL, o_stride, nxt + g * CHUNK * lines * LANES)
                    run_tile(w, xg, out, at, base + (g < extra), 2 * lines + (c > 0))

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

    @njit(parallel=True, fastmath=True, error_model="numpy", cache=True)
    def _read(data, zeros, sums):
        # every weight read once, as a one-position tile reads it (times zero), nothing stored
        # but one row of sums: a pure sum loop (P = 0) measured 3-8% slower here
        panels, k_in, _ = data.shape
        for t in prange(panels):
            _tile((data, zeros, sums), (t * k_in * PANEL, 0, k_in, 0, 1, 1, t * PANEL, 0, 0), 1, 0)


def read_all(weights) -> float:
    """Stream every element of the given :class:`Packed` weights once, as the one-position tile
    does, with the kernel's threads and nothing else: the memory floor a pass cannot beat (a
    benchmark's yardstick). Returns a number that depends on every weight (a zero here)."""
    weights = list(weights)
    if not HAVE_NUMBA:
        return float(sum(np.sum(w.data if isinstance(w, Packed) else w) for w in weights)) * 0.0
    prepare_threads()
    zeros = np.zeros((max(w.shape[1] for w in weights), 1), F32)
    sums = np.empty((1, max(w.data.shape[0] for w in weights) * PANEL), F32)
    total = 0.0
    for w in weights:
        _read(w.data, zeros, sums)
        total += float(sums[0, 0])
    return total


def matmul_t(x: np.ndarray, w, out: np.ndarray | None = None) -> np.ndarray:
    """Return ``x @ w.T`` in float32, streaming each weight from memory once.

    Parameters
    ----------
    x : numpy.ndarray
        float32 activations, shape ``(n, in)``; any strides (they are regrouped for the kernel
        anyway: :func:`group_positions`).
    w : Packed or numpy.ndarray
        The weight, ``(out, in)``: packed by :func:`pack` (the kernel's layout, as the model keeps
        it), or a plain float32 array (multiplied by numpy).
    out : numpy.ndarray, optional
        C-contiguous float32 array of shape ``(n, out)`` to write into.

    Returns
    -------
    numpy.ndarray
        float32, shape ``(n, out)``, C-contiguous.

    Notes
    -----
    The kernel sums in a different order from BLAS; against a float64 reference its largest error,
    relative to the largest output, is below 1e-6 at the model's shapes. Tests use 1e-5.
    """
    if x.ndim != 2 or len(w.shape) != 2 or x.shape[1] != w.shape[1]:
        raise ValueError(f"matmul_t: shapes {x.shape} and {w.shape} do not match (n, in), (out, in)")
    if x.dtype != F32 or w.dtype not in ((F32, np.float16, np.int8) if isinstance(w, Packed) else (F32,)):
        raise TypeError(f"matmul_t: float32 activations and float32 weights (or float16 or int8 packed "
                        f"ones) only, got {x.dtype} and {w.dtype}")
    n, m = x.shape[0], w.shape[0]
    if out is not None and (out.shape != (n, m) or out.dtype != F32 or not out.flags.c_contiguous):
        raise ValueError("matmul_t: out must be C-contiguous float32 of shape (n, out)")
    if n == 0 or not HAVE_NUMBA or not isinstance(w, Packed):
        y = matmul_t_numpy(x, w)
        if out is not None:
            out[...] = y
            return out
        return y
    padded = w.data.shape[0] * PANEL
    y = out if out is not None and padded == m else np.empty((n, padded), F32)
    prepare_threads(n)
    products(group_positions(x), w.data, n, y, prefetch_ahead(n, w.strips), w.strips)
    if w.scale is not None:
        y *= w.scale[:y.shape[1]]
    if padded != m:
        y = y[:, :m]
        if out is None:
            return np.ascontiguousarray(y)
        out[...] = y
        return out
    return y


_THREADS = 1
if HAVE_NUMBA:
    _THREADS = max(1, min(threads(), numba.config.NUMBA_NUM_THREADS))
_LOCAL = threading.local()
_PROCESS = [None]  # the process-wide setting (set_process_threads), None: the default


#: Per CPU vendor and whether it has AVX-512, the fewest positions a pass must have to use more
#: than one thread (a thread's own :func:`use_threads` is taken as it is), measured on this
#: project's 2-core machines (``benchmarks/bench_lm.py --only threads``, each run alone):
#:
#: * AMD with AVX-512 (Zen 4): the weights streamed no faster from two cores than from one, so a
#:   decoding step was 1.1-1.2x slower on two threads and 5-9 positions about even, while 17 and
#:   33 positions, whose arithmetic outlasts the stream, took 0.76x and 0.64x as long: from 8
#:   positions on.
#: * AMD without it (Zen 3, strips layout, 2026-12-03): every pass, the read floor and a decoding
#:   step included, took 0.64-0.67x as long on two threads: from 1 position on.
#: * Intel (Xeon, Sapphire Rapids family, AVX-512): one core's stream is bound by how many cache
#:   misses it can keep in flight, so two cores read faster: every pass, a decoding step included,
#:   took 0.75-0.80x as long on two threads: from 1 position on.
#:
#: Other CPUs get their vendor's entry with AVX-512, else AMD's with AVX-512.
PARALLEL_FROM_BY_CPU = {("AuthenticAMD", True): 8, ("AuthenticAMD", False): 1, ("GenuineIntel", True): 1}


def _parallel_from(vendor: str, avx512: bool) -> int:
    table = PARALLEL_FROM_BY_CPU
    return table.get((vendor, avx512), table.get((vendor, True), table[("AuthenticAMD", True)]))


#: This CPU's entry of :data:`PARALLEL_FROM_BY_CPU`.
PARALLEL_FROM = _parallel_from(cpu_vendor(), _vector_registers() >= 32)


def prepare_threads(n: int | None = None) -> int:
    """Make the calling thread's next products use the threads in force, and return how many:
    this thread's :func:`use_threads`; else one for a pass over fewer than :data:`PARALLEL_FROM`
    positions ``n``, and otherwise the process's :func:`set_process_threads` or :func:`threads`.
    :meth:`.model.Model.forward` calls it before every pass."""
    if not HAVE_NUMBA:
        return 1
    t = getattr(_LOCAL, "threads", None)
    if not t:
        t = 1 if n is not None and n < PARALLEL_FROM else (_PROCESS[0] or _THREADS)
    if getattr(_LOCAL, "set", None) != t:  # numba's setting is per calling thread; asking it costs
        numba.set_num_threads(t)            # tens of microseconds, a draft guess's small products
        _LOCAL.set = t                      # several times, so this thread remembers what it set
    return t



def _pool(n: int | None) -> int | None:
    if n is not None and int(n) < 1:
        raise ValueError(f"threads must be at least 1; got {n}")
    return None if n is None or not HAVE_NUMBA else min(int(n), numba.config.NUMBA_NUM_THREADS)


def use_threads(n: int | None) -> int:
    """Set the threads the calling thread's products use (``None``: back to the process's
    setting); return the number now in force. At most numba's pool size."""
    _LOCAL.threads = _pool(n)
    return prepare_threads()


def own_threads() -> int | None:
    """The calling thread's own setting (:func:`use_threads`), or ``None`` where it follows the
    process's; ``use_threads(own_threads())`` puts back what a caller found."""
    return getattr(_LOCAL, "threads", None)


def set_process_threads(n: int | None) -> int:
    """Set the threads every thread of this process uses from its next pass on, unless it chose
    its own with :func:`use_threads` (``None``: back to :func:`threads`); return the new setting.
    A server's model process sets it from the number of runs sharing the machine
    (``runtime.model_process``). At most numba's pool size."""
    _PROCESS[0] = _pool(n)
    return _PROCESS[0] or _THREADS


def warmup() -> float:
    """Compile (or load from cache) the kernel now, every tile shape; return the seconds it took."""
    import time
    t0 = time.perf_counter()
    if HAVE_NUMBA:
        w = pack(np.zeros((2 * PANEL + 1, 8), F32))
        for n in range(1, 2 * MAX_GROUP + 1):
            matmul_t(np.zeros((n, 8), F32), w)
        read_all([w])
    return time.perf_counter() - t0
