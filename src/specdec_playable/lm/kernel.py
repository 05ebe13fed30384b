"""``x @ w.T`` for a few positions, reading each weight row from memory once per call.

Decoding and verifying with a small model on a CPU is memory-bound: a pass over ``n`` new positions
multiplies every weight matrix by ``n`` activation vectors, and for ``n`` up to about 16 streaming the
weights from memory takes longer than the arithmetic. numpy does not exploit that. A matrix-vector
product per position re-reads the weight ``n`` times (from cache at best), and OpenBLAS's
matrix-matrix product packs the whole weight into its own layout on every call, which costs about as
much as a second pass over it.

:func:`specdec_playable.lm.model.linear` runs every product of the forward pass through
:func:`matmul_t`. Its kernel (numba, ``parallel=True``, ``fastmath=True``) works on *register tiles*: it takes
:data:`ROWS` rows of the weight at a time and, while they are in L1/L2 cache, multiplies them by the
positions two at a time, holding the ``ROWS x 2`` partial dot products in scalar accumulators that
LLVM turns into vector registers (the inner loop over the input dimension is vectorised, with
``fastmath`` allowing the reordered sum). A last odd position uses a ``ROWS x 1`` tile, so 5
positions are not padded to 8. A single position (a decoding step) uses 16-row tiles: there is no
reuse to exploit, and more independent row streams read memory faster. Row blocks are shared
between threads with ``prange``.

So each weight element crosses the memory bus once per call, for any ``n``; the cost of more
positions is arithmetic on data already in cache. For many positions (prefill of a long prompt)
BLAS's blocked matrix-matrix product is faster, and :func:`matmul_t` hands ``n > MAX_N`` to
``x @ w.T``.

numba is optional. Without it (or with ``SPECDEC_NO_NUMBA=1`` in the environment) every call uses the
numpy path described in :func:`matmul_t_numpy`; results agree with the kernel to float32 rounding
(the sum is taken in a different order).

The first call compiles the kernel (about 2 s); ``cache=True`` stores the machine code next to this
file (or in numba's user cache directory when that is not writable), so it happens once per machine.
Nothing requires the cache to exist. The model process calls :func:`warmup` as it loads.

Threads: the kernel uses :func:`threads` of them (a server's model processes are given one each,
like their BLAS; see ``serve.jobs.blas_env``). If numba's OpenMP layer is used, idle threads sleep
rather than spin (``OMP_WAIT_POLICY=PASSIVE`` unless the environment says otherwise): a spinning
pool on a shared 2-core machine takes the cores from the other process and both slow down.
"""

from __future__ import annotations

import os

import numpy as np

__all__ = ["matmul_t", "matmul_t_numpy", "HAVE_NUMBA", "MAX_N", "ROWS", "threads", "warmup"]

F32 = np.float32

#: Above this many positions :func:`matmul_t` uses ``x @ w.T`` (BLAS's blocked product wins there).
MAX_N = 32

#: Weight rows per register tile. 12 rows x 2 positions = 24 accumulators: enough independent
#: memory streams and FMA chains to keep the core busy, few enough for the 32 vector registers.
ROWS = 12

#: numpy fallback: up to this many positions, matrix-vector products over blocks of rows.
_GEMV_MAX_N = 6
_GEMV_ROWS = 1024


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


