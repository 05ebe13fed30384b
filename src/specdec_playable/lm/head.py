"""The draft head: one small trained layer that imitates the model from its features (the last layer's,
fused with lower layers' where the asset says so).

EAGLE's idea (Li, Wei, Zhang and Zhang, 2024): the target's final-normed feature ``f_t`` at
position ``t`` (the vector its head reads) and the embedding of the next token ``x_{t+1}`` go in;
the head predicts the feature ``f_{t+1}`` the target would compute there, and reads it out through
the target's own tied head. Drafting ``k`` tokens feeds its own predicted features back in:

    f_{L-2}, x_{L-1} -> f^_{L-1} -> x^_L;   f^_{L-1}, x^_L -> f^_L -> x^_{L+1};   ...

A head fed several layers (EAGLE-3, Li et al. 2025) reads, at the context's real positions, not
``f_t`` alone but ``u_t = fuse [rms(l_t), rms(m_t), ..., f_t]``: the residual streams after some of
the target's lower blocks (``layers`` in the asset, captured by the verify passes) fused with the
last one by a learned linear map. Where it drafts further it reads its own previous output in
place of ``u`` (what it was trained on: the training-time test).

The layer (``assets/lm/draft_head.npz``, made by ``scripts/train_draft_head.py``; provenance in
``assets/lm/draft_head.json``): a linear map of ``[rms(u_t), rms(embed(x_{t+1}))]`` (1152 -> 576),
then one pre-norm block (causal attention over the head's own earlier positions with rotary
positions, if the asset has it, and a SwiGLU feed-forward; a deeper head stacks more such blocks,
block ``b``'s matrices named with the suffix ``_b``), then an RMSNorm. The readout scores
only the ``N`` tokens the model writes most (FR-Spec's reduced vocabulary), so one draft step
streams a few MB of weights, not the 113 MB of the full head; the draft's q is zero elsewhere.

Serving is numpy and the target's kernel: the head's matrices and its readout rows are packed
for :func:`.kernel.matmul_t` in eight bits (int8 with a scale per row, quantized at load from
the float16 the asset stores), so a draft step streams a quarter of float32's bytes, and sums in
float32 (``precision="half"`` keeps float16, twice the bytes, for comparison). With
numba, the steps between the layer's products are compiled (a few calls, not a few dozen numpy
ones); the numpy layer is the reference and serves where numba is absent.

The target's features come from the decoder (``observe``, called with the hidden states of the
prompt's prefill and of each verify pass's kept positions, and the residual streams of the blocks
the run's ``capture`` names); a caller that does not provide them is served anyway: the head then
runs the target itself to get them.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field

import numpy as np

from ..shipped import asset_path
from . import sampling
from .drafts import EMPTY, Proposal
from .kernel import HAVE_NUMBA, Packed, matmul_t, pack

ASSET = "lm/draft_head.npz"
META = "lm/draft_head.json"
SCRIPT = "scripts/train_draft_head.py"
F32 = np.float32

_LOCK = threading.Lock()
_HEADS: dict = {}


class HeadNotInstalled(FileNotFoundError):
    """The draft head's weights are not in ``assets/``; the message names the script that makes them."""


#: The most blocks a head may stack (the first one's weights are named plainly, block ``b``'s
#: carry the suffix ``_b``: :func:`block_names`).
MAX_BLOCKS = 4
#: One block's matrices: the attention's (absent in a feed-forward-only head) and the SwiGLU's.
BLOCK = ("wqkv", "wo", "wgu", "wdown")


def block_names(b: int) -> tuple[str, ...]:
    """The asset's names of block ``b``'s matrices (:data:`BLOCK`; ``wqkv``, ``wqkv_1``, ...)."""
    return BLOCK if b == 0 else tuple(f"{name}_{b}" for name in BLOCK)


def count_blocks(names) -> int:
    """How many blocks the weights named ``names`` (an asset's arrays or their names) stack."""
    return sum(block_names(b)[2] in names for b in range(MAX_BLOCKS))


#: The head's matrices, stored ``(out, in)`` and packed for the kernel.
MATRICES = ("fuse", "fc") + tuple(n for b in range(MAX_BLOCKS) for n in block_names(b))
#: Shape numbers an asset stores as small arrays.
SHAPE = ("n_heads", "window", "rope_base", "eps", "layers")
#: How the head's matrices and readout rows are kept for the kernel: ``"int8"`` (eight bits and a
#: scale per row, a quarter of float32's bytes; what drafting uses) or ``"half"`` (float16, as the
#: asset stores them; a benchmark's comparison).
PRECISIONS = ("int8", "half")


