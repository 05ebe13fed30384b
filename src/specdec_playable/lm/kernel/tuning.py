"""Per-CPU tuning: the tables the kernel's speed depends on (never its results).

Each table is keyed by CPU vendor (and whether the CPU has AVX-512); the measurements behind every
entry, dated and with the command that took them, are in docs/performance.md ("The kernel's
tuning tables"). Environment variables override them (``SPECDEC_TILES``, ``SPECDEC_PREFETCH``,
``SPECDEC_STRIP_AHEAD``), and :func:`set_prefetch` is a benchmark's knob.
"""

from __future__ import annotations

import functools
import os

from .shapes import MAX_GROUP

#: In a pass over 2 or more positions, how many inputs (cache lines) ahead a narrow tile
#: prefetches its strip into L2: ``(one group of 2-6 positions, several groups)``; a decoding step
#: does not (the hardware prefetcher keeps up with one sequential stream). ``SPECDEC_STRIP_AHEAD``
#: in the environment (one number 0-256, or two separated by a comma) overrides.
STRIP_AHEAD = (16, 32)
#: With one group of 1-6 positions, how many inputs (of 256 bytes: four cache lines) ahead a wide
#: tile prefetches its panel into L2, by the number of positions (0: no prefetch), per CPU vendor.
#: Other vendors get AMD's (what shipped first). ``SPECDEC_PREFETCH`` in the environment (one
#: number for every count, or six separated by commas) overrides the table; so does
#: :func:`set_prefetch`.
PREFETCH = {
    "AuthenticAMD": (0, 8, 8, 0, 0, 0),
    "GenuineIntel": (16, 16, 16, 16, 16, 16),
}
#: Per CPU vendor, the fewest positions for which one group of wide tiles runs chunk by chunk, as
#: several groups do, prefetching each next chunk into L2 (16 KB ahead), rather than over the
#: whole of each panel with :data:`PREFETCH`'s distance. From that count on a pass's work only
#: grows with its positions: the same chunks, the same prefetches, more multiply-adds, then more
#: groups. Other vendors get AMD's.
CHUNKED_FROM = {
    "AuthenticAMD": 2,
    "GenuineIntel": 2,
}


#: For weights in GGUF blocks (:mod:`.blocks`), how many blocks ahead a tile over one group of
#: positions prefetches its unit into L2, by the number of positions (0: none); with several groups
#: (and one group through scratch panels, :data:`BLOCKS_SCRATCH_FROM`) the unpacking prefetches
#: the next chunk when this is not 0 for the count.
BLOCKS_AHEAD = (4, 4, 4, 4, 4, 4)
#: For weights in GGUF blocks, the fewest positions for which one group, too, goes through float32
#: scratch panels (each chunk unpacked once, then multiplied by the float32 tile) rather than
#: unpacking in registers (7: never).
BLOCKS_SCRATCH_FROM = 5


#: The integer tile's instruction sets (:mod:`.codegen_int`), in the order of their compiled
#: numbers: AVX-512 VNNI, AVX2.
ISA = ("vnni", "avx2")
#: Positions one integer tile holds at most (two accumulators each: 12 of AVX-512's 32 registers;
#: 6, 8, 9, 10 and 12 measured alike on the Xeon, 2026-12-07).
INT_GROUP_MAX = 6
#: Per instruction set, the fewest positions from which a pass multiplies weights in blocks by the
#: integer tile (8-bit activations) rather than the float tiles, and the positions one integer
#: tile holds.
INT_FROM = {"vnni": 1, "avx2": 1}
INT_GROUP = {"vnni": 6, "avx2": 3}
#: Per instruction set, how many bytes ahead the integer tile prefetches its weights into L2 while
#: it works a block (the first group of a pass; 0: none).
INT_AHEAD = {"vnni": 8192, "avx2": 8192}


def _numba_target() -> tuple[str, str]:
    """The CPU name and features numba compiles for (``NUMBA_CPU_NAME``, ``NUMBA_CPU_FEATURES``;
    ``("", "")`` for this host)."""
    name = os.environ.get("NUMBA_CPU_NAME", "").strip()
    return ("", "") if name in ("", "host") else (name, os.environ.get("NUMBA_CPU_FEATURES", "").strip())


@functools.cache
def host_features() -> frozenset[str]:
    """The CPU features the compiled code may use: this host's as LLVM sees them, or those named
    in ``NUMBA_CPU_FEATURES`` (``+avx2,+fma,...``) where ``NUMBA_CPU_NAME`` picks another CPU;
    none where llvmlite cannot say."""
    name, features = _numba_target()
    if name:
        return frozenset(f[1:] for f in features.split(",") if f.startswith("+"))
    try:
        from llvmlite import binding
        return frozenset(k for k, v in binding.get_host_cpu_features().items() if v)
    except Exception:  # no llvmlite (the numpy path), or a platform it cannot describe
        return frozenset()


def supported(isa: str) -> bool:
    """Whether the compiled code may use the integer tile's instruction set ``isa`` (one of
    :data:`ISA`)."""
    if isa not in ISA:
        raise ValueError(f"integer tile: instruction set must be one of {ISA}; got {isa!r}")
    features = host_features()
    if isa == "vnni":
        return {"avx512vnni", "avx512bw", "avx512f"} <= features
    return "avx2" in features


