"""SmolLM2-135M-Instruct as a numpy forward pass, loaded once per process and shared read-only.

The architecture is Llama's: token embedding, 30 blocks of (RMSNorm, grouped-query attention with
rotary positions, RMSNorm, SwiGLU feed-forward), a final RMSNorm and an output head tied to the
embedding. Weights are dequantised from the GGUF file to float32 once and then frozen
(``setflags(write=False)``); every session and worker thread shares the one copy. What a run changes
lives in its own :class:`KVCache`.

For speed each block keeps four matrices ``(out, in)``, three of them fused:

* ``wqkv`` (960 x 576): the query, key and value projections, with the attention RMSNorm weight and
  the 1/sqrt(64) score scale folded in;
* ``wgu`` (3072 x 576): the gate and up projections, with the feed-forward RMSNorm weight folded in;
* ``wo`` (576 x 576) and ``wdown`` (576 x 1536).

Every matrix, and the embedding, is packed once at load into the kernel's layout
(:func:`.kernel.pack`, panels of :data:`.kernel.PANEL` rows; the packed copy is the only one),
each kind stacked over the blocks, and a pass runs the blocks in one compiled call
(:func:`.fused.run_blocks`) and the head through :func:`.kernel.matmul_t`. Without numba, or with
:data:`FUSED` set False, the same pass runs as numpy code (:meth:`Model._block`), the reference the
compiled one is tested against.

Weight formats (``load(weights=...)``, ``get_model(weights=...)``): ``"f32"`` (the default) as
above, or ``"q4"``, the weights as the file stores them: each kind's Q4_1 blocks stacked over the
blocks and repacked into panel order (:func:`.kernel.pack_blocks`; 66 MB), the embedding and tied
head in Q8_0 (30 MB), the only copy, streamed by the kernel's block tiles, which widen them to
float32 in registers and multiply float32 activations. The blocks cannot absorb the norms and the
score scale, so in ``"q4"`` the RMSNorm weights multiply the activations (:attr:`Weights.norms`)
and the scale the queries (:attr:`Weights.q_scale`). A tensor in a format the block tiles do not
read is dequantised to float32 instead, with a logged warning saying which and why.

GGUF stores the query and key rows permuted for llama.cpp's rotary form (rotate interleaved pairs
0,1 / 2,3 / ...). The loader permutes them once more, consistently for queries and keys, so that pair
``i`` sits at dims ``i`` and ``i + 32``; attention scores are unchanged and the rotation works on two
contiguous halves.
"""

from __future__ import annotations

import ctypes
import logging
import threading
import time
from dataclasses import dataclass, field

import numpy as np

from . import fused
from .kernel import NARROW, PANEL, Packed, QPacked, matmul_t, pack, pack_blocks, prefetch_ahead, prepare_threads
from .kernel.tuning import BLOCKS_STRIPS, blocks_plan
from .source import model_file
from .tokenizer import Tokenizer

F32 = np.float32
LOG = logging.getLogger(__name__)

#: The weight formats a model loads in: ``"f32"``, every weight dequantised to float32 at load
#: (538 MB), or ``"q4"``, the file's own blocks (Q4_1, and Q8_0 for the embedding and tied head:
#: 97 MB) streamed by the kernel's block tiles (:mod:`.kernel.blocks`).
WEIGHT_FORMATS = ("f32", "q4")

#: Whether :meth:`Model.forward` runs the blocks in compiled code (:func:`.fused.run_blocks`; True
#: when numba is present). Set it False (tests, benchmarks) to run the numpy reference path.
FUSED = fused.HAVE_NUMBA


@dataclass(frozen=True)
class Config:
    """Shape of the model, read from the GGUF metadata."""

    n_layers: int = 30
    d_model: int = 576
    d_ff: int = 1536
    n_heads: int = 9
    n_kv_heads: int = 3
    head_dim: int = 64
    rope_base: float = 100000.0
    eps: float = 1e-5
    vocab_size: int = 49152
    context: int = 8192

    @property
    def group(self) -> int:
        """Query heads per key/value head."""
        return self.n_heads // self.n_kv_heads


@dataclass(frozen=True, eq=False)
class Block:
    """One transformer block's fused, frozen weights (see the module docstring), packed for the
    kernel (float32 panels, or in ``"q4"`` the file's blocks): views of :attr:`Weights.stacks`."""

    wqkv: Packed | QPacked
    wo: Packed | QPacked
    wgu: Packed | QPacked
    wdown: Packed | QPacked