def matmul_t_numpy(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``x @ w.T`` with numpy only: the fallback of :func:`matmul_t`.

    One position: one matrix-vector product. Up to 6 positions: matrix-vector products over blocks
    of 1024 rows, so each block comes from memory once and from cache for the other positions. More:
    BLAS's matrix-matrix product.
    """
    n = x.shape[0]
    if n == 1:
        return (w @ x[0])[None, :]
    if n > _GEMV_MAX_N:
        return x @ w.T
    out = np.empty((n, w.shape[0]), F32)
    for s in range(0, w.shape[0], _GEMV_ROWS):
        block = w[s:s + _GEMV_ROWS]
        for j in range(n):
            np.dot(block, x[j], out=out[j, s:s + _GEMV_ROWS])
    return out


try:
    if os.environ.get("SPECDEC_NO_NUMBA"):
        raise ImportError("numba disabled by SPECDEC_NO_NUMBA")
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    # a layer that may be entered from two Python threads at once (numba's workqueue may not)
    os.environ.setdefault("NUMBA_THREADING_LAYER", "threadsafe")
    import numba
    from numba import njit, prange
    HAVE_NUMBA = True
except ImportError:  # pragma: no cover - exercised when numba is absent
    numba = None
    HAVE_NUMBA = False


if HAVE_NUMBA:
    @njit(fastmath=True, cache=True, inline="always")
    def _tile_12x2(x, w, out, r, p, k_in):
        # 12 weight rows (r..r+11) times 2 positions (p, p+1): 24 scalar accumulators, which
        # LLVM keeps in vector registers; a_i and b_i share w_i, loaded once for both positions
        a0 = a1 = a2 = a3 = a4 = a5 = a6 = a7 = a8 = a9 = a10 = a11 = F32(0.0)
        b0 = b1 = b2 = b3 = b4 = b5 = b6 = b7 = b8 = b9 = b10 = b11 = F32(0.0)
        for k in range(k_in):
            u, v = x[p, k], x[p + 1, k]
            w0, w1, w2, w3 = w[r, k], w[r + 1, k], w[r + 2, k], w[r + 3, k]
            w4, w5, w6, w7 = w[r + 4, k], w[r + 5, k], w[r + 6, k], w[r + 7, k]
            w8, w9, w10, w11 = w[r + 8, k], w[r + 9, k], w[r + 10, k], w[r + 11, k]
            a0, b0 = a0 + w0 * u, b0 + w0 * v
            a1, b1 = a1 + w1 * u, b1 + w1 * v
            a2, b2 = a2 + w2 * u, b2 + w2 * v
            a3, b3 = a3 + w3 * u, b3 + w3 * v
            a4, b4 = a4 + w4 * u, b4 + w4 * v
            a5, b5 = a5 + w5 * u, b5 + w5 * v
            a6, b6 = a6 + w6 * u, b6 + w6 * v
            a7, b7 = a7 + w7 * u, b7 + w7 * v
            a8, b8 = a8 + w8 * u, b8 + w8 * v
            a9, b9 = a9 + w9 * u, b9 + w9 * v
            a10, b10 = a10 + w10 * u, b10 + w10 * v
            a11, b11 = a11 + w11 * u, b11 + w11 * v
        out[p, r], out[p, r + 1], out[p, r + 2] = a0, a1, a2
        out[p, r + 3], out[p, r + 4], out[p, r + 5] = a3, a4, a5
        out[p, r + 6], out[p, r + 7], out[p, r + 8] = a6, a7, a8
        out[p, r + 9], out[p, r + 10], out[p, r + 11] = a9, a10, a11
        out[p + 1, r], out[p + 1, r + 1], out[p + 1, r + 2] = b0, b1, b2
        out[p + 1, r + 3], out[p + 1, r + 4], out[p + 1, r + 5] = b3, b4, b5
        out[p + 1, r + 6], out[p + 1, r + 7], out[p + 1, r + 8] = b6, b7, b8
        out[p + 1, r + 9], out[p + 1, r + 10], out[p + 1, r + 11] = b9, b10, b11

    @njit(fastmath=True, cache=True, inline="always")
    def _tile_12x1(x, w, out, r, p, k_in):
        # 12 weight rows times 1 position: the odd last position, and single-position decoding
        a0 = a1 = a2 = a3 = a4 = a5 = a6 = a7 = a8 = a9 = a10 = a11 = F32(0.0)
        for k in range(k_in):
            u = x[p, k]
            a0 += w[r, k] * u
            a1 += w[r + 1, k] * u
            a2 += w[r + 2, k] * u
            a3 += w[r + 3, k] * u
            a4 += w[r + 4, k] * u
            a5 += w[r + 5, k] * u
            a6 += w[r + 6, k] * u
            a7 += w[r + 7, k] * u
            a8 += w[r + 8, k] * u
            a9 += w[r + 9, k] * u
            a10 += w[r + 10, k] * u
            a11 += w[r + 11, k] * u
        out[p, r] = a0
        out[p, r + 1] = a1
        out[p, r + 2] = a2
        out[p, r + 3] = a3
        out[p, r + 4] = a4
        out[p, r + 5] = a5
        out[p, r + 6] = a6
        out[p, r + 7] = a7
        out[p, r + 8] = a8
        out[p, r + 9] = a9
        out[p, r + 10] = a10
        out[p, r + 11] = a11

    @njit(fastmath=True, cache=True, inline="always")
    def _tile_16x1(x, w, out, r, k_in):
        # 16 weight rows times the single position of a decoding step: 16 independent streams
        a0 = a1 = a2 = a3 = a4 = a5 = a6 = a7 = F32(0.0)
        a8 = a9 = a10 = a11 = a12 = a13 = a14 = a15 = F32(0.0)
        for k in range(k_in):
            u = x[0, k]
            a0 += w[r, k] * u
            a1 += w[r + 1, k] * u
            a2 += w[r + 2, k] * u
            a3 += w[r + 3, k] * u
            a4 += w[r + 4, k] * u
            a5 += w[r + 5, k] * u
            a6 += w[r + 6, k] * u
            a7 += w[r + 7, k] * u
            a8 += w[r + 8, k] * u
            a9 += w[r + 9, k] * u
            a10 += w[r + 10, k] * u
            a11 += w[r + 11, k] * u
            a12 += w[r + 12, k] * u
            a13 += w[r + 13, k] * u
            a14 += w[r + 14, k] * u
            a15 += w[r + 15, k] * u
        out[0, r] = a0
        out[0, r + 1] = a1
        out[0, r + 2] = a2
        out[0, r + 3] = a3
        out[0, r + 4] = a4
        out[0, r + 5] = a5
        out[0, r + 6] = a6
        out[0, r + 7] = a7
        out[0, r + 8] = a8
        out[0, r + 9] = a9
        out[0, r + 10] = a10
        out[0, r + 11] = a11
        out[0, r + 12] = a12
        out[0, r + 13] = a13
        out[0, r + 14] = a14
        out[0, r + 15] = a15

    @njit(parallel=True, fastmath=True, cache=True)
    def _matvec_tiles(x, w, out):
        """out[0] = w @ x[0] for one position (x, out of shape (1, in), (1, out))."""
        k_in = x.shape[1]
        m = w.shape[0]
        blocks = m // 16
        for b in prange(blocks):
            _tile_16x1(x, w, out, b * 16, k_in)
        for r in range(blocks * 16, m):
            acc = F32(0.0)
            for k in range(k_in):
                acc += w[r, k] * x[0, k]
            out[0, r] = acc

    @njit(parallel=True, fastmath=True, cache=True)
    def _matmul_t_tiles(x, w, out):
        """out[:] = x @ w.T for C-contiguous float32 x (n, in), w (out, in), out (n, out)."""
        n, k_in = x.shape
        m = w.shape[0]
        blocks = m // 12
        for b in prange(blocks):
            r = b * 12
            p = 0
            while p + 2 <= n:  # all positions while these 12 rows are in cache
                _tile_12x2(x, w, out, r, p, k_in)
                p += 2
            if p < n:
                _tile_12x1(x, w, out, r, p, k_in)
        for r in range(blocks * 12, m):  # the last m % 12 rows, one dot product each
            for p in range(n):
                acc = F32(0.0)
                for k in range(k_in):
                    acc += w[r, k] * x[p, k]
                out[p, r] = acc


def matmul_t(x: np.ndarray, w: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """Return ``x @ w.T`` in float32, reading each row of ``w`` from memory once.

    Parameters
    ----------
    x : numpy.ndarray
        float32 activations, shape ``(n, in)``; any strides (copied to C order if needed: it is
        small).
    w : numpy.ndarray
        float32 weight stored ``(out, in)``, as a linear layer keeps it. It should be C-contiguous;
        if it is not, the product falls back to numpy rather than copy the weight on every call.
    out : numpy.ndarray, optional
        C-contiguous float32 array of shape ``(n, out)`` to write into (only used by the kernel
        path; the numpy paths return a new array and ``out`` receives a copy).

    Returns
    -------
    numpy.ndarray
        float32, shape ``(n, out)``, C-contiguous.

    Notes
    -----
    - ``1 <= n <= MAX_N`` with numba present: the register-tile kernel on :func:`threads` threads.
    - ``n > MAX_N``: ``x @ w.T`` (BLAS), fastest for prefill.
    - numba absent: :func:`matmul_t_numpy`.

    The kernel sums in a different order from BLAS; against a float64 reference its largest error,
    relative to the largest output, is about 3e-7 at the model's shapes (BLAS: about 7e-7).
    Tests use 1e-5.
    """
    if x.ndim != 2 or w.ndim != 2 or x.shape[1] != w.shape[1]:
        raise ValueError(f"matmul_t: shapes {x.shape} and {w.shape} do not match (n, in), (out, in)")
    if x.dtype != F32 or w.dtype != F32:
        raise TypeError(f"matmul_t: float32 only, got {x.dtype} and {w.dtype}")
    n = x.shape[0]
    if n == 0 or not HAVE_NUMBA or n > MAX_N or not w.flags.c_contiguous:
        y = np.ascontiguousarray(matmul_t_numpy(x, w), dtype=F32)
        if out is not None:
            out[...] = y
            return out
        return y
    x = np.ascontiguousarray(x)
    if out is None:
        out = np.empty((n, w.shape[0]), F32)
    elif out.shape != (n, w.shape[0]) or out.dtype != F32 or not out.flags.c_contiguous:
        raise ValueError("matmul_t: out must be C-contiguous float32 of shape (n, out)")
    t = _THREADS
    if numba.get_num_threads() != t:  # the setting is per calling thread in numba
        numba.set_num_threads(t)
    if n == 1:
        _matvec_tiles(x, w, out)
    else:
        _matmul_t_tiles(x, w, out)
    return out


_THREADS = 1
if HAVE_NUMBA:
    _THREADS = max(1, min(threads(), numba.config.NUMBA_NUM_THREADS))


def warmup() -> float:
    """Compile (or load from cache) the kernel now; return the seconds it took."""
    import time
    t0 = time.perf_counter()
    if HAVE_NUMBA:
        matmul_t(np.zeros((1, 16), F32), np.zeros((19, 16), F32))
        matmul_t(np.zeros((3, 16), F32), np.zeros((13, 16), F32))
    return time.perf_counter() - t0
