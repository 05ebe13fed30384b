"""Stage 2, features: the target's layers at every token, float16 shards on disk.

Each sequence (a document's chunk, or a whole self-distillation row) goes through the numpy
forward pass once (``logits="none"``), so every position sees its whole row as context; its
positions are then cut into windows of ``length`` tokens, the rows the head trains on. Per row:
``toks`` (L,) int32, ``feats`` (L, d) float16 (the final-normed feature), ``lens``, with
``layers`` the residual streams after those blocks, ``low`` (L, len(layers), d) float16, and with
per-token weights, ``weight`` (L,) float32.

Sequences are written in shards of :data:`SHARD` sequences, each a folder of ``.npy`` files named
by the sha256 of its own sequences, written to a temporary folder and renamed when complete:
an interrupted run resumes at the first missing shard, and a corpus that grows by appending
sequences (:func:`.corpus.selfdistill_rows` keeps its order) reuses the shards it shares. The
shards are read memory-mapped (:class:`Column`): the whole corpus's features never need to fit
in memory.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

SHARD = 32
#: Residual streams collected for a head fed several layers (EAGLE-3's low and middle layers and a
#: late one: blocks 2, 15 and 27 of 30): any ``--layers`` drawn from them reuses one collection.
COLLECT_LAYERS = (2, 15, 27)
#: A window shorter than this is not a training row.
MIN_ROW = 16


class Stopped(Exception):
    """Raised by :func:`collect` when ``max_shards`` new shards were written (an interruption)."""


def collected_layers(layers) -> tuple[int, ...]:
    """The blocks whose residual streams step 2 keeps for a head that reads ``layers`` (or none):
    :data:`COLLECT_LAYERS` where they cover it, so every such run shares one collection."""
    layers = tuple(layers)
    return COLLECT_LAYERS if set(layers) <= set(COLLECT_LAYERS) else layers


def chunks_of(items: list, length: int) -> tuple[list[np.ndarray], list[str]]:
    """Each document cut into chunks of ``length`` tokens (each run with a fresh context), and
    the genre of each chunk."""
    out, genres = [], []
    for doc, ids in items:
        for s in range(0, len(ids) - 1, length):
            piece = np.asarray(ids[s:s + length], np.int64)
            if piece.size >= MIN_ROW:
                out.append(piece)
                genres.append(doc.genre)
    return out, genres


def windows(n: int, length: int) -> list[int]:
    """The starts of the rows a sequence of ``n`` tokens gives: windows of ``length``, the last
    at least 2 tokens long (one training position); none for a sequence under :data:`MIN_ROW`."""
    return list(range(0, n - 1, length)) if n >= MIN_ROW else []


def chunks_sha(chunks) -> str:
    """The first 16 hex digits of a sha256 over every chunk's token ids, in order."""
    h = hashlib.sha256()
    for c in chunks:
        h.update(np.asarray(c, np.int64).tobytes() + b"|")
    return h.hexdigest()[:16]


def _shard_name(seqs, weights, length: int, layers) -> str:
    h = hashlib.sha256(f"{length}|{','.join(map(str, layers))}|".encode())
    for i, c in enumerate(seqs):
        h.update(np.asarray(c, np.int64).tobytes() + b"|")
        if weights is not None:
            h.update(np.asarray(weights[i], np.float32).tobytes() + b"|")
    return f"shard_{h.hexdigest()[:20]}"


def sequence_features(model, ids: np.ndarray, layers=()) -> tuple[np.ndarray, np.ndarray | None]:
    """The final-normed features (n, d) and the residual streams after ``layers`` (n, L, d) of one
    sequence, float32, from one numpy forward pass."""
    fw = model.forward(ids, model.new_cache(capacity=ids.size), logits="none", capture=layers)
    low = np.stack([fw.captured[m] for m in layers], axis=1) if layers else None
    return fw.hidden, low


#: A common start of at least this many tokens (the chat template's system turn: 31) is run
#: through the model once per shard.
PREFIX_MIN = 8