@dataclass(frozen=True, eq=False)
class Weights:
    """All weights, read-only. ``embed`` (vocab x d_model, packed; ``embed[ids]`` gathers rows as
    float32) is also the output head. ``stacks`` holds every block's packed ``wqkv``, ``wo``,
    ``wgu`` and ``wdown``, each kind as one array: float32 ``(blocks, panels, in, 64)``, or in
    ``"q4"`` the file's blocks, uint8 ``(blocks, panels, bytes)``; the blocks'
    :class:`.kernel.Packed` (:class:`.kernel.QPacked`) weights are views of them, not copies."""

    embed: Packed | QPacked
    blocks: tuple[Block, ...]
    final_norm: np.ndarray
    inv_freq: np.ndarray
    stacks: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]
    #: ``"f32"`` or ``"q4"`` (:data:`WEIGHT_FORMATS`).
    format: str = "f32"
    #: In ``"q4"``, each block's attention and feed-forward RMSNorm weights ``(blocks, 2, d)``,
    #: applied to the activations (the file's blocks cannot absorb them); None in ``"f32"``, whose
    #: matrices have them folded in.
    norms: np.ndarray | None = None
    #: The queries' score scale ``1 / sqrt(head dim)``, where it is not folded into ``wqkv`` (1).
    q_scale: float = 1.0

    def arrays(self) -> list[np.ndarray]:
        """Every weight's storage (the packed matrices' panels or blocks), each once."""
        out = [self.embed.data, self.final_norm, self.inv_freq]
        out += [] if self.norms is None else [self.norms]
        for b in self.blocks:
            out += [b.wqkv.data, b.wo.data, b.wgu.data, b.wdown.data]
        return out

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in self.arrays())

    @property
    def strips(self) -> bool:
        """Whether the blocks' weights are in the strips layout (:attr:`.kernel.Packed.strips`)."""
        return self.blocks[0].wqkv.strips