@dataclass(frozen=True, eq=False)
class HeadWeights:
    """The head's float32 weights, read-only (see the module docstring), and its shape. The
    matrices (:data:`MATRICES`) are :class:`.kernel.Packed`; the rest plain arrays."""

    arrays: dict
    n_heads: int
    window: int
    rope_base: float
    eps: float
    #: How the matrices and the readout rows are packed (:data:`PRECISIONS`).
    precision: str = "int8"
    #: The readout rows per model embedding (see :func:`readout`), filled on first use.
    readouts: list = field(default_factory=list, repr=False)

    @property
    def attention(self) -> bool:
        return "wqkv" in self.arrays

    @property
    def n_blocks(self) -> int:
        """How many blocks the layer stacks (one, or more for a deeper head)."""
        return count_blocks(self.arrays)

    def block(self, b: int) -> tuple:
        """Block ``b``'s matrices ``(wqkv, wo, wgu, wdown)`` (the first two None without attention)."""
        return tuple(self.arrays.get(name) for name in block_names(b))

    @property
    def vocab(self) -> np.ndarray:
        return self.arrays["vocab"]

    @property
    def layers(self) -> tuple[int, ...]:
        """Block counts whose residual streams the head fuses with the last layer's feature
        (empty: the last layer alone)."""
        return tuple(int(m) for m in self.arrays.get("layers", ()))

    def __getitem__(self, name: str) -> np.ndarray:
        return self.arrays[name]


def _check_precision(precision: str) -> str:
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {list(PRECISIONS)}; got {precision!r}")
    return precision


def _pack(a: np.ndarray, precision: str) -> Packed:
    """``a`` packed for the kernel in the head's ``precision``."""
    return pack(a, int8=True) if precision == "int8" else pack(a, half=True)