def common_prefix(seqs) -> int:
    """How many leading tokens every sequence of ``seqs`` shares (each keeping two of its own)."""
    n = min(len(c) for c in seqs) - 2
    first = np.asarray(seqs[0][:max(n, 0)], np.int64)
    for c in seqs[1:]:
        differ = np.flatnonzero(np.asarray(c[:first.size], np.int64) != first)
        first = first[:differ[0]] if differ.size else first
    return int(first.size)


def shard_features(model, seqs, layers=()):
    """:func:`sequence_features` of every sequence of a shard, one at a time. The start they all
    share (every self-distillation row opens with the same chat template) goes through the model
    once, and each sequence's pass continues from its keys and values: the same features to the
    float rounding of a pass split in two, as a decoder's prefill and verify passes split it."""
    p = common_prefix(seqs)
    if p < PREFIX_MIN:
        for c in seqs:
            yield sequence_features(model, np.asarray(c, np.int64), layers)
        return
    cache = model.new_cache(capacity=max(len(c) for c in seqs))
    head = model.forward(np.asarray(seqs[0][:p], np.int64), cache, logits="none", capture=layers)
    for c in seqs:
        cache.rollback(p)
        fw = model.forward(np.asarray(c[p:], np.int64), cache, logits="none", capture=layers)
        hidden = np.concatenate([head.hidden, fw.hidden])
        low = (np.stack([np.concatenate([head.captured[m], fw.captured[m]]) for m in layers], axis=1)
               if layers else None)
        yield hidden, low


def _shard_arrays(model, seqs, weights, length: int, layers) -> dict:
    """The rows of one shard's sequences, in memory."""
    d = model.config.d_model
    starts = [(i, s) for i, c in enumerate(seqs) for s in windows(len(c), length)]
    r = len(starts)
    out = dict(toks=np.zeros((r, length), np.int32), feats=np.zeros((r, length, d), np.float16),
               lens=np.zeros(r, np.int32))
    if layers:
        out["low"] = np.zeros((r, length, len(layers), d), np.float16)
    if weights is not None:
        out["weight"] = np.zeros((r, length), np.float32)
    row = 0
    for i, (c, (hidden, low)) in enumerate(zip(seqs, shard_features(model, seqs, layers))):
        ids = np.asarray(c, np.int64)
        for s in windows(ids.size, length):
            n = min(length, ids.size - s)
            out["toks"][row, :n], out["feats"][row, :n] = ids[s:s + n], hidden[s:s + n]
            out["lens"][row] = n
            if layers:
                out["low"][row, :n] = low[s:s + n]
            if weights is not None:
                out["weight"][row, :n] = weights[i][s:s + n]
            row += 1
    bad = [k for k in ("feats", "low") if k in out and not np.isfinite(out[k]).all()]
    if bad:  # a residual stream beyond float16's 65,504 (the largest seen: about 25,000)
        raise ValueError(f"features {bad} overflow float16")
    return out


