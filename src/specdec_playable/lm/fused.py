"""The transformer blocks of a forward pass in one compiled call (numba), around the kernel's products.

:meth:`.model.Model.forward` hands the residual stream of the ``n`` new positions to
:func:`run_blocks`, which runs every block in compiled code: the RMSNorm, the fused query/key/value
product, the rotary rotation, the new keys and values written into the cache, grouped-query
attention of every new position over the cached and new positions (a mask for the new ones), the
output product and residual, the second RMSNorm, the gate/up product, SwiGLU, the down product and
residual. So a pass is two calls from Python (the blocks, then the head), not a few dozen numpy
calls per block: on this CPU that Python and numpy overhead was about a millisecond a pass, a
twentieth of a decoding step.

The products are :func:`.kernel.drive.multiply` on the packed weights (float32 panels, or the
file's Q4_1 blocks); everything between them is
loops over positions, heads and dimensions that LLVM vectorises (``exp`` is
:func:`.kernel.vexp`). The numpy path of :meth:`.model.Model.forward` computes the same pass with
numpy and is the reference the tests hold this one to.

Layouts (all float32, C-contiguous): the weights of all blocks stacked,
``(blocks, panels, in, 16)`` (:func:`.kernel.pack`); the cache ``(blocks, kv heads, capacity,
head dim)``; queries and keys rotated in the halves form (pair ``i`` at dims ``i`` and
``i + head_dim / 2``, see :mod:`.model`).
"""

from __future__ import annotations

import numpy as np

from .kernel import HAVE_NUMBA, MAX_GROUP, PANEL

__all__ = ["HAVE_NUMBA", "run_blocks"]