class KVCache:
    """Keys and values of the positions a run has fed so far, for ``n_layers`` blocks.

    Per run, never shared. ``length`` positions are valid; :meth:`rollback` forgets the rest, so
    rejected drafts cost nothing to undo. Storage grows by doubling when a pass needs more room.

    Layout (float32): values ``v`` are ``(blocks, kv heads, capacity, head dim)``; keys are packed
    in the kernel's panels of 64 positions, ``k`` ``(blocks, kv heads, capacity / 64, head dim,
    64)``, position ``t``'s key at ``k[l, h, t // 64, :, t % 64]``. So a pass scores its queries
    against the keys, and weights the values, with the same tile products as its weights
    (:mod:`.fused`). :meth:`keys` gives one block's keys as ``(kv heads, positions, head dim)``.

    Parameters
    ----------
    config : Config
    n_layers : int
        How many blocks this cache serves (all of them for the target, fewer for an early exit).
    capacity : int
        Positions to allocate up front (rounded up to a multiple of 64).
    """

    def __init__(self, config: Config, n_layers: int | None = None, capacity: int = 256) -> None:
        self.config = config
        self.n_layers = config.n_layers if n_layers is None else int(n_layers)
        cap = -(-max(int(capacity), 1) // PANEL) * PANEL
        heads = (self.n_layers, config.n_kv_heads)
        self.k = np.zeros(heads + (cap // PANEL, config.head_dim, PANEL), F32)
        self.v = np.zeros(heads + (cap, config.head_dim), F32)
        self.length = 0

    @property
    def capacity(self) -> int:
        return int(self.v.shape[2])

    @property
    def nbytes(self) -> int:
        return self.k.nbytes + self.v.nbytes

    def reserve(self, n_new: int) -> None:
        """Make room for ``n_new`` more positions (doubling the storage if needed)."""
        need = self.length + n_new
        if need > self.config.context:
            raise ValueError(f"the context holds at most {self.config.context} tokens; "
                             f"this pass needs {need}")
        if need <= self.capacity:
            return
        cap = -(-min(max(need, 2 * self.capacity), self.config.context) // PANEL) * PANEL
        k = np.zeros(self.k.shape[:2] + (cap // PANEL,) + self.k.shape[3:], F32)
        k[:, :, :self.k.shape[2]] = self.k
        v = np.zeros(self.v.shape[:2] + (cap,) + self.v.shape[3:], F32)
        v[:, :, :self.length] = self.v[:, :, :self.length]
        self.k, self.v = k, v

    def put(self, layer: int, start: int, keys: np.ndarray, values: np.ndarray) -> None:
        """Write block ``layer``'s keys and values ``(kv heads, n, head dim)`` of positions
        ``start .. start + n - 1`` (room must be reserved)."""
        t = start + np.arange(keys.shape[1])
        self.k[layer][:, t // PANEL, :, t % PANEL] = keys.transpose(1, 0, 2)
        self.v[layer, :, start:start + keys.shape[1]] = values

    def keys(self, layer: int | None = None, end: int | None = None) -> np.ndarray:
        """Block ``layer``'s keys of positions ``0 .. end - 1`` (default: all valid), as a new
        ``(kv heads, end, head dim)`` array; every block's, ``(blocks, kv heads, end, head dim)``,
        when ``layer`` is None."""
        end = self.length if end is None else int(end)
        k = self.k if layer is None else self.k[layer]
        return k.swapaxes(-1, -2).reshape(k.shape[:-3] + (-1, k.shape[-2]))[..., :end, :]

    def rollback(self, length: int) -> None:
        """Forget every position from ``length`` on (``0 <= length <= self.length``)."""
        if not 0 <= length <= self.length:
            raise ValueError(f"rollback length must be in [0, {self.length}]; got {length}")
        self.length = int(length)

    def compact(self, start: int, keep) -> None:
        """Keep the positions ``start + keep[i]`` (ascending) as ``start + i``, forget the rest.

        This is what a tree verification needs after it accepts one branch.
        """
        keep = np.asarray(keep, dtype=np.int64)
        if keep.size and (np.any(np.diff(keep) <= 0) or keep[0] < 0 or start + keep[-1] >= self.length):
            raise ValueError("keep must be ascending offsets of valid positions")
        src, dst = start + keep, start + np.arange(keep.size)
        self.k[:, :, dst // PANEL, :, dst % PANEL] = self.k[:, :, src // PANEL, :, src % PANEL]
        self.v[:, :, start:start + keep.size] = self.v[:, :, src]
        self.length = start + int(keep.size)


@dataclass(frozen=True, eq=False)
class Pass:
    """What one forward pass over ``n`` new positions returns.

    Attributes
    ----------
    logits : numpy.ndarray or None
        float32, ``(n, vocab)`` (or ``(1, vocab)`` for the last position only), or None.
    hidden : numpy.ndarray
        float32 ``(n, d_model)``: the residual stream after the last block run, final-normed (the
        vector the head reads).
    captured : dict
        Residual stream (before the final norm) after block ``m``, for each ``m`` asked for.
    """

    logits: np.ndarray | None
    hidden: np.ndarray
    captured: dict = field(default_factory=dict)

    def features(self, rows=slice(None)) -> tuple[np.ndarray, dict]:
        """``(hidden[rows], {m: captured[m][rows]})``: what an observer of this pass's kept
        positions reads (``observer.observe(*pass_.features(rows))``)."""
        return self.hidden[rows], {m: c[rows] for m, c in self.captured.items()}


def linear(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``x @ w.T`` for activations ``x`` (n, in) and a weight ``w`` stored (out, in).

    Decoding is memory-bound: for up to :data:`.kernel.MAX_N` positions the product runs in
    :func:`.kernel.matmul_t`, which reads each weight row from memory once and multiplies it by
    every position while it is in cache, so a pass over 5 positions streams the weights once, as a
    single decoding step does. More positions (a long prompt's prefill) use BLAS's matrix-matrix
    product.
    """
    return matmul_t(x, w)


def rms_norm(x: np.ndarray, eps: float) -> np.ndarray:
    ms = np.einsum("ij,ij->i", x, x) * F32(1.0 / x.shape[1])
    return x * (F32(1.0) / np.sqrt(ms + F32(eps)))[:, None]


class Model:
    """The target model: weights, tokenizer and the forward pass. Immutable; share one per process.

    Use :func:`get_model` rather than building one: it loads the file once, thread-safely.
    """

    def __init__(self, config: Config, weights: Weights, tokenizer: Tokenizer,
                 load_seconds: float = 0.0) -> None:
        self.config = config
        self.weights = weights
        self.tokenizer = tokenizer
        self.load_seconds = load_seconds
        # the blocks' norm weights as the compiled pass takes them (all ones where folded in)
        self._norms = (weights.norms if weights.norms is not None
                       else np.ones((config.n_layers, 2, config.d_model), F32))

    @property
    def format(self) -> str:
        """The weight format it was loaded in: ``"f32"`` or ``"q4"`` (:data:`WEIGHT_FORMATS`)."""
        return self.weights.format

    # -- state ---------------------------------------------------------------------------------
    def new_cache(self, capacity: int = 256, n_layers: int | None = None) -> KVCache:
        """An empty cache for one run."""
        return KVCache(self.config, n_layers, capacity)

    # -- the forward pass ----------------------------------------------------------------------
    def forward(self, tokens, cache: KVCache, *, positions=None, mask=None, logits: str = "all",
                n_layers: int | None = None, capture=()) -> Pass:
        """Run ``n`` new tokens through the model, appending their keys and values to ``cache``.

        Parameters
        ----------
        tokens : array_like of int, shape (n,)
        cache : KVCache
            Positions already fed; the new ones are appended at ``cache.length ...``.
        positions : array_like of int, shape (n,), optional
            Rotary positions of the new tokens; default ``cache.length + arange(n)``. A token tree
            passes each node's depth here.
        mask : array_like of bool, shape (n, n), optional
            ``mask[i, j]`` allows new token ``i`` to attend to new token ``j`` (every cached position
            is always visible). Default causal: ``j <= i``. A token tree passes ancestor-or-self.
        logits : {"all", "last", "none"}
            Which positions to score with the head (the head is a large share of a pass).
        n_layers : int, optional
            Run only the first ``n_layers`` blocks (an early exit); default all. The cache must
            have at least that many layers.
        capture : iterable of int
            Block counts ``m`` after which to keep the residual stream in ``Pass.captured``.

        Returns
        -------
        Pass
        """
        cfg, w = self.config, self.weights
        ids = np.asarray(tokens, dtype=np.int64).reshape(-1)
        n = int(ids.size)
        if n == 0:
            raise ValueError("forward needs at least one token")
        if ids.min() < 0 or ids.max() >= cfg.vocab_size:
            raise ValueError(f"token ids must be in [0, {cfg.vocab_size - 1}]")
        depth = cache.n_layers if n_layers is None else int(n_layers)
        if not 0 <= depth <= cache.n_layers:
            raise ValueError(f"n_layers must be in [0, {cache.n_layers}]; got {n_layers}")
        past = cache.length
        pos = (past + np.arange(n)) if positions is None else np.asarray(positions, np.int64)
        if pos.shape != (n,):
            raise ValueError(f"positions must have shape ({n},); got {pos.shape}")
        cache.reserve(n)
        allowed = self._allowed(n, mask)
        capture = sorted(set(int(m) for m in capture))
        captured = {}

        x = w.embed[ids]  # a fresh float32 copy
        if 0 in capture:
            captured[0] = x.copy()
        if FUSED and cfg.head_dim == PANEL:  # the compiled attention reads a head as one panel
            ang = pos.astype(F32)[:, None] * w.inv_freq[None, :]  # (n, 32), float32
            slot = np.full(depth + 1, -1, np.int64)
            later = [m for m in capture if 0 < m <= depth]
            slot[later] = np.arange(len(later))
            kept = np.empty((len(later), n, cfg.d_model), F32)
            prepare_threads(n)
            fused.run_blocks(x, (*w.stacks, self._norms), (cache.k, cache.v, past),
                             (np.cos(ang), np.sin(ang), allowed),
                             (depth, (cfg.n_heads, cfg.n_kv_heads, w.q_scale), cfg.eps,
                              (prefetch_ahead(n, w.strips), *blocks_plan(n)), w.strips, cfg.d_ff),
                             (slot, kept))
            captured.update(zip(later, kept))
        else:
            bias = self._bias(allowed, past)
            rope = self._rope(pos)
            with np.errstate(over="ignore"):
                for layer in range(depth):
                    x = self._block(layer, x, cache, past, rope, bias)
                    if layer + 1 in capture:
                        captured[layer + 1] = x.copy()
        cache.length = past + n
        h = rms_norm(x, cfg.eps) * w.final_norm
        out = None
        if logits == "all":
            out = self.head(h)
        elif logits == "last":
            out = self.head(h[-1:])
        elif logits != "none":
            raise ValueError(f"logits must be 'all', 'last' or 'none'; got {logits!r}")
        return Pass(out, h, captured)

    def head(self, hidden: np.ndarray) -> np.ndarray:
        """Logits (n, vocab) of final-normed hidden states, through the tied embedding."""
        return linear(hidden, self.weights.embed)

    @staticmethod
    def _allowed(n: int, mask) -> np.ndarray:
        """Which new positions each new position sees, (n, n) bool (default causal)."""
        if mask is None:
            return np.tri(n, dtype=bool)
        allowed = np.asarray(mask, dtype=bool)
        if allowed.shape != (n, n):
            raise ValueError(f"mask must have shape ({n}, {n}); got {allowed.shape}")
        if not allowed[np.arange(n), np.arange(n)].all():
            raise ValueError("mask must let every token attend to itself")
        return np.ascontiguousarray(allowed)

    def _bias(self, allowed: np.ndarray, past: int) -> np.ndarray | None:
        """Additive attention bias over (new, past + new) keys; None when nothing is masked."""
        n = allowed.shape[0]
        if allowed.all():
            return None
        bias = np.zeros((n, past + n), F32)
        bias[:, past:][~allowed] = -np.inf
        # Rows of the grouped score matrix are (new position, query head in group).
        return np.repeat(bias, self.config.group, axis=0)

    def _rope(self, pos: np.ndarray):
        ang = pos.astype(F32)[:, None] * self.weights.inv_freq[None, :]  # (n, 32), float32
        return np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]

    def _block(self, layer, x, cache, past, rope, bias):
        """One block in numpy (the reference path): the residual stream after block ``layer``."""
        cos, sin = rope  # of the new positions' angles
        cfg = self.config
        b = self.weights.blocks[layer]
        n = x.shape[0]
        hd, nh, nkv, g = cfg.head_dim, cfg.n_heads, cfg.n_kv_heads, cfg.group
        half = hd // 2
        norms = self._norms[layer]
        xn = rms_norm(x, cfg.eps) * norms[0]
        qkv = linear(xn, b.wqkv)  # (n, 960)
        # Rotate queries and keys together: 9 + 3 heads of 64 dims, halves form.
        qk = qkv[:, :(nh + nkv) * hd].reshape(n, nh + nkv, hd)
        a, c = qk[..., :half], qk[..., half:]
        rot = np.concatenate((a * cos - c * sin, a * sin + c * cos), axis=-1)
        q, k = rot[:, :nh] * F32(self.weights.q_scale), rot[:, nh:]
        v = qkv[:, (nh + nkv) * hd:].reshape(n, nkv, hd)
        end = past + n
        cache.put(layer, past, k.transpose(1, 0, 2), v.transpose(1, 0, 2))
        keys = cache.keys(layer, end)  # (kv, T, hd)
        vals = cache.v[layer, :, :end]
        # Group the query heads by the key/value head they share: (kv, n * group, hd).
        qg = q.reshape(n, nkv, g, hd).transpose(1, 0, 2, 3).reshape(nkv, n * g, hd)
        s = qg @ keys.transpose(0, 2, 1)  # (kv, n * group, T); the scale is folded into wqkv
        if bias is not None:
            s += bias
        s -= s.max(axis=-1, keepdims=True)
        np.exp(s, out=s)
        s /= s.sum(axis=-1, keepdims=True)
        o = (s @ vals).reshape(nkv, n, g, hd).transpose(1, 0, 2, 3).reshape(n, nh * hd)
        x = x + linear(o, b.wo)
        xn = rms_norm(x, cfg.eps) * norms[1]
        gu = linear(xn, b.wgu)  # (n, 2 * d_ff)
        gate, up = gu[:, :cfg.d_ff], gu[:, cfg.d_ff:]
        act = gate / (F32(1.0) + np.exp(-gate)) * up  # SwiGLU
        return x + linear(act, b.wdown)

    # -- conveniences ---------------------------------------------------------------------------
    def prefill(self, tokens, cache: KVCache, *, logits: str = "last") -> Pass:
        """Feed a prompt; by default score only its last position."""
        return self.forward(tokens, cache, logits=logits)

    def step(self, token: int, cache: KVCache) -> np.ndarray:
        """Feed one token; return the logits (vocab,) for the next."""
        return self.forward([token], cache).logits[0]


def _freeze(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a, dtype=F32)
    a.setflags(write=False)
    return a


def _halves_order(n_heads: int, head_dim: int) -> np.ndarray:
    """Row order taking interleaved rotary pairs (2i, 2i+1) to (i, i + head_dim/2) in each head."""
    within = np.concatenate((np.arange(0, head_dim, 2), np.arange(1, head_dim, 2)))
    return (np.arange(n_heads)[:, None] * head_dim + within[None, :]).reshape(-1)


def _config(meta) -> Config:
    """The model's shape from the GGUF metadata (``meta(key)`` reads one field)."""
    arch = meta("general.architecture")
    return Config(
        n_layers=int(meta(f"{arch}.block_count")),
        d_model=int(meta(f"{arch}.embedding_length")),
        d_ff=int(meta(f"{arch}.feed_forward_length")),
        n_heads=int(meta(f"{arch}.attention.head_count")),
        n_kv_heads=int(meta(f"{arch}.attention.head_count_kv")),
        head_dim=int(meta(f"{arch}.rope.dimension_count")),
        rope_base=float(meta(f"{arch}.rope.freq_base")),
        eps=float(meta(f"{arch}.attention.layer_norm_rms_epsilon")),
        vocab_size=int(meta(f"{arch}.vocab_size")),
        context=int(meta(f"{arch}.context_length")),
    )


def _pack_blocks(cfg: Config, get) -> tuple[tuple[Block, ...], tuple[np.ndarray, ...]]:
    """Every block's weights fused (see the module docstring) and packed straight into four
    stacked arrays, one per kind; ``get(name)`` dequantises one tensor to float32.

    Each tensor is packed as soon as it is read, so the loader never holds more than one
    dequantised tensor besides the stacks (what it frees stays in the process's heap)."""
    hd = cfg.head_dim
    q_order = _halves_order(cfg.n_heads, hd)
    k_order = _halves_order(cfg.n_kv_heads, hd)
    scale = F32(1.0 / np.sqrt(hd))
    d, qkv_rows = cfg.d_model, (cfg.n_heads + 2 * cfg.n_kv_heads) * hd
    shapes = ((qkv_rows, d), (d, cfg.n_heads * hd), (2 * cfg.d_ff, d), (d, cfg.d_ff))
    stacks = tuple(np.empty((cfg.n_layers, -(-rows // PANEL), cols, PANEL), F32) for rows, cols in shapes)
    nq, nk = cfg.n_heads * hd, cfg.n_kv_heads * hd
    blocks = []
    for i in range(cfg.n_layers):
        p = f"blk.{i}."
        attn, ffn = get(p + "attn_norm.weight")[None, :], get(p + "ffn_norm.weight")[None, :]
        parts = (  # (rows, how to make them), called in this iteration
            ((nq, lambda: get(p + "attn_q.weight")[q_order] * (scale * attn)),
             (nk, lambda: get(p + "attn_k.weight")[k_order] * attn),
             (nk, lambda: get(p + "attn_v.weight") * attn)),
            ((d, lambda: get(p + "attn_output.weight")),),
            ((cfg.d_ff, lambda: get(p + "ffn_gate.weight") * ffn),
             (cfg.d_ff, lambda: get(p + "ffn_up.weight") * ffn)),
            ((d, lambda: get(p + "ffn_down.weight")),),
        )
        blocks.append(Block(*(_pack_rows(ws, stack[i]) for ws, stack in zip(parts, stacks))))
    for s in stacks:
        s.setflags(write=False)
    return tuple(blocks), stacks


def _pack_rows(parts, out: np.ndarray) -> Packed:
    """The matrix stacking the rows ``make()`` gives for each ``(rows, make)`` of ``parts``, packed
    into ``out``: each part made and packed straight into its own panels when the parts fall on
    panel boundaries (no concatenated copy), else concatenated first."""
    if any(rows % PANEL for rows, _ in parts[:-1]):
        return pack(np.concatenate([make() for _, make in parts]), out=out)
    at = 0
    for rows, make in parts:
        n = -(-rows // PANEL)
        pack(make(), out=out[at:at + n])
        at += n
    out.setflags(write=False)
    return Packed(out, sum(rows for rows, _ in parts), NARROW)


def check_weights(weights: str) -> str:
    """``weights`` if it names a weight format (:data:`WEIGHT_FORMATS`), else ValueError naming
    the choices."""
    if weights not in WEIGHT_FORMATS:
        raise ValueError(f"weights must be one of {list(WEIGHT_FORMATS)}; got {weights!r}")
    return weights


def load(path=None, *, weights: str = "f32") -> Model:
    """Read the GGUF file and build the model, its weights in format ``weights`` (``"f32"`` or
    ``"q4"``, :data:`WEIGHT_FORMATS`); several seconds: use :func:`get_model`."""
    import gguf
    from gguf.quants import dequantize

    fmt = check_weights(weights)
    t0 = time.perf_counter()
    path = model_file() if path is None else path
    reader = gguf.GGUFReader(str(path))
    f = reader.fields

    def meta(key):
        return f[key].contents()

    cfg = _config(meta)
    tensors = {t.name: t for t in reader.tensors}

    def raw(name: str) -> np.ndarray:
        # float32 tensors come back as views of the memory-mapped file: packed (a copy) or copied
        t = tensors[name]
        return np.asarray(dequantize(t.data, t.tensor_type), dtype=F32)

    weights = _weights(cfg, (tensors, raw), fmt)
    types = meta("tokenizer.ggml.token_type")
    tokenizer = Tokenizer(
        tokens=meta("tokenizer.ggml.tokens"), merges=meta("tokenizer.ggml.merges"),
        control=[i for i, t in enumerate(types) if t == 3],
        bos_id=int(meta("tokenizer.ggml.bos_token_id")), eos_id=int(meta("tokenizer.ggml.eos_token_id")),
    )
    del reader, tensors, raw, meta
    _return_freed_heap()
    return Model(cfg, weights, tokenizer, load_seconds=time.perf_counter() - t0)


def _weights(cfg: Config, source, fmt: str) -> Weights:
    """Every weight, packed in format ``fmt``; ``source = (tensors, raw)``: the file's tensors by
    name, and ``raw(name)`` one dequantised to float32."""
    tensors, raw = source
    inv_freq = cfg.rope_base ** (-np.arange(0, cfg.head_dim, 2, dtype=np.float64) / cfg.head_dim)
    # A copy of the norm, which does not keep the whole file mapped (and resident) as it lives.
    final_norm = _freeze(np.array(raw("output_norm.weight"), copy=True))
    if fmt == "f32":
        blocks, stacks = _pack_blocks(cfg, raw)
        return Weights(embed=pack(raw("token_embd.weight")), blocks=blocks, final_norm=final_norm,
                       inv_freq=_freeze(inv_freq), stacks=stacks)
    blocks, stacks = _pack_blocks_q4(cfg, tensors, raw)
    norms = np.stack([[raw(f"blk.{i}.attn_norm.weight"), raw(f"blk.{i}.ffn_norm.weight")]
                      for i in range(cfg.n_layers)])
    return Weights(embed=_pack_embed(tensors["token_embd.weight"], raw), blocks=blocks,
                   final_norm=final_norm, inv_freq=_freeze(inv_freq), stacks=stacks, format=fmt,
                   norms=_freeze(norms), q_scale=float(1.0 / np.sqrt(cfg.head_dim)))


#: A block's four matrices in ``"q4"``, each as the tensors whose rows it stacks (no norm or
#: scale folded in: the file's blocks stay as they are).
_Q4_KINDS = (("attn_q", "attn_k", "attn_v"), ("attn_output",), ("ffn_gate", "ffn_up"), ("ffn_down",))
#: The block format the blocks' tile reads (the embedding's may also be Q8_0).
_BLOCK_TYPES = {"Q4_1": "q4_1"}
_EMBED_TYPES = {"Q4_1": "q4_1", "Q8_0": "q8_0"}


def _pack_blocks_q4(cfg: Config, tensors, raw) -> tuple[tuple[Block, ...], tuple[np.ndarray, ...]]:
    """Every block's matrices as the file's Q4_1 blocks, each kind stacked over the blocks in one
    uint8 array (the queries' and keys' rows in the rotary order of :func:`_halves_order`). A kind
    with a tensor in another format is dequantised to float32 instead (and logged)."""
    orders = {"attn_q": _halves_order(cfg.n_heads, cfg.head_dim),
              "attn_k": _halves_order(cfg.n_kv_heads, cfg.head_dim)}
    stacks, packed = [], []
    for names in _Q4_KINDS:
        layers = [[(f"blk.{i}.{nm}.weight", orders.get(nm)) for nm in names] for i in range(cfg.n_layers)]
        reason = _unreadable([tensors[name] for layer in layers for name, _ in layer], _BLOCK_TYPES)
        if reason:
            LOG.warning("weights='q4': the blocks' %s weights stay float32: %s", "/".join(names), reason)
            rows = [[(lambda name=name, o=o: raw(name) if o is None else raw(name)[o]) for name, o in layer]
                    for layer in layers]
            stack, mats = _stack_f32(rows, strips=BLOCKS_STRIPS)  # one layout for every product
        else:
            stack, mats = _stack_blocks([[np.asarray(tensors[name].data) if o is None
                                          else np.asarray(tensors[name].data)[o] for name, o in layer]
                                         for layer in layers])
        stacks.append(stack)
        packed.append(mats)
    return tuple(Block(*mats) for mats in zip(*packed)), tuple(stacks)


def _unreadable(tensors, readable: dict) -> str:
    """Why the block tiles cannot read ``tensors`` as stored ("" when they can)."""
    for t in tensors:
        if t.tensor_type.name not in readable:
            return f"{t.name} is {t.tensor_type.name}; the block tiles read {', '.join(readable)}"
    if len({np.asarray(t.data).shape[1] for t in tensors}) > 1:
        return "their rows differ in length"
    return ""


def _stack_blocks(layers) -> tuple[np.ndarray, list[QPacked]]:
    """Each layer's row blocks (a list of uint8 arrays to stack) packed into one uint8 stack."""
    rows = sum(a.shape[0] for a in layers[0])
    stack = np.empty((len(layers), -(-rows // PANEL), PANEL * layers[0][0].shape[1]), np.uint8)
    mats = [pack_blocks(np.concatenate(parts), "q4_1", out=stack[i]) for i, parts in enumerate(layers)]
    stack.setflags(write=False)
    return stack, mats


def _stack_f32(layers, strips: bool | None = None) -> tuple[np.ndarray, list[Packed]]:
    """Each layer's rows (a list of functions giving float32 arrays to stack) packed as float32
    (``strips``: as :func:`.kernel.pack` takes it)."""
    first = np.concatenate([make() for make in layers[0]])
    stack = np.empty((len(layers), -(-first.shape[0] // PANEL), first.shape[1], PANEL), F32)
    mats = [pack(first, out=stack[0], strips=strips)]
    mats += [pack(np.concatenate([make() for make in parts]), out=stack[i + 1], strips=strips)
             for i, parts in enumerate(layers[1:])]
    stack.setflags(write=False)
    return stack, mats


def _pack_embed(t, raw) -> Packed | QPacked:
    """The embedding (and tied head) as the file's blocks, or float32 (logged) where the block
    tiles do not read its format."""
    reason = _unreadable([t], _EMBED_TYPES)
    if reason:
        LOG.warning("weights='q4': the embedding stays float32: %s", reason)
        return pack(raw(t.name))
    return pack_blocks(np.asarray(t.data), _EMBED_TYPES[t.tensor_type.name])


def _return_freed_heap() -> None:
    """Hand the heap the loader freed (its dequantised temporaries) back to the system: glibc keeps
    it otherwise, tens of MB of every model process's resident memory. Nothing where there is no
    glibc."""
    try:
        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):
        pass


_LOCK = threading.Lock()
_MODEL: Model | None = None  # the default format's
_OTHERS: dict[str, Model] = {}  # the other formats', by name


def get_model(weights: str = "f32") -> Model:
    """The process's one model in weight format ``weights`` (``"f32"`` or ``"q4"``), loaded on
    first use (thread-safe; later calls return at once).

    Raises
    ------
    ModelNotInstalled
        If the model package is missing; the message is the command that installs it.
    ValueError
        If ``weights`` is not one of :data:`WEIGHT_FORMATS`.
    """
    global _MODEL
    if check_weights(weights) != "f32":
        return _get_other(weights)
    m = _MODEL
    if m is not None:
        return m
    with _LOCK:
        if _MODEL is None:
            _MODEL = load()
        return _MODEL


def _get_other(fmt: str) -> Model:
    m = _OTHERS.get(fmt)
    if m is not None:
        return m
    with _LOCK:
        if fmt not in _OTHERS:
            _OTHERS[fmt] = load(weights=fmt)
        return _OTHERS[fmt]


def loaded(weights: str | None = None) -> bool:
    """Whether :func:`get_model` has already loaded the model in this process (in format
    ``weights``; any format when None)."""
    if weights is None:
        return _MODEL is not None or bool(_OTHERS)
    return (_MODEL is not None) if check_weights(weights) == "f32" else weights in _OTHERS