def _default_int_isa() -> str:
    env = os.environ.get("SPECDEC_INT_DOT", "").strip().lower()
    if env not in ("", "off", *ISA):
        raise ValueError(f"SPECDEC_INT_DOT must be one of {', '.join(ISA)} or off (or unset); got {env!r}")
    if env == "off":
        return ""
    if env:
        if not supported(env):
            raise ValueError(f"SPECDEC_INT_DOT={env}: this CPU (or NUMBA_CPU_FEATURES) lacks it")
        return env
    return next((isa for isa in ISA if supported(isa)), "")


#: The integer tile's instruction set on this CPU ("" where the float tiles multiply every weight
#: in blocks): the best this CPU has of VNNI and AVX2. ``SPECDEC_INT_DOT`` (``vnni``, ``avx2`` or
#: ``off``) in the environment overrides.
INT_ISA = _default_int_isa()
#: Whether weights in blocks are packed in strips: with the integer tile (each tile reads 16 rows,
#: and a strip's are one stream; measured faster than panels at every position count), else
#: :data:`NARROW`'s choice; ``SPECDEC_TILES`` in the environment decides both.
BLOCKS_STRIPS = bool(INT_ISA) if not os.environ.get("SPECDEC_TILES", "").strip() else None


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
#: multiplied by wide tiles (see :mod:`.kernel`): on a CPU without AVX-512 a wide tile's ``4 P``
#: accumulators of 16 floats take ``8 P`` of its 16 vector registers, so from 2 positions on they
#: spill to memory, while a narrow tile's ``P`` accumulators take ``2 P``. ``SPECDEC_TILES``
#: (``narrow`` or ``wide``) in the environment overrides.
NARROW = _default_narrow()
if BLOCKS_STRIPS is None:
    BLOCKS_STRIPS = NARROW


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
_CHUNKED_FROM = [0]


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
    chunk) the table's, or -1 where one group runs chunk by chunk (:data:`CHUNKED_FROM`); for
    narrow ones (``strips``) :data:`STRIP_AHEAD`."""
    if strips:
        return 0 if n <= 1 else _STRIP_AHEAD[0] if n <= MAX_GROUP else _STRIP_AHEAD[1]
    if 1 <= n <= MAX_GROUP and n >= _CHUNKED_FROM[0]:
        return -1
    return _AHEAD[0][n - 1] if 1 <= n <= MAX_GROUP else 0


def set_chunked_from(n: int | None = None) -> int:
    """Set the fewest positions for which one group of wide tiles runs chunk by chunk
    (:data:`CHUNKED_FROM`; ``None``: this CPU's entry, 7 or more: never); return it. A benchmark's
    knob: results do not depend on it, only speed."""
    _CHUNKED_FROM[0] = CHUNKED_FROM.get(cpu_vendor(), CHUNKED_FROM["AuthenticAMD"]) if n is None else max(2, int(n))
    return _CHUNKED_FROM[0]


def blocks_plan(n: int) -> tuple[int, int, int, int, int]:
    """How a pass over ``n`` positions multiplies weights in blocks: ``(blocks ahead a float tile
    prefetches, 4 where one group goes through scratch panels else 0, the integer tile's
    instruction set (its index in :data:`ISA`) or -1 for the float tiles, the positions an
    integer tile holds, the bytes ahead it prefetches)`` (:data:`BLOCKS_AHEAD`,
    :data:`BLOCKS_SCRATCH_FROM`, :data:`INT_ISA`, :data:`INT_FROM`, :data:`INT_GROUP`,
    :data:`INT_AHEAD`; several groups take the last entry and always use scratch)."""
    isa = _INT[0]
    use = bool(isa) and n >= INT_FROM[isa]
    return (BLOCKS_AHEAD[min(max(n, 1), MAX_GROUP) - 1], 4 if n >= BLOCKS_SCRATCH_FROM else 0,
            ISA.index(isa) if use else -1, INT_GROUP[isa] if use else 0, INT_AHEAD[isa] if use else 0)


def set_int_isa(isa: str | None = None) -> str:
    """Set the integer tile's instruction set for this process (one of :data:`ISA`, ``""`` for
    the float tiles, ``None``: :data:`INT_ISA`); return it. A benchmark's and a test's knob:
    results agree to the 8-bit activations' rounding, not bit for bit, and the weights' layout
    (:data:`BLOCKS_STRIPS`) stays as packed."""
    if isa and not supported(isa):
        raise ValueError(f"integer tile: this CPU lacks {isa!r}")
    _INT[0] = INT_ISA if isa is None else isa
    return _INT[0]


_INT = [INT_ISA]


def set_prefetch(ahead=None) -> tuple[int, ...]:
    """Set the process's prefetch distances (:data:`MAX_GROUP` ints, one per position count;
    ``None``: back to the default for this CPU); return them. A benchmark's knob: results do not
    depend on it, only speed."""
    _AHEAD[0] = _default_prefetch() if ahead is None else check_prefetch(ahead)
    return _AHEAD[0]


#: Per CPU vendor and whether it has AVX-512, the fewest positions a pass must have to use more
#: than one thread (a thread's own :func:`.pool.use_threads` is taken as it is). Other CPUs get
#: their vendor's entry with AVX-512, else AMD's with AVX-512.
PARALLEL_FROM_BY_CPU = {("AuthenticAMD", True): 8, ("AuthenticAMD", False): 1, ("GenuineIntel", True): 1}


def _parallel_from(vendor: str, avx512: bool) -> int:
    table = PARALLEL_FROM_BY_CPU
    return table.get((vendor, avx512), table.get((vendor, True), table[("AuthenticAMD", True)]))


#: This CPU's entry of :data:`PARALLEL_FROM_BY_CPU`.
PARALLEL_FROM = _parallel_from(cpu_vendor(), _vector_registers() >= 32)


set_chunked_from()