if HAVE_NUMBA:
    from numba import njit

    from .kernel import run_tile, vexp
    from .kernel.drive import multiply

    F32 = np.float32

    @njit(fastmath=True, error_model="numpy", cache=True)
    def _norm_grouped(x, eps, gamma, xg, base, extra):
        """``xg[g, k, j] = x[p, k] / rms(x[p]) * gamma[k]`` for position ``p`` = ``j``-th of group
        ``g`` (``gamma`` is all ones where the norm's weight is folded into the next weights)."""
        n, d = x.shape
        for p in range(n):
            ss = F32(0.0)
            for k in range(d):
                ss += x[p, k] * x[p, k]
            s = F32(1.0) / np.sqrt(ss / F32(d) + eps)
            g, j = _group_of(p, base, extra)
            for k in range(d):
                xg[g, k, j] = x[p, k] * s * gamma[k]

    @njit(inline="always")
    def _group_of(p, base, extra):
        # position p's (group, place in it), groups of base + 1 positions first (extra of them)
        big = extra * (base + 1)
        if p < big:
            return p // (base + 1), p % (base + 1)
        return extra + (p - big) // base, (p - big) % base

    @njit(fastmath=True, error_model="numpy", cache=True)
    def _attend(qkv, kv, rope, heads, og, grouping):
        """Rotate the new queries and keys, append keys and values to this block's cache
        ``kv = (keys, values, past)`` (the layouts of :class:`.model.KVCache`), and write each new
        position's attention output, grouped and transposed, into ``og``.
        ``rope = (cos, sin, allowed)``, ``heads = (query heads, kv heads, query scale)`` (the
        scale 1 where it is folded into the weights), ``grouping = (base, extra)`` of the position
        groups (see :func:`_group_of`).

        Per key/value head, its ``q = n x group`` queries (position-major) are scored against the
        keys by tile products over the packed keys (64 positions a panel), the scores turned into
        weights in place (masked, softmaxed), and the values weighted by tile products over the
        values (one panel of 64 dimensions) reading the weights row by row."""
        cache_k, cache_v, past = kv
        cos, sin, allowed = rope
        n_heads, n_kv, _ = heads
        n = qkv.shape[0]
        hd = cache_v.shape[2]
        group = n_heads // n_kv
        _rotate_and_store(qkv, (cache_k, cache_v, past), cos, sin, heads)
        end = past + n
        nq = n * group
        t_pad = -(-end // PANEL) * PANEL
        qt = np.empty((hd, nq), F32)
        s = np.empty((nq, t_pad), F32)
        o = np.empty((nq, hd), F32)
        tiles = -(-nq // MAX_GROUP)
        for h in range(n_kv):
            for q in range(nq):
                qo = (h * group + q % group) * hd
                for e in range(hd):
                    qt[e, q] = qkv[q // group, qo + e]
            kp, vh = cache_k[h], cache_v[h]
            for i in range(tiles):
                lo, hi = _bounds(nq, tiles, i)
                for b in range(t_pad // PANEL):
                    run_tile(kp, qt, s, (b * hd * PANEL, 0, hd, lo, nq, 1, lo * t_pad + b * PANEL, t_pad, 0),
                              hi - lo, 0)
            _softmax(s, end, past, allowed, group)
            for i in range(tiles):
                lo, hi = _bounds(nq, tiles, i)
                run_tile(vh, s, o, (0, 0, end, lo * t_pad, 1, t_pad, lo * hd, hd, 0), hi - lo, 0)
            for q in range(nq):
                g, j = _group_of(q // group, grouping[0], grouping[1])
                qo = (h * group + q % group) * hd
                for e in range(hd):
                    og[g, qo + e, j] = o[q, e]

    @njit(inline="always")
    def _bounds(n, parts, i):
        # part i of n items in `parts` equal parts, the first ones one longer
        base, extra = n // parts, n % parts
        lo = i * base + min(i, extra)
        return lo, lo + base + (i < extra)

    @njit(fastmath=True, error_model="numpy", cache=True)
    def _rotate_and_store(qkv, kv, cos, sin, heads):
        """Rotate the new queries and keys in place (halves form), the queries scaled by
        ``heads[2]``, and write the keys and values into the cache at ``past ..``."""
        cache_k, cache_v, past = kv
        n_heads, n_kv, q_scale = heads
        hd = cache_v.shape[2]
        half = hd // 2
        for p in range(qkv.shape[0]):
            for h in range(n_heads + n_kv):
                o = h * hd
                f = F32(q_scale) if h < n_heads else F32(1.0)
                for i in range(half):
                    a, c = qkv[p, o + i] * f, qkv[p, o + half + i] * f
                    qkv[p, o + i] = a * cos[p, i] - c * sin[p, i]
                    qkv[p, o + half + i] = a * sin[p, i] + c * cos[p, i]
            t = past + p
            for h in range(n_kv):
                ko = (n_heads + h) * hd
                vo = (n_heads + n_kv + h) * hd
                for e in range(hd):
                    cache_k[h, t // PANEL, e, t % PANEL] = qkv[p, ko + e]
                    cache_v[h, t, e] = qkv[p, vo + e]

    @njit(error_model="numpy", cache=True)  # no fast-math: the sum's grouping is fixed
    def _lane_sum(row, past, seen):
        """The sum of a query's weights in 16 lanes, then the lanes in order: the ``i``-th key it
        sees (every cached one, then the new ones ``seen`` marks, in order) goes to lane
        ``i % 16``. The grouping depends only on the keys the query sees, not on where they sit in
        the pass, so a position's sum is the same bits in a plain step, a chain or a tree."""
        lanes = np.zeros(16, F32)
        full = past // 16 * 16
        for c in range(0, full, 16):
            for i in range(16):
                lanes[i] += row[c + i]
        for t in range(full, past):
            lanes[t % 16] += row[t]
        i = past
        for t in range(seen.shape[0]):
            if seen[t]:
                lanes[i % 16] += row[past + t]
                i += 1
        total = F32(0.0)
        for j in range(16):
            total += lanes[j]
        return total

    @njit(fastmath=True, error_model="numpy", cache=True)
    def _softmax(s, end, past, allowed, group):
        """Turn each query's scores ``s[q, :end]`` into its attention weights, in place: query
        ``q`` belongs to new position ``q // group``, which sees every cached position and the new
        ones ``allowed`` lets it (the others weigh 0). The weights' sum is taken in fixed lanes
        (:func:`_lane_sum`), so a position's weights are the same bits whatever else its pass holds,
        a plain step, a chain or a tree (an 8-bit activation downstream would turn a last-bit
        difference into a different code, and greedy speculation would no longer write plain
        decoding's tokens)."""
        n = end - past
        for q in range(s.shape[0]):
            p = q // group
            top = F32(-np.inf)
            for t in range(past):  # the cached positions: all seen (loops LLVM vectorises)
                top = s[q, t] if s[q, t] > top else top
            for t in range(n):
                if allowed[p, t] and s[q, past + t] > top:
                    top = s[q, past + t]
            for t in range(past):
                s[q, t] = vexp(s[q, t] - top)
            for t in range(n):
                s[q, past + t] = vexp(s[q, past + t] - top) if allowed[p, t] else F32(0.0)
            inv = F32(1.0) / _lane_sum(s[q], past, allowed[p, :n])
            for t in range(end):
                s[q, t] *= inv

    @njit(fastmath=True, error_model="numpy", cache=True)
    def _swiglu_grouped(gu, d_ff, ag, base, extra):
        """``ag[g, k, j] = silu(gate[p, k]) * up[p, k]``, grouped and transposed like the inputs."""
        n = gu.shape[0]
        row = np.empty(d_ff, F32)
        for p in range(n):
            for k in range(d_ff):
                gate = gu[p, k]
                row[k] = gate / (F32(1.0) + vexp(-gate)) * gu[p, d_ff + k]
            g, j = _group_of(p, base, extra)
            for k in range(d_ff):
                ag[g, k, j] = row[k]

    @njit(fastmath=True, error_model="numpy", cache=True)
    def _add(x, y):
        n, d = x.shape
        for p in range(n):
            for k in range(d):
                x[p, k] += y[p, k]

    @njit(error_model="numpy", cache=True)
    def run_blocks(x, weights, kv, rope, dims, capture):
        """Run blocks ``0 .. depth - 1`` on the residual stream ``x`` (n, d), in place.

        * ``weights = (qkv, o, gu, down, norms)``: the stacked packed weights (float32 panels or
          Q4_1 blocks, each kind its own), and each block's two RMSNorm weights ``(blocks, 2, d)``
          (all ones where they are folded into the weights);
        * ``kv = (keys, values, past)``: the cache (blocks, kv heads, capacity, head dim) receives
          the new keys and values at ``past .. past + n - 1``;
        * ``rope = (cos, sin, allowed)``: the new positions' rotary angles (n, head_dim / 2), and
          ``allowed[i, j]`` lets new position ``i`` see new position ``j`` (every cached one is
          visible);
        * ``dims = (depth, (query heads, kv heads, query scale), eps, ahead, narrow, d_ff)``,
          ``ahead`` how the products prefetch (float panels, blocks) and whether one group of
          blocks goes through scratch panels (:func:`.kernel.prefetch_ahead`,
          :func:`.kernel.tuning.blocks_plan`), ``narrow``
          whether they use narrow tiles (:data:`.kernel.NARROW`);
        * ``capture = (slots, kept)``: after block ``m`` the stream is copied into
          ``kept[slots[m]]`` where ``slots[m] >= 0``.
        """
        w_qkv, w_o, w_gu, w_down, norms = weights
        cache_k, cache_v, past = kv
        depth, heads, eps, ahead, narrow, d_ff = dims
        slots, kept = capture
        n, d = x.shape
        groups = -(-n // MAX_GROUP)
        gs = -(-n // groups)
        base = n // groups
        extra = n - base * groups
        xg = np.zeros((groups, d, gs), F32)
        ag = np.zeros((groups, d_ff, gs), F32)
        qkv = np.empty((n, w_qkv.shape[1] * PANEL), F32)
        gu = np.empty((n, w_gu.shape[1] * PANEL), F32)
        y = np.empty((n, w_o.shape[1] * PANEL), F32)
        eps = F32(eps)
        for layer in range(depth):
            _norm_grouped(x, eps, norms[layer, 0], xg, base, extra)
            multiply(xg, w_qkv[layer], n, qkv, ahead, narrow)
            _attend(qkv, (cache_k[layer], cache_v[layer], past), rope, heads, xg, (base, extra))
            multiply(xg, w_o[layer], n, y, ahead, narrow)
            _add(x, y)
            _norm_grouped(x, eps, norms[layer, 1], xg, base, extra)
            multiply(xg, w_gu[layer], n, gu, ahead, narrow)
            _swiglu_grouped(gu, d_ff, ag, base, extra)
            multiply(ag, w_down[layer], n, y, ahead, narrow)
            _add(x, y)
            if slots[layer + 1] >= 0:
                kept[slots[layer + 1], :, :] = x