def weights_from_arrays(arrays: dict, precision: str = "int8") -> HeadWeights:
    """Weights from the asset's arrays (float16 or float32; shape numbers stored as arrays), the
    matrices packed in ``precision`` (:data:`PRECISIONS`): int8 streams half the bytes of the
    float16 the asset stores, a quarter of float32's."""
    _check_precision(precision)
    out = {}
    for name, a in arrays.items():
        if name in SHAPE[:4]:
            continue
        if name in MATRICES:
            a = np.asarray(a)
            a = a if a.dtype == np.float16 else a.astype(F32)
            out[name] = _pack(a, precision)
            continue
        a = np.ascontiguousarray(a, dtype=np.int64 if name in ("vocab", "layers") else F32)
        a.setflags(write=False)
        out[name] = a
    _check_blocks(out, arrays)
    layers = out.get("layers", np.zeros(0, np.int64))
    if ("fuse" in out) != (layers.size > 0) or (
            "fuse" in out and out["fuse"].shape[1] != out["fc"].shape[1] // 2 * (layers.size + 1)):
        raise ValueError("a head fed several layers needs both 'fuse' (d, d x (layers + 1)) and "
                         "'layers'; this asset has " + ", ".join(sorted(arrays)))
    n_heads = int(np.asarray(arrays["n_heads"]).reshape(-1)[0])
    rope_base = float(np.asarray(arrays["rope_base"]).reshape(-1)[0])
    if "wo" in out:  # the attention's rotary frequencies, made once
        hd = out["wo"].shape[0] // n_heads
        inv = (rope_base ** (-np.arange(0, hd, 2, dtype=np.float64) / hd)).astype(F32)
        inv.setflags(write=False)
        out["inv_freq"] = inv
    return HeadWeights(out, n_heads=n_heads, window=int(np.asarray(arrays["window"]).reshape(-1)[0]),
                       rope_base=rope_base, eps=float(np.asarray(arrays["eps"]).reshape(-1)[0]),
                       precision=precision)


def _check_blocks(out: dict, arrays: dict) -> None:
    """Blocks ``0 .. n - 1`` each whole (all with attention or none without), nothing else."""
    attention = "wqkv" in out
    n = 0
    while n < MAX_BLOCKS and block_names(n)[2] in out:
        n += 1
    want = {name for b in range(n) for name in block_names(b)[0 if attention else 2:]}
    if n < 1 or want != set(out) & {name for b in range(MAX_BLOCKS) for name in block_names(b)}:
        raise ValueError(f"a head's blocks must be whole and numbered from 0 (at most {MAX_BLOCKS}: "
                         f"{', '.join(BLOCK)}, then the same with _1, _2, ...); this asset has "
                         + ", ".join(sorted(arrays)))


def load_head(path=None, precision: str = "int8") -> HeadWeights:
    """The shipped head (loaded once per process and precision, shared read-only), or the file at
    ``path``, its matrices packed in ``precision`` (:data:`PRECISIONS`).

    Raises
    ------
    HeadNotInstalled
        When the asset is missing (a one-line message naming the script that makes it).
    """
    key = ("shipped" if path is None else str(path), _check_precision(precision))
    if key in _HEADS:
        return _HEADS[key]
    with _LOCK:
        if key not in _HEADS:
            try:
                file = asset_path(ASSET) if path is None else path
            except FileNotFoundError:
                raise HeadNotInstalled(f"the draft head ({ASSET}) is not installed; make it with "
                                       f"`python {SCRIPT}`") from None
            with np.load(file) as z:
                _HEADS[key] = weights_from_arrays({name: z[name] for name in z.files}, precision)
        return _HEADS[key]


def head_meta() -> dict:
    """The shipped head's provenance record (``assets/lm/draft_head.json``)."""
    try:
        return json.loads(asset_path(META).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise HeadNotInstalled(f"the draft head's provenance ({META}) is not installed; make it "
                               f"with `python {SCRIPT}`") from None


def readout(model, w: HeadWeights) -> Packed:
    """The rows of the target's tied head for the head's vocabulary (packed for the kernel in the
    head's precision, like its own matrices: int8 streams a quarter of float32's bytes a guess;
    shared, read-only), kept with the weights they were made for."""
    embed = model.weights.embed
    for source, rows in w.readouts:
        if source is embed:
            return rows
    with _LOCK:
        for source, rows in w.readouts:
            if source is embed:
                return rows
        rows = _pack(np.ascontiguousarray(embed[w.vocab]), w.precision)
        w.readouts.append((embed, rows))
        return rows


# ---------------------------------------------------------------------------------- the layer

def rms(x: np.ndarray, eps: float) -> np.ndarray:
    """RMS-normalise each row (no weight)."""
    ms = np.einsum("ij,ij->i", x, x) * F32(1.0 / x.shape[1])
    return x * (F32(1.0) / np.sqrt(ms + F32(eps)))[:, None]


if HAVE_NUMBA:
    from numba import njit

    @njit(fastmath=True, error_model="numpy", cache=True)
    def _norm_into(x, eps, out, at):
        """``out[p, at:at + d] = rms(x[p])`` for every position ``p`` of ``x`` (n, d)."""
        n, d = x.shape
        for p in range(n):
            ss = F32(0.0)
            for k in range(d):
                ss += x[p, k] * x[p, k]
            s = F32(1.0) / np.sqrt(ss * F32(1.0 / d) + eps)
            for k in range(d):
                out[p, at + k] = x[p, k] * s

    @njit(fastmath=True, error_model="numpy", cache=True)
    def _attend_new(qkv, kv, rope, o):
        """``n`` new head positions ``past .. past + n - 1``: rotate their queries and keys, append
        their keys and values to the cache, and write each one's attention output over the
        positions it sees (itself and the ``window - 1`` before it) into ``o`` (n, d).
        ``kv = (keys, values, past)`` in the layouts of :class:`HeadCache`, ``rope = (window,
        inv_freq)``; ``1/sqrt(hd)`` is folded into the queries."""
        cache_k, cache_v, past = kv
        window, inv_freq = rope
        n = qkv.shape[0]
        nh, _, hd = cache_k.shape
        half = hd // 2
        d = nh * hd
        cos = np.empty((n, half), F32)
        sin = np.empty((n, half), F32)
        for p in range(n):
            for i in range(half):
                ang = F32(past + p) * inv_freq[i]
                cos[p, i], sin[p, i] = np.cos(ang), np.sin(ang)
        for p in range(n):
            t = past + p
            for h in range(nh):
                ko, vo = d + h * hd, 2 * d + h * hd
                for i in range(half):
                    a, b = qkv[p, ko + i], qkv[p, ko + half + i]
                    cache_k[h, t, i] = a * cos[p, i] - b * sin[p, i]
                    cache_k[h, t, half + i] = a * sin[p, i] + b * cos[p, i]
                for e in range(hd):
                    cache_v[h, t, e] = qkv[p, vo + e]
        q = np.empty(hd, F32)
        w = np.empty(min(window, past + n), F32)
        for p in range(n):
            t = past + p
            lo = max(0, t - window + 1)
            for h in range(nh):
                qo = h * hd
                for i in range(half):
                    a, b = qkv[p, qo + i], qkv[p, qo + half + i]
                    q[i] = a * cos[p, i] - b * sin[p, i]
                    q[half + i] = a * sin[p, i] + b * cos[p, i]
                top = F32(-np.inf)
                for j in range(t - lo + 1):
                    acc = F32(0.0)
                    for e in range(hd):
                        acc += q[e] * cache_k[h, lo + j, e]
                    w[j] = acc
                    top = max(top, acc)
                total = F32(0.0)
                for j in range(t - lo + 1):
                    w[j] = np.exp(w[j] - top)
                    total += w[j]
                inv = F32(1.0) / total
                for e in range(hd):
                    o[p, qo + e] = F32(0.0)
                for j in range(t - lo + 1):
                    wj = w[j] * inv
                    for e in range(hd):
                        o[p, qo + e] += wj * cache_v[h, lo + j, e]

    @njit(fastmath=True, error_model="numpy", cache=True)
    def _swiglu(gu, out):
        """``out = silu(gate) * up`` of ``gu = [gate, up]`` (n, 2 d_ff), row by row."""
        m = out.shape[1]
        for p in range(out.shape[0]):
            for i in range(m):
                g = gu[p, i]
                out[p, i] = g / (F32(1.0) + np.exp(-g)) * gu[p, m + i]

    @njit(fastmath=True, error_model="numpy", cache=True)
    def _add_norm(x, y, eps, scale):
        """``x += y``; return ``rms(x)`` row by row, times ``scale`` (d,) unless it is empty."""
        n, d = x.shape
        out = np.empty((n, d), F32)
        for p in range(n):
            ss = F32(0.0)
            for k in range(d):
                x[p, k] += y[p, k]
                ss += x[p, k] * x[p, k]
            s = F32(1.0) / np.sqrt(ss * F32(1.0 / d) + eps)
            for k in range(d):
                out[p, k] = x[p, k] * s * (scale[k] if scale.size else F32(1.0))
        return out


class HeadCache:
    """Keys and values of the head's attention for the positions fed so far (per run): ``k`` and
    ``v`` are ``(blocks, heads, capacity, head dim)``, every block's at the same positions."""

    def __init__(self, w: HeadWeights, capacity: int = 256) -> None:
        hd = w["wo"].shape[0] // w.n_heads if w.attention else 1
        self.k = np.zeros((w.n_blocks, w.n_heads, max(capacity, 1), hd), F32)
        self.v = np.zeros_like(self.k)
        self.length = 0

    def reserve(self, n_new: int) -> None:
        need = self.length + n_new
        if need > self.k.shape[2]:
            cap = max(need, 2 * self.k.shape[2])
            for name in ("k", "v"):
                old = getattr(self, name)
                new = np.zeros((*old.shape[:2], cap, old.shape[3]), F32)
                new[:, :, :self.length] = old[:, :, :self.length]
                setattr(self, name, new)


def _attend(w: HeadWeights, x: np.ndarray, cache: HeadCache, b: int) -> np.ndarray:
    """Block ``b``'s causal attention of ``n`` new head positions over its cache (window
    ``w.window``), their keys and values written at ``cache.length ...`` (room reserved)."""
    wqkv, wo = w.block(b)[:2]
    n, d = x.shape
    nh = w.n_heads
    hd = d // nh
    half = hd // 2
    past = cache.length
    pos = (past + np.arange(n)).astype(F32)
    ang = pos[:, None] * w["inv_freq"][None, :]
    cos, sin = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]
    qkv = matmul_t(rms(x, w.eps), wqkv)  # attention norm and 1/sqrt(hd) folded into wqkv
    qk = qkv[:, :2 * d].reshape(n, 2 * nh, hd)
    a, c = qk[..., :half], qk[..., half:]
    rot = np.concatenate((a * cos - c * sin, a * sin + c * cos), axis=-1)
    end = past + n
    keys, values = cache.k[b], cache.v[b]
    keys[:, past:end] = rot[:, nh:].transpose(1, 0, 2)
    values[:, past:end] = qkv[:, 2 * d:].reshape(n, nh, hd).transpose(1, 0, 2)
    lo = max(0, end - n - w.window + 1)
    s = rot[:, :nh].transpose(1, 0, 2) @ keys[:, lo:end].transpose(0, 2, 1)  # (nh, n, T)
    if n > 1:  # one new position (a drafted guess) sees every key from lo on: nothing to mask
        key_pos = np.arange(lo, end)
        q_pos = np.arange(past, end)
        ok = (key_pos[None, :] <= q_pos[:, None]) & (key_pos[None, :] > q_pos[:, None] - w.window)
        s = np.where(ok[None], s, -np.inf)
    s -= s.max(axis=-1, keepdims=True)
    np.exp(s, out=s)
    s /= s.sum(axis=-1, keepdims=True)
    o = (s @ values[:, lo:end]).transpose(1, 0, 2).reshape(n, d)
    return matmul_t(np.ascontiguousarray(o), wo)


def head_inputs(w: HeadWeights, hidden: np.ndarray, captured: dict | None = None) -> np.ndarray:
    """What the head reads at the context's real positions: the target's final-normed features
    ``hidden`` (n, d) themselves, or for a head fed several layers ``fuse [rms(captured[m]) for m
    in layers, hidden]``, where ``captured[m]`` (n, d) is the residual stream after block ``m``
    (a pass's ``captured``)."""
    hidden = np.asarray(hidden, F32)
    if not w.layers:
        return hidden
    missing = [m for m in w.layers if captured is None or m not in captured]
    if missing:
        raise ValueError(f"this draft head also reads the residual stream after blocks {w.layers}; "
                         f"the pass captured {sorted(captured or ())}")
    z = np.concatenate([rms(np.asarray(captured[m], F32), w.eps) for m in w.layers] + [hidden], axis=1)
    return matmul_t(z, w["fuse"])


def head_forward(w: HeadWeights, feats: np.ndarray, embeds: np.ndarray,
                 cache: HeadCache) -> np.ndarray:
    """Predicted features ``(n, d)`` for ``n`` new head positions, appending them to ``cache``.

    Head position ``j`` takes the head's input at ``j - 1`` (:func:`head_inputs` of the target's
    features at a real position, its own prediction at a drafted one) and the embedding of token
    ``j``, and predicts the feature at ``j``.

    Where numba is there, the steps between the products are compiled (:func:`_forward_compiled`):
    the same layer, its sums taken in another order.
    """
    if HAVE_NUMBA and w.attention and feats.shape[0] <= COMPILED_UP_TO:
        return _forward_compiled(w, np.ascontiguousarray(feats, F32), np.ascontiguousarray(embeds, F32),
                                 cache)
    x = matmul_t(np.concatenate((rms(feats, w.eps), rms(embeds, w.eps)), axis=1), w["fc"])
    cache.reserve(x.shape[0])
    for b in range(w.n_blocks):
        wgu, wdown = w.block(b)[2:]
        if w.attention:
            x = x + _attend(w, x, cache, b)
        gu = matmul_t(rms(x, w.eps), wgu)  # feed-forward norm folded into wgu
        d_ff = gu.shape[1] // 2
        gate, up = gu[:, :d_ff], gu[:, d_ff:]
        x = x + matmul_t(gate / (F32(1.0) + np.exp(-gate)) * up, wdown)
    cache.length += x.shape[0]
    return rms(x, w.eps) * w["out_norm"]


_NO_SCALE = np.zeros(0, F32)
#: The most new positions :func:`head_forward` runs through compiled code; longer spans (a prompt's
#: prefill, a training corpus) keep numpy's batched products for their attention.
COMPILED_UP_TO = 16


def _forward_compiled(w: HeadWeights, feats: np.ndarray, embeds: np.ndarray,
                      cache: HeadCache) -> np.ndarray:
    """:func:`head_forward` with the products by the kernel and the norms, the attention over
    the cache and the SwiGLU each one compiled call between them (the numpy path spent about a
    third of a drafted guess's layer time in the few dozen small numpy calls between products)."""
    n, d = feats.shape
    eps = F32(w.eps)
    z = np.empty((n, 2 * d), F32)
    _norm_into(feats, eps, z, 0)
    _norm_into(embeds, eps, z, d)
    x = matmul_t(z, w["fc"])
    h = np.empty((n, d), F32)
    _norm_into(x, eps, h, 0)
    cache.reserve(n)
    last = w.n_blocks - 1
    for b in range(w.n_blocks):
        wqkv, wo, wgu, wdown = w.block(b)
        qkv = matmul_t(h, wqkv)
        o = np.empty((n, d), F32)
        _attend_new(qkv, (cache.k[b], cache.v[b], cache.length), (w.window, w["inv_freq"]), o)
        h = _add_norm(x, matmul_t(o, wo), eps, _NO_SCALE)
        gu = matmul_t(h, wgu)
        act = np.empty((n, gu.shape[1] // 2), F32)
        _swiglu(gu, act)
        # the next block's attention norm, or after the last block the output norm
        h = _add_norm(x, matmul_t(act, wdown), eps, w["out_norm"] if b == last else _NO_SCALE)
    cache.length += n
    return h


def warmup(model=None) -> float:
    """Compile (or load from numba's cache) the head's layer now, one and several positions, and
    with ``model`` its readout: so a run's first guesses are not timed compiling. Returns the
    seconds it took (0 when no head is installed)."""
    t0 = time.perf_counter()
    try:
        w = load_head()
    except HeadNotInstalled:
        return 0.0
    d = w["fc"].shape[0]
    for n in (1, 2):
        f = head_forward(w, np.zeros((n, d), F32), np.zeros((n, d), F32), HeadCache(w, 4))
        if model is not None:
            matmul_t(f, readout(model, w))
    return time.perf_counter() - t0


def head_logits(model, w: HeadWeights, predicted: np.ndarray) -> np.ndarray:
    """Full-vocabulary logits (n, vocab) of predicted features: -inf outside the head's vocabulary."""
    out = np.full((predicted.shape[0], model.config.vocab_size), -np.inf, F32)
    out[:, w.vocab] = matmul_t(np.asarray(predicted, F32), readout(model, w))
    return out


def teacher_forced(model, w: HeadWeights, tokens, hidden: np.ndarray, start: int,
                   stop: int) -> np.ndarray:
    """Predicted features at positions ``start .. stop`` of ``tokens`` from the target's real ones.

    ``hidden`` holds the head's inputs (:func:`head_inputs`) of positions ``0 .. stop - 1``.
    Position 0 has no earlier feature: its row is all zero (the head proposes nothing there).
    """
    ids = np.asarray(tokens, dtype=np.int64)
    first = max(1, start)
    lo = max(1, first - w.window + 1)  # earlier head positions the attention can see
    cache = HeadCache(w, stop)
    cache.length = lo - 1  # positions before lo are outside every window; their slots stay empty
    pred = head_forward(w, hidden[lo - 1:stop - 1], model.weights.embed[ids[lo:stop]], cache)
    out = np.zeros((stop - start, hidden.shape[1]), F32)
    out[first - start:] = pred[first - lo:]
    return out


# ---------------------------------------------------------------------------------- the draft

@dataclass(frozen=True)
class DraftHead:
    """Draft with the trained head (``assets/lm/draft_head.npz``).

    Greedy: the head's most likely token at each step. Sampling: a draw from the head's q (its
    softmax at the run's temperature, restricted to its vocabulary), which it returns as
    ``p_draft`` so speculative sampling keeps the target's distribution.

    Examples
    --------
    >>> m = get_model()                                                        # doctest: +SKIP
    >>> speculate(m, m.tokenizer.chat("Write a haiku"), DraftHead(), 4).tokens_per_pass  # doctest: +SKIP
    """

    name: str = "head"
    #: Another head asset to draft with (a benchmark's candidate); empty: the shipped head.
    path: str = ""
    #: How its matrices are kept for the kernel (:data:`PRECISIONS`; "half": a benchmark's
    #: comparison).
    precision: str = "int8"
    #: Teacher-forced scoring hands this draft the target's features (:mod:`.score`).
    needs_features = True

    def __post_init__(self):
        _check_precision(self.precision)

    def weights(self) -> HeadWeights:
        return load_head(self.path or None, self.precision)

    @property
    def capture(self) -> tuple[int, ...]:
        """The blocks after which a target pass keeps the residual stream for this head."""
        return self.weights().layers

    def features(self, pass_) -> np.ndarray:
        """The head's inputs at the positions of a target pass (:func:`head_inputs`)."""
        return head_inputs(self.weights(), pass_.hidden, pass_.captured)

    def begin(self, model) -> "HeadRun":
        return HeadRun(model, self.weights())


class HeadRun:
    """One run's head state: the target's features of the context and the head's own cache."""

    def __init__(self, model, w: HeadWeights) -> None:
        self.model, self.w = model, w
        #: The blocks whose residual streams :meth:`observe` wants beside the hidden states.
        self.capture = w.layers
        self.readout = readout(model, w)
        d = model.config.d_model
        self.feats = np.zeros((256, d), F32)  # feats[i]: the head's input at context position i
        self.toks: list[int] = []  # the context tokens whose features are known
        self.pending: list[np.ndarray] = []
        self.cache = HeadCache(w)
        self.target_cache = None  # only when a caller gives no features (see _fill)
        self.target_len = 0

    def observe(self, hidden: np.ndarray, captured: dict | None = None) -> None:
        """The target's features of the next context positions (a prefill or a verify pass), and
        the residual streams after the blocks of :attr:`capture` at those positions."""
        self.pending.append(head_inputs(self.w, hidden, captured))

    def _store(self, start: int, hidden: np.ndarray, ctx: np.ndarray) -> None:
        end = start + hidden.shape[0]
        if end > self.feats.shape[0]:
            grown = np.zeros((max(end, 2 * self.feats.shape[0]), self.feats.shape[1]), F32)
            grown[:start] = self.feats[:start]
            self.feats = grown
        self.feats[start:end] = hidden
        del self.toks[start:]
        self.toks.extend(int(t) for t in ctx[start:end])

    def _agree(self, ctx: np.ndarray) -> None:
        """Take the pending features; forget everything after the first context token that changed."""
        for h in self.pending:
            n = len(self.toks)
            if n + h.shape[0] > ctx.size - 1:
                self.toks.clear()  # not this context's features: start again
                break
            self._store(n, h, ctx)
        self.pending.clear()
        n = min(len(self.toks), ctx.size)  # a shorter context (another prompt) keeps at most itself
        known = np.asarray(self.toks[:n], np.int64)
        diff = np.flatnonzero(known != ctx[:n]) if n else np.zeros(0, np.int64)
        if diff.size:
            n = int(diff[0])
        del self.toks[n:]
        self.cache.length = min(self.cache.length, max(n - 1, 0))
        self.target_len = min(self.target_len, n)

    def _fill(self, ctx: np.ndarray) -> None:
        """Compute with the target any feature of ``ctx[:-1]`` nobody observed (a slow fallback)."""
        need = ctx.size - 1
        if len(self.toks) >= need:
            return
        if self.target_cache is None:
            self.target_cache = self.model.new_cache(capacity=max(256, ctx.size))
        start = self.target_len  # the target cache holds ctx[:target_len]
        self.target_cache.rollback(start)
        fw = self.model.forward(ctx[start:need], self.target_cache, logits="none", capture=self.capture)
        self.target_len = need
        self._store(start, head_inputs(self.w, fw.hidden, fw.captured), ctx)

    def _sync(self, ctx: np.ndarray) -> np.ndarray:
        """Bring the head's cache to the context; return the predicted feature at its last token.

        The head position of the context's last token is always recomputed (its token is new).
        """
        self._agree(ctx)
        self._fill(ctx)
        last = ctx.size - 1
        c = self.cache
        c.length = min(c.length, last - 1)
        start = c.length + 1
        pred = head_forward(self.w, self.feats[start - 1:last],
                            self.model.weights.embed[ctx[start:last + 1]], c)
        return pred[-1:]

    def _logits(self, f: np.ndarray) -> np.ndarray:
        return matmul_t(f[:1], self.readout)[0].astype(np.float64)

    def propose(self, context, k: int, *, temperature: float = 0.0, top_p: float = 1.0,
                rng=None) -> Proposal:
        ctx = np.asarray(context, dtype=np.int64).reshape(-1)
        if ctx.size < 2 or k < 1:
            return EMPTY
        f = self._sync(ctx)
        real = self.cache.length
        vocab = self.w.vocab
        tokens, dists, stamps = [], [], []
        for i in range(k):
            z = self._logits(f)
            if temperature > 0:
                q = sampling.probabilities(z, temperature, top_p)
                j = sampling.draw(q, rng)
                full = np.zeros(self.model.config.vocab_size)
                full[vocab] = q
                dists.append(full)
            else:
                j = int(np.argmax(z))
            tokens.append(int(vocab[j]))
            stamps.append(time.perf_counter())
            if i + 1 < k:
                f = head_forward(self.w, f, self.model.weights.embed[tokens[-1:]], self.cache)
        self.cache.length = real  # the drafted positions are the verifier's to keep
        return Proposal(np.array(tokens, np.int64), np.array(dists) if dists else None,
                        np.array(stamps))

    def _top(self, f: np.ndarray, w: int) -> tuple[np.ndarray, np.ndarray]:
        """The ``w`` most likely entries of the head's vocabulary after predicted feature ``f``
        (indices into it, most likely first) and their q at temperature 1."""
        q = sampling.probabilities(self._logits(f), 1.0)
        top = np.argsort(-q, kind="stable")[:w]
        return top, q[top]

    def draft_tree(self, context, width: int, depth: int, shape: str = "spine"):
        """A tree of guesses after ``context`` from the head's top-``width`` tokens per level.

        Each level's guesses are the head's ``width`` most likely tokens after their parent's path
        (temperature 1, ``probs`` their q). A spine grows only under each level's best guess (so
        width 1 is the chain :meth:`propose` drafts); a full tree grows under every guess.

        A dynamic tree (EAGLE-2, Li et al. 2024) grows where the head is confident: a node's value
        is the product of the q along its path; at each level the ``width`` guesses of highest
        value so far are expanded, each with its ``width`` best children, and when ``depth``
        levels are drafted the ``width x depth`` nodes of highest value are kept (a node before
        its children at equal value, so they form a tree): as many as a spine verifies, placed
        where the head expects them to be kept.

        A node's children come from the head fed its own path: its predicted features, with the
        attention cache holding that path's keys and values only (saved per node and put back,
        since branches share the head positions after the context).

        Returns
        -------
        specdec_playable.lm.tree.DraftTree
        """
        from .tree import EMPTY_TREE, DraftTree, check_shape, most_valued

        shape, width, depth, size = check_shape(shape, width, depth, dynamic=True)
        ctx = np.asarray(context, dtype=np.int64).reshape(-1)
        if ctx.size < 2:
            return EMPTY_TREE
        f = self._sync(ctx)
        real, vocab = self.cache.length, self.w.vocab
        parents: list[int] = []
        tokens: list[int] = []
        probs: list[float] = []
        values: list[float] = []
        frontier = [(-1, f, [])]  # (node, the head's feature at it, its path's saved keys/values)
        for level in range(depth):
            grow, drafted = [], []  # (node, its parent's feature and path): to feed; all of this level
            for node, feat, kv in frontier:
                top, q = self._top(feat, width)
                above = values[node] if node >= 0 else 1.0
                for j, (i, qi) in enumerate(zip(top.tolist(), q.tolist())):
                    parents.append(node)
                    tokens.append(int(vocab[i]))
                    probs.append(qi)
                    values.append(above * qi)
                    drafted.append((len(tokens) - 1, feat, kv))
                    if shape == "full" or (shape == "spine" and j == 0):
                        grow.append(drafted[-1])
            if level + 1 == depth:
                break
            if shape == "dynamic":  # this level's width most valued guesses are expanded next
                grow = sorted(sorted(drafted, key=lambda g: -values[g[0]])[:width], key=lambda g: g[0])
            frontier = [self._child(child, feat, kv, tokens, real) for child, feat, kv in grow]
        self.cache.length = real  # the drafted positions are the verifier's to keep
        if not tokens:
            return EMPTY_TREE
        parents_a, tokens_a, probs_a = np.array(parents, np.int64), np.array(tokens, np.int64), np.array(probs)
        tree = DraftTree(parents_a, tokens_a, probs_a)
        return tree.subtree(most_valued(parents_a, np.array(values), size)) if shape == "dynamic" else tree

    def _child(self, child: int, feat, kv, tokens, real: int):
        """The head fed node ``child``'s token after its parent's feature ``feat``, its cache
        holding the context and the parent's path ``kv``: ``(child, its feature, its path's
        keys/values)``."""
        cache = self.cache
        cache.length = real
        cache.reserve(len(kv) + 1)
        for k_, v_ in kv:  # this path's head positions (every block's), in order
            cache.k[:, :, cache.length], cache.v[:, :, cache.length] = k_, v_
            cache.length += 1
        at = cache.length
        nf = head_forward(self.w, feat, self.model.weights.embed[tokens[child:child + 1]], cache)
        return child, nf, kv + [(cache.k[:, :, at].copy(), cache.v[:, :, at].copy())]
