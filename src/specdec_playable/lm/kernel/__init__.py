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
no horizontal sums, no stores until the end. :func:`.codegen.tile` generates it as LLVM IR (a
numba intrinsic), one specialisation per shape, so the compiler has nothing to get wrong; the driver
:func:`products` shares panels between threads with ``prange``.

Shapes by the number of positions:

* 1 position (a decoding step): one tile over the whole of each panel, prefetching it a few KB
  ahead into L2 where that was measured to help (:func:`prefetch_ahead`, per CPU family).
* 2 or more: equal groups of at most 6 (2-6: one, 7-12: two, 13-18: three, ...). Each panel is
  worked in chunks of :data:`CHUNK` inputs (16 KB, kept in L1) and every group runs over a chunk
  before the next, so the weights still come from memory once; the accumulators go to ``out``
  between chunks. While the groups work on one chunk they prefetch the next into L2, spread over
  the groups, so the memory stream does not wait for the arithmetic (without it 9 positions took
  1.4x as long). One group runs this way too (:data:`.tuning.CHUNKED_FROM`), so a pass's work
  only grows with its positions: pass(n) never decreases as n grows.

Weights as the model file stores them (:mod:`.blocks`: GGUF's Q4_1 and Q8_0 blocks, 4 and 8 bits
per weight and a scale per 32) go, where the CPU has AVX-512 VNNI or AVX2, through the *integer
tile* (:mod:`.codegen_int`): the pass's activations are quantised once to 8 bits per block of 32
(:mod:`.activations`), each block's products are summed in integers by the CPU's dot-product
instructions (``vpdpbusd``; ``vpmaddubsw`` and ``vpmaddwd``), four codes a lane, and the float32
scales are applied once per block. That is several times fewer instructions a weight than float32
multiply-adds, so a pass over several positions costs a few steps' arithmetic less
(docs/performance.md), at the price of the activations' rounding (about 5e-2 of the largest logit;
``benchmarks/bench_int_accuracy.py``). Elsewhere, or with ``SPECDEC_INT_DOT=off``, they go through
the float tiles (:mod:`.codegen_blocks`), which widen the codes to float32 in registers and multiply
float32 activations; from a few positions on each chunk is widened once into a float32 scratch
panel in L1 that the float32 tile multiplies (:func:`.tuning.blocks_plan`).

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
``cache=True`` stores the machine code in a folder named by a hash of the kernel's sources
(:func:`.backend.cache_dir`: under ``NUMBA_CACHE_DIR``, else the user's cache folder), so it
happens once per machine and version of the kernel. Nothing requires the cache to exist. The
model process calls :func:`warmup` as it loads.

Threads: the kernel uses :func:`threads` of them unless told otherwise (a server's model processes
are given one each, like their BLAS; see ``runtime.jobs.blas_env``), and :func:`use_threads` changes
it for the calling thread. If numba's OpenMP layer is used, idle threads sleep rather than spin
(``OMP_WAIT_POLICY=PASSIVE`` unless the environment says otherwise): a spinning pool on a shared
2-core machine takes the cores from the other process and both slow down.

The kernel's rooms: :mod:`.shapes` (lanes, panels, groups, chunks), :mod:`.tuning` (the per-CPU
tables: prefetch distances, tile width, when to use threads; their measurements are in
docs/performance.md), :mod:`.pool` (how many threads a product uses), :mod:`.layouts` (the
packed float weights), :mod:`.blocks` (weights as the file stores them: GGUF's Q4_1 and Q8_0
blocks in panel order), :mod:`.activations` (8-bit activations), :mod:`.reference` (the numpy
path, and the integer tile's arithmetic in numpy), :mod:`.codegen`, :mod:`.codegen_blocks` and
:mod:`.codegen_int` (the tiles as LLVM IR; :mod:`.irtypes` their shared types), :mod:`.drive` (compiled products over whole
matrices) and :mod:`.matmul` (the entry points).
Everything the rest of the package uses is importable from here.
"""

from __future__ import annotations

from . import blocks, reference, tuning
from .backend import HAVE_NUMBA, numba
from .blocks import QPacked, pack_blocks
from .layouts import Packed, group_positions, pack, quantize_rows
from .matmul import matmul_t, read_all, warmup
from .reference import matmul_t_numpy
from .shapes import CHUNK, LANES, MAX_GROUP, NARROW_FLAG, PANEL
from .pool import own_threads, prepare_threads, set_process_threads, threads, use_threads
from .tuning import (NARROW, PARALLEL_FROM, PARALLEL_FROM_BY_CPU, PREFETCH, STRIP_AHEAD, check_prefetch,
                     cpu_vendor, prefetch_ahead, set_prefetch)

if HAVE_NUMBA:
    from .codegen import run_narrow, run_tile, vexp
    from .drive import products

__all__ = ["CHUNK", "HAVE_NUMBA", "LANES", "MAX_GROUP", "NARROW", "NARROW_FLAG", "PANEL", "PARALLEL_FROM",
           "PARALLEL_FROM_BY_CPU", "PREFETCH", "QPacked", "STRIP_AHEAD", "Packed", "check_prefetch", "cpu_vendor",
           "group_positions", "matmul_t", "matmul_t_numpy", "numba", "own_threads", "pack", "pack_blocks",
           "prefetch_ahead", "prepare_threads", "quantize_rows", "read_all", "set_prefetch",
           "set_process_threads", "threads", "use_threads", "warmup"]