def _write_shard(folder: Path, arrays: dict) -> None:
    """Write a shard under a name of this process's, then rename it: a shard folder is always
    complete, and of two processes writing the same shard the first to finish keeps it."""
    tmp = folder.with_name(f"{folder.name}.tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    for k, v in arrays.items():
        np.save(tmp / f"{k}.npy", v)
    (tmp / "rows.json").write_text(json.dumps(dict(rows=int(arrays["lens"].size), keys=sorted(arrays))))
    try:
        tmp.rename(folder)
    except OSError:
        if not folder.is_dir():
            raise
        shutil.rmtree(tmp, ignore_errors=True)  # the same shard, written meanwhile by another run


def _read_shard(folder: Path) -> dict:
    keys = json.loads((folder / "rows.json").read_text())["keys"]
    return {k: np.load(folder / f"{k}.npy", mmap_mode="r") for k in keys}


@dataclass
class Progress:
    """The features stage's progress line: sequences, tokens, tokens a second and an ETA."""

    total_seqs: int
    total_tokens: int
    label: str = "features"
    done_seqs: int = 0
    done_tokens: int = 0
    new_tokens: int = 0
    t0: float = 0.0

    def __post_init__(self):
        self.t0 = time.perf_counter()

    def add(self, seqs: int, tokens: int, computed: bool) -> str:
        self.done_seqs += seqs
        self.done_tokens += tokens
        self.new_tokens += tokens if computed else 0
        el = time.perf_counter() - self.t0
        rate = self.new_tokens / el if el > 0 and self.new_tokens else 0.0
        eta = (self.total_tokens - self.done_tokens) / rate if rate else float("nan")
        return (f"  {self.label} {self.done_seqs}/{self.total_seqs} sequences, "
                f"{self.done_tokens:,}/{self.total_tokens:,} tokens, {rate:.0f} tokens/s, "
                f"ETA {eta / 60:.1f} min")


class Column:
    """One array of the rows of several shards, read lazily: ``column[idx]`` (an int, a slice, an
    index array, optionally followed by indices of the inner axes) reads only those rows.
    ``take(rows)`` is a view of some rows; ``select(tail)`` indexes the inner axes (e.g. some of
    the collected layers) whenever rows are read. ``numpy.asarray(column)`` reads everything."""

    def __init__(self, parts: list, rows=None, tail: tuple = ()) -> None:
        self.parts = parts
        self.ends = np.cumsum([p.shape[0] for p in parts])
        self.rows = rows
        self.tail = tail
        self.dtype = parts[0].dtype

    @property
    def shape(self) -> tuple:
        n = int(self.ends[-1]) if self.rows is None else len(self.rows)
        inner = np.empty((0,) + self.parts[0].shape[1:], self.dtype)[(slice(None),) + self.tail]
        return (n,) + inner.shape[1:]

    def __len__(self) -> int:
        return self.shape[0]

    def take(self, rows) -> "Column":
        rows = np.asarray(rows, np.int64)
        return Column(self.parts, rows if self.rows is None else self.rows[rows], self.tail)

    def select(self, tail: tuple) -> "Column":
        return Column(self.parts, self.rows, tuple(tail))

    def _gather(self, idx: np.ndarray) -> np.ndarray:
        which = np.searchsorted(self.ends, idx, side="right")
        out = np.empty((idx.size,) + self.parts[0].shape[1:], self.dtype)
        for w in np.unique(which):
            at = which == w
            out[at] = self.parts[w][idx[at] - (self.ends[w - 1] if w else 0)]
        return out[(slice(None),) + self.tail] if self.tail else out

    def __getitem__(self, key):
        first, rest = (key[0], key[1:]) if isinstance(key, tuple) else (key, ())
        idx = np.arange(self.shape[0])[first]
        if self.rows is not None:
            idx = self.rows[idx]
        if np.ndim(idx) == 0:
            return self._gather(np.atleast_1d(idx))[0][rest]
        return self._gather(idx)[(slice(None),) + rest]

    def __array__(self, dtype=None, copy=None):
        out = self[:]
        return out if dtype is None else out.astype(dtype)


def n_rows(data: dict) -> int:
    return data["toks"].shape[0]


def take_rows(data: dict, rows) -> dict:
    """The rows ``rows`` of a features dict: lazily for shard columns, copied for arrays."""
    return {k: v.take(rows) if isinstance(v, Column) else v[rows] for k, v in data.items()}


def pick_layers(low, sel: list[int]):
    """The streams of the collected layers at positions ``sel`` (axis 2), lazily for a column."""
    return low.select((slice(None), sel)) if isinstance(low, Column) else low[:, :, sel]


def _empty(length: int, d: int, layers, weighted: bool) -> dict:
    out = dict(toks=np.zeros((0, length), np.int32), feats=np.zeros((0, length, d), np.float16),
               lens=np.zeros(0, np.int32), seq=np.zeros(0, np.int32))
    if layers:
        out["low"] = np.zeros((0, length, len(layers), d), np.float16)
    if weighted:
        out["weight"] = np.zeros((0, length), np.float32)
    return out


def collect(model, seqs: list, path: Path, length: int, layers=(), *, weights=None,
            max_shards: int | None = None, label: str = "features", shard: int = SHARD) -> dict:
    """The features of every window of ``seqs`` (see the module's docstring), computed shard by
    shard into ``path`` and read back memory-mapped as :class:`Column` s; ``seq`` (an array)
    names each row's sequence. Shards already in ``path`` are not computed again.

    ``weights``: a per-token weight array per sequence (stored as ``weight``). ``max_shards``:
    compute at most that many missing shards, then raise :class:`Stopped` (an interruption).
    ``shard``: sequences a shard.
    """
    path, layers = Path(path), tuple(layers)
    path.mkdir(parents=True, exist_ok=True)
    if not seqs:
        return _empty(length, model.config.d_model, layers, weights is not None)
    prog = Progress(len(seqs), sum(len(c) for c in seqs), label)
    parts, written = [], 0
    for s in range(0, len(seqs), shard):
        part, w = seqs[s:s + shard], None if weights is None else weights[s:s + shard]
        folder = path / _shard_name(part, w, length, layers)
        computed = not folder.is_dir()
        if computed:
            if max_shards is not None and written >= max_shards:
                raise Stopped(f"stopped after {written} new shards, at sequence {s} of {len(seqs)}")
            _write_shard(folder, _shard_arrays(model, part, w, length, layers))
            written += 1
        parts.append(_read_shard(folder))
        line = prog.add(len(part), sum(len(c) for c in part), computed)
        if computed:
            print(line, flush=True)
    out = {k: Column([p[k] for p in parts]) for k in parts[0]}
    out["seq"] = np.array([i for i, c in enumerate(seqs) for _ in windows(len(c), length)], np.int32)
    return out


def model_choices(model, data: dict, block: int = 16) -> np.ndarray:
    """How often the model's own greedy token (argmax of its head on each collected feature) is
    each token id: what the model writes, not what the corpus says."""
    counts = np.zeros(model.config.vocab_size, np.int64)
    lens = np.asarray(data["lens"])
    for s in range(0, lens.size, block):
        feats = np.asarray(data["feats"][s:s + block], np.float32)
        valid = np.arange(feats.shape[1])[None, :] < lens[s:s + block, None]
        best = model.head(feats[valid]).argmax(axis=1)
        counts += np.bincount(best, minlength=counts.size)
    return counts


def pick_vocab(choices: np.ndarray, toks, lens, n_vocab: int, always=(),
               row_weight: np.ndarray | None = None) -> np.ndarray:
    """The head's vocabulary (FR-Spec's reduced head): the ``n_vocab`` tokens ranked by ``choices``
    (the model's own greedy choices; all zero ranks by the corpus alone), ties and the rest by
    corpus frequency (each row's tokens counted ``row_weight`` times: the mixture training draws),
    plus ``always``; sorted."""
    toks, lens = np.asarray(toks), np.asarray(lens)
    mask = np.arange(toks.shape[1])[None, :] < lens[:, None]
    w = None if row_weight is None else np.broadcast_to(
        np.asarray(row_weight, np.float64)[:, None], mask.shape)[mask]
    corpus = np.bincount(toks[mask].astype(np.int64), weights=w, minlength=choices.size)
    score = choices.astype(np.float64) * (corpus.max(initial=0) + 1) + corpus
    score[list(always)] = score.max() + 1
    return np.sort(np.argsort(-score, kind="stable")[:n_vocab])


def merge(a: dict, b: dict) -> dict:
    """The rows of two features dicts, ``a``'s first (``b``'s sequences numbered after ``a``'s)."""
    if not n_rows(b):
        return a
    if not n_rows(a):
        return b
    out = {}
    for k in a:
        if k == "seq":
            out[k] = np.concatenate([a[k], b[k] + (int(a[k].max()) + 1 if a[k].size else 0)])
        elif isinstance(a[k], Column) and isinstance(b[k], Column) and a[k].rows is None is b[k].rows:
            out[k] = Column(a[k].parts + b[k].parts)
        else:
            out[k] = np.concatenate([np.asarray(a[k]), np.asarray(b[k])])
    return out
