"""The memory draft: guesses from what the model has written before, with no model at all.

A model's replies repeat themselves across conversations: the same openings, the same phrasings,
the same code idioms. The memory draft keeps an index of the model's own past replies and, each
round, finds the longest stretch of the text so far that it has seen before and proposes what
most often came next there, token by token. This is SuffixDecoding's idea (Oliaro et al. 2024,
arXiv 2411.04975: suffix trees over earlier outputs and over the current request, the most
frequent continuation of the longest match, drafts that grow with the match) and is close to
REST (He et al. 2023, a retrieval datastore).

Two indexes, one rule:

* **Global**: a suffix array over the training split of the model's own greedy replies
  (``shared/data/selfdistill``, loops cut), built offline by ``scripts/build_memory_index.py``
  into ``assets/lm/memory_index.npz`` (provenance beside it in ``memory_index.json``), loaded once
  per process and shared read-only.
* **Per request**: the prompt and the tokens written so far, searched directly (a request is
  short); it takes precedence where its match is longer, so a reply that repeats its prompt, or
  itself, is copied from there.

A suffix array keeps every position of the corpus sorted by the text that starts there, so the
occurrences of any stretch of text are one contiguous range found by binary search, and the
tokens that followed them are sorted within it: counting the continuations is counting runs.

The draft stops where a guess is unlikely: when the most frequent continuation's share of the
match's occurrences falls below ``min_share``, when the match is shorter than ``min_match``, or
when it has drafted ``factor`` times the length of the match it started from (a long match earns
a long draft, as in SuffixDecoding). Its candidates (top-w continuations with their shares) give
token trees and a draft distribution q for speculative sampling, like the n-gram table's.

The searches are compiled with numba where it is installed (a few microseconds a guess), else run
as the same Python (slow, but the same answers).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..shipped import asset_path
from ..sim import validate as _v
from .kernel.backend import HAVE_NUMBA, numba, user_cache
from .ngram import NONE, Candidates, count_probs, over_vocab
from . import sampling
from .sampling import TEMPERATURE_MAX

ASSET = "lm/memory_index.npz"
META = "lm/memory_index.json"
#: The token between two replies in the corpus (no real token: the vocabulary has 49,152).
SEP = 65535
#: The longest stretch of text a search matches (the suffix array is sorted this deep and more).
MAX_MATCH = 32
#: Continuations kept per match in candidates (as the n-gram table's WIDTH).
WIDTH = 8
#: Above this many occurrences, the continuations are found from this many evenly spaced ones,
#: then each one's count is found exactly (a continuation with a share above 1/SAMPLE is never
#: missed).
SAMPLE = 256
#: The request's own index reads at most this many of its latest tokens.
LOCAL_MAX = 4096
#: Sorting depth of the suffix array: tokens compared before ties fall back to position.
SORT_DEPTH = 64


class MemoryIndexError(RuntimeError):
    """The memory index asset is missing or does not check out."""


# ------------------------------------------------------------------------------ building

def _checked(ids) -> np.ndarray:
    """``ids`` as one contiguous int64 array; ``ValueError`` unless every id is in [0, SEP)."""
    arr = np.ascontiguousarray(np.asarray(ids, np.int64).reshape(-1))
    if arr.size and (arr.min() < 0 or arr.max() >= SEP):
        raise ValueError(f"token ids must be in [0, {SEP - 1}]")
    return arr


def corpus_of(rows) -> np.ndarray:
    """The rows (token id arrays) joined into one uint16 corpus, each followed by :data:`SEP`."""
    parts = []
    for r in rows:
        parts.append(_checked(r).astype(np.uint16))
        parts.append(np.array([SEP], np.uint16))
    return np.concatenate(parts) if parts else np.zeros(0, np.uint16)


def suffix_array(corpus: np.ndarray, depth: int = SORT_DEPTH) -> np.ndarray:
    """Every position of ``corpus`` sorted by the ``depth`` (or more) tokens that start there,
    ties by position (uint32): prefix doubling on numpy's stable sort, deterministic."""
    x = np.asarray(corpus)
    n = x.size
    if n == 0:
        return np.zeros(0, np.uint32)
    if n >= 2 ** 32 - 1:
        raise ValueError("corpus too long for a uint32 suffix array")
    _, rank = np.unique(x, return_inverse=True)  # dense ranks 0..u-1
    rank = rank.astype(np.int64) + 1  # 0 is "past the end"
    h = 1
    order = np.argsort(rank, kind="stable")
    while h < depth:
        second = np.zeros(n, np.int64)
        second[:n - h] = rank[h:]
        key = rank * (n + 2) + second
        order = np.argsort(key, kind="stable")
        k = key[order]
        new = np.empty(n, np.int64)
        new[order] = np.concatenate([[1], 1 + np.cumsum(k[1:] != k[:-1])])
        rank = new
        if rank.max() == n:
            break
        h *= 2
    return order.astype(np.uint32)


def build_index(rows) -> dict:
    """The global index of ``rows``: ``corpus`` (uint16) and ``sa`` (uint32), the same bytes
    every time for the same rows."""
    corpus = corpus_of(rows)
    return dict(corpus=corpus, sa=suffix_array(corpus))


def index_digest(index: dict) -> str:
    """sha256 of the index's arrays (corpus, then suffix array), as the provenance records it."""
    h = hashlib.sha256()
    h.update(np.ascontiguousarray(index["corpus"], np.uint16).tobytes())
    h.update(np.ascontiguousarray(index["sa"], np.uint32).tobytes())
    return h.hexdigest()


# ------------------------------------------------------------------------------ loading

@functools.cache
def index_meta() -> dict:
    """The shipped index's provenance (``memory_index.json``): its source, split, rows, tokens and
    sha256, as the pages quote them (read once per process)."""
    return json.loads(asset_path(META).read_text("utf-8"))


_LOCK = threading.Lock()
_INDEX: dict | None = None


def mapped_dir() -> Path:
    """Where the shipped index is kept unpacked for mapping: the user's cache folder
    (:func:`.kernel.backend.user_cache`) / ``memory``."""
    return user_cache("memory")


def _mapped(digest: str) -> dict | None:
    """The shipped index as read-only memory maps of its unpacked copy (``digest``: its sha256),
    or None where there is no good copy. Mapped pages belong to the file, so every model process
    of the machine shares one copy of them instead of holding its own."""
    folder = mapped_dir() / digest[:16]
    try:
        index = {name: np.load(folder / f"{name}.npy", mmap_mode="r") for name in ("corpus", "sa")}
        index = {name: np.asarray(a) for name, a in index.items()}
        _check(index, folder, True)
        return index
    except (OSError, ValueError, MemoryIndexError):
        return None


def _unpack(index: dict, digest: str) -> None:
    """Write the checked index's arrays uncompressed beside each other for :func:`_mapped`
    (each file written whole under a temporary name, then renamed); a cache that cannot be
    written is left out (the process keeps its own copy)."""
    folder = mapped_dir() / digest[:16]
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for name, a in index.items():
            tmp = folder / f".{name}.{os.getpid()}.npy"
            np.save(tmp, np.ascontiguousarray(a))
            os.replace(tmp, folder / f"{name}.npy")
    except OSError:
        pass


def load_index(path=None) -> dict:
    """The shipped index (loaded once per process, arrays read-only), checked against its
    provenance; a missing or corrupt asset is a :class:`MemoryIndexError` saying which.

    The shipped index is read from an unpacked copy in the user's cache, memory-mapped
    (:func:`mapped_dir`), so the model processes of one machine share its pages: the first
    process writes the copy from the asset; every process checks the copy against the
    provenance's sha256 and reads the asset again when it does not match."""
    global _INDEX
    if path is None and _INDEX is not None:
        return _INDEX
    with _LOCK:
        if path is None and _INDEX is not None:
            return _INDEX
        if path is None:
            digest = _shipped_digest()
            index = _mapped(digest) if digest and _shipped() else None
            if index is not None:
                _INDEX = index
                return index
        where = ASSET if path is None else path
        try:
            if path is None:
                where = asset_path(ASSET)  # FileNotFoundError when it is not shipped
            with np.load(where) as z:
                index = {"corpus": z["corpus"], "sa": z["sa"]}
        except FileNotFoundError:
            raise MemoryIndexError(f"the memory index {where} is missing; build it with "
                                   "scripts/build_memory_index.py") from None
        except Exception as exc:  # noqa: BLE001 - a damaged zip or array, whatever numpy raises
            raise MemoryIndexError(f"the memory index {where} could not be read "
                                   f"({type(exc).__name__}: {exc})") from None
        _check(index, where, path is None)
        for a in index.values():
            a.setflags(write=False)
        if path is not None:
            return index
        _unpack(index, digest)
        _INDEX = _mapped(digest) or index
        return _INDEX


def _shipped() -> bool:
    """Whether the asset is there (the unpacked copy stands in for it, never without it)."""
    try:
        return asset_path(ASSET).is_file()
    except FileNotFoundError:
        return False


def _shipped_digest() -> str | None:
    """The shipped index's sha256 from its provenance (None where it cannot be read: the asset's
    own load then says why)."""
    try:
        digest = index_meta().get("index_sha256")
    except (FileNotFoundError, ValueError, KeyError):
        return None
    return digest if isinstance(digest, str) and len(digest) == 64 else None


def _check(index: dict, where, shipped: bool) -> None:
    corpus, sa = index["corpus"], index["sa"]
    if corpus.dtype != np.uint16 or sa.dtype != np.uint32 or corpus.ndim != 1 or sa.shape != corpus.shape:
        raise MemoryIndexError(f"the memory index {where} has the wrong arrays "
                               f"({corpus.dtype}{corpus.shape}, {sa.dtype}{sa.shape})")
    if corpus.size and corpus[-1] != SEP:
        raise MemoryIndexError(f"the memory index {where} does not end with a separator")
    if shipped:
        try:
            meta = index_meta()
        except (FileNotFoundError, ValueError, KeyError):
            raise MemoryIndexError(f"the memory index's provenance {META} is missing or unreadable; "
                                   "build it with scripts/build_memory_index.py") from None
        if index_digest(index) != meta.get("index_sha256"):
            raise MemoryIndexError(f"the memory index {where} does not match its provenance "
                                   f"({META}'s index_sha256)")


# ------------------------------------------------------------------------------ searching

def _jit(fn):
    return numba.njit(cache=True, nogil=True)(fn) if HAVE_NUMBA else fn


@_jit
def _cmp(corpus, pos, pat, plen):  # pragma: no cover - compiled
    """-1, 0 or 1: the suffix at ``pos`` against ``pat[:plen]`` on its first ``plen`` tokens."""
    n = corpus.shape[0]
    for t in range(plen):
        if pos + t >= n:
            return -1
        a = corpus[pos + t]
        b = pat[t]
        if a < b:
            return -1
        if a > b:
            return 1
    return 0


@_jit
def _range(corpus, sa, pat, plen):  # pragma: no cover - compiled
    """[lo, hi): the suffixes that start with ``pat[:plen]``."""
    lo, hi = 0, sa.shape[0]
    while lo < hi:  # first suffix >= pat
        mid = (lo + hi) >> 1
        if _cmp(corpus, np.int64(sa[mid]), pat, plen) < 0:
            lo = mid + 1
        else:
            hi = mid
    first = lo
    hi = sa.shape[0]
    while lo < hi:  # first suffix > pat
        mid = (lo + hi) >> 1
        if _cmp(corpus, np.int64(sa[mid]), pat, plen) <= 0:
            lo = mid + 1
        else:
            hi = mid
    return first, lo


@_jit
def _longest(corpus, sa, ctx, max_len):  # pragma: no cover - compiled
    """(m, lo, hi): the longest suffix of ``ctx`` (at most ``max_len`` tokens) that occurs in the
    corpus, and the range of its occurrences; m is 0 when not even the last token occurs."""
    n = ctx.shape[0]
    top = min(max_len, n)
    best, blo, bhi = 0, 0, sa.shape[0]
    lo_l, hi_l = 1, top  # binary search on the length: occurring is monotone in it
    while lo_l <= hi_l:
        mid = (lo_l + hi_l) >> 1
        pat = ctx[n - mid:]
        a, b = _range(corpus, sa, pat, mid)
        if b > a:
            best, blo, bhi = mid, a, b
            lo_l = mid + 1
        else:
            hi_l = mid - 1
    return best, blo, bhi


@_jit
def _next_bound(corpus, sa, lo, hi, m, tok):  # pragma: no cover - compiled
    """The first index in [lo, hi) whose continuation token (at offset ``m``) exceeds ``tok``."""
    while lo < hi:
        mid = (lo + hi) >> 1
        if np.int64(corpus[np.int64(sa[mid]) + m]) <= tok:
            lo = mid + 1
        else:
            hi = mid
    return lo


@_jit
def _continuations(corpus, sa, lo, hi, m, sample):  # pragma: no cover - compiled
    """The distinct tokens that followed the ``hi - lo`` occurrences (sorted by it) and how often.

    Up to ``sample`` occurrences every one is read; beyond, the tokens at ``sample`` evenly spaced
    occurrences name the candidates and each one's run is measured exactly by binary search."""
    total = hi - lo
    toks = np.empty(min(total, sample), np.int64)
    counts = np.empty(min(total, sample), np.int64)
    d = 0
    if total <= sample:
        i = lo
        while i < hi:
            t = np.int64(corpus[np.int64(sa[i]) + m])
            if d > 0 and toks[d - 1] == t:
                counts[d - 1] += 1
            else:
                toks[d] = t
                counts[d] = 1
                d += 1
            i += 1
        return toks[:d], counts[:d]
    start = lo
    for s in range(sample):
        i = lo + (s * total) // sample
        if i < start:
            continue
        t = np.int64(corpus[np.int64(sa[i]) + m])
        end = _next_bound(corpus, sa, i, hi, m, t)
        first = start
        # the run of t starts at or before i: find its first index (binary search back)
        a, b = start, i
        while a < b:
            mid = (a + b) >> 1
            if np.int64(corpus[np.int64(sa[mid]) + m]) < t:
                a = mid + 1
            else:
                b = mid
        first = a
        toks[d] = t
        counts[d] = end - first
        d += 1
        start = end
        if start >= hi:
            break
    return toks[:d], counts[:d]


@_jit
def _local(text, max_len):  # pragma: no cover - compiled
    """(m, tokens that followed): the longest suffix of ``text`` (at most ``max_len`` tokens) that
    also occurs earlier in ``text`` with a token after it, and the tokens after each occurrence."""
    n = text.shape[0]
    lens = np.zeros(max(n - 1, 0), np.int64)
    best = 0
    for j in range(n - 1):  # an occurrence ending at j, followed by text[j + 1]
        ln = 0
        while ln < max_len and ln <= j and text[j - ln] == text[n - 1 - ln]:
            ln += 1
        lens[j] = ln
        if ln > best:
            best = ln
    if best == 0:
        return 0, np.zeros(0, np.int64)
    c = 0
    for j in range(n - 1):
        if lens[j] == best:
            c += 1
    out = np.empty(c, np.int64)
    c = 0
    for j in range(n - 1):
        if lens[j] == best:
            out[c] = text[j + 1]
            c += 1
    return best, out


@_jit
def _top(toks, counts):  # pragma: no cover - compiled
    """(token, count) of the most frequent continuation, ties to the smaller token, the end of a
    reply (SEP) left out; (-1, 0) when there is none."""
    best, bc = -1, 0
    for i in range(toks.shape[0]):
        t, c = toks[i], counts[i]
        if t == SEP:
            continue
        if c > bc or (c == bc and t < best):
            best, bc = t, c
    return best, bc


@_jit
def _chain(corpus, sa, text, k, rule):  # pragma: no cover - compiled
    """The greedy proposal in one call: up to ``k`` tokens, each the most frequent continuation of
    the longest match (the request's where longer), where the first came from (0 none, 1 the
    global index, 2 the request), and each token's share of its match's occurrences. ``rule``:
    (min_share, min_match, factor, longest match, sample, the request's tokens read). The same
    rule as :meth:`MemoryRun.propose_reference`."""
    min_share, min_match, factor, max_len, sample, local_max = rule
    n = text.shape[0]
    buf = np.empty(n + k, np.int64)
    buf[:n] = text
    out = np.empty(k, np.int64)
    shares = np.empty(k, np.float64)
    got, first, budget = 0, 0, k
    for i in range(k):
        cur = buf[:n + i]
        m_g, lo, hi = 0, 0, 0
        if sa.shape[0] > 0 and cur.shape[0] > 0:
            m_g, lo, hi = _longest(corpus, sa, cur, max_len)
        start = max(0, cur.shape[0] - local_max)
        m_l, after = _local(cur[start:], max_len)
        if m_l > m_g:
            srt = np.sort(after)
            toks = np.empty(srt.shape[0], np.int64)
            counts = np.empty(srt.shape[0], np.int64)
            d = 0
            for j in range(srt.shape[0]):
                if d > 0 and toks[d - 1] == srt[j]:
                    counts[d - 1] += 1
                else:
                    toks[d] = srt[j]
                    counts[d] = 1
                    d += 1
            tok, c = _top(toks[:d], counts[:d])
            m, total, src = m_l, srt.shape[0], 2
        elif m_g > 0:
            toks, counts = _continuations(corpus, sa, lo, hi, m_g, sample)
            tok, c = _top(toks, counts)
            m, total, src = m_g, hi - lo, 1
        else:
            break
        if i == 0:
            budget = min(k, int(np.ceil(factor * m)))
            first = src
        if i >= budget or m < min_match or tok < 0 or c / total < min_share:
            break
        buf[n + i] = tok
        out[got] = tok
        shares[got] = c / total
        got += 1
    return out[:got], first, shares[:got]


# ------------------------------------------------------------------------------ one match

@dataclass(frozen=True, eq=False)
class Match:
    """What the memory knows after a context: the longest match and what followed it.

    Attributes
    ----------
    length : int
        Tokens matched (0: nothing known).
    source : str
        ``"request"`` (the prompt and text so far), ``"memory"`` (past replies) or ``""``.
    tokens, counts : numpy.ndarray of int64
        The distinct continuations, most frequent first (ties: smaller token first), and how many
        occurrences each followed. The end of a past reply is not a continuation.
    total : int
        Occurrences of the match (ends of replies included).
    """

    length: int
    source: str
    tokens: np.ndarray
    counts: np.ndarray
    total: int

    @property
    def share(self) -> float:
        """The most frequent continuation's share of the occurrences (0 when none)."""
        return float(self.counts[0]) / self.total if self.counts.size else 0.0


NO_MATCH = Match(0, "", np.zeros(0, np.int64), np.zeros(0, np.int64), 0)


def _ranked(toks: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    keep = toks != SEP
    toks, counts = toks[keep], counts[keep]
    order = np.lexsort((toks, -counts))
    return toks[order].astype(np.int64), counts[order].astype(np.int64)


def match(index: dict | None, text, max_len: int = MAX_MATCH) -> Match:
    """The longest match of ``text``'s end in the request itself (``text`` before its end) and in
    the global ``index`` (None: the request only); the request's wins where it is longer."""
    ctx = _checked(text)
    m_g, lo, hi = (0, 0, 0) if index is None or not ctx.size else _longest(
        index["corpus"], index["sa"], ctx, max_len)
    local = ctx[-LOCAL_MAX:]
    m_l, after = _local(local, max_len) if local.size > 1 else (0, np.zeros(0, np.int64))
    if m_l > m_g:
        toks, counts = np.unique(after, return_counts=True)
        toks, counts = _ranked(toks, counts)
        return Match(int(m_l), "request", toks, counts, int(after.size))
    if m_g == 0:
        return NO_MATCH
    toks, counts = _continuations(index["corpus"], index["sa"], lo, hi, m_g, SAMPLE)
    toks, counts = _ranked(toks, counts)
    return Match(int(m_g), "memory", toks, counts, int(hi - lo))


# ------------------------------------------------------------------------------ the draft

@dataclass(frozen=True)
class MemoryDraft:
    """Propose what most often followed the longest match of the text in the model's past replies
    or in the request so far.

    Parameters
    ----------
    min_share : float
        Stop when the most frequent continuation followed less than this share of the match's
        occurrences, in [0, 1].
    min_match : int
        Stop when the match is shorter than this many tokens, in [1, MAX_MATCH].
    factor : float
        Draft at most ``ceil(factor * m)`` tokens a round, ``m`` the length of the match the round
        starts from, in (0, 16]: a long match earns a long draft.
    path : str
        Another index to draft from (tests, benchmarks); empty: the shipped one.

    Examples
    --------
    >>> run = MemoryDraft().begin(None)                                   # doctest: +SKIP
    >>> run.propose(tokenizer.chat("Write an email") + [...], 4).tokens   # doctest: +SKIP
    """

    min_share: float = 0.3
    min_match: int = 2
    factor: float = 1.0
    path: str = ""
    name: str = "memory"
    needs_features = False
    capture = ()

    def __post_init__(self):
        _v.real("min_share", self.min_share, 0.0, 1.0)
        _v.integer("min_match", self.min_match, 1, MAX_MATCH)
        if not (isinstance(self.factor, (int, float)) and 0.0 < self.factor <= 16.0):
            raise ValueError(f"factor must be in (0, 16]; got {self.factor!r}")

    def index(self) -> dict:
        return load_index(self.path or None)

    def begin(self, model) -> "MemoryRun":
        vocab = 49152 if model is None else int(model.config.vocab_size)
        return MemoryRun(self.index(), self, vocab)

    def candidates(self, context, w: int = WIDTH, *, temperature: float = 1.0) -> Candidates:
        """The draft's ``w`` likeliest next tokens after ``context`` (see :meth:`MemoryRun.candidates`)."""
        return self.begin(None).candidates(context, w, temperature=temperature)

    def distribution(self, context, vocab: int, *, temperature: float = 1.0) -> np.ndarray:
        """The draft's q over the whole vocabulary (float64; all zero where nothing matches)."""
        return self.begin(None).distribution(context, vocab, temperature=temperature)


class MemoryRun:
    """One run of the memory draft: reads the index, keeps nothing between rounds but counts."""

    capture = ()

    def __init__(self, index: dict, draft: MemoryDraft, vocab: int) -> None:
        self.index, self.draft, self.vocab = index, draft, vocab
        #: Where the last proposal's first guess came from: ``"request"``, ``"memory"`` or ``""``
        #: when it proposed nothing (each round's :attr:`.decode.Update.drafted_by`).
        self.last_source = ""

    def match(self, context) -> Match:
        return match(self.index, context)

    def _confident(self, m: Match) -> bool:
        return (m.length >= self.draft.min_match and m.counts.size > 0
                and m.share >= self.draft.min_share)

    def candidates(self, context, w: int = WIDTH, *, temperature: float = 1.0) -> Candidates:
        """Its ``w`` likeliest next tokens after ``context``: the continuations of the longest
        match, by count raised to ``1 / temperature`` and normalised over the :data:`WIDTH` most
        frequent (``order`` is the match's length; ``kept_mass`` their share of the occurrences,
        the rest being rarer continuations and ends of replies; ``confident`` exactly when
        :meth:`propose` would propose the first)."""
        w = _v.integer("w", w, 1, WIDTH)
        temperature = _v.real("temperature", temperature, 0.0, TEMPERATURE_MAX)
        return self._candidates_of(self.match(context), w, temperature)

    def _candidates_of(self, m: Match, w: int, temperature: float) -> Candidates:
        """:meth:`candidates` of a match already made (settings already checked)."""
        if not m.counts.size:
            return NONE
        counts = m.counts[:WIDTH].astype(np.float64)
        probs = count_probs(counts, temperature)
        return Candidates(tokens=m.tokens[:w].copy(), probs=probs[:w], order=m.length,
                          kept_mass=float(counts.sum() / m.total), confident=self._confident(m))

    def distribution(self, context, vocab: int, *, temperature: float = 1.0) -> np.ndarray:
        return over_vocab(self.candidates(context, WIDTH, temperature=temperature), vocab)

    def propose(self, context, k: int, *, temperature: float = 0.0, top_p: float = 1.0, rng=None):
        """Up to ``k`` tokens, each the most frequent continuation of the longest match of the
        text with the tokens drafted before it (with ``temperature`` > 0, a draw from q, returned
        as ``p_draft``). Greedy proposals run as one compiled call (:func:`_chain`)."""
        from .drafts import EMPTY, Proposal

        if temperature == 0.0:
            toks, _ = self.chain(context, k)
            return Proposal(toks) if len(toks) else EMPTY
        return self.propose_reference(context, k, temperature=temperature, rng=rng)

    def chain(self, context, k: int) -> tuple[np.ndarray, np.ndarray]:
        """The greedy proposal of up to ``k`` tokens and each one's share of its match's
        occurrences (how many past continuations agreed), in one compiled call (:func:`_chain`);
        sets :attr:`last_source`."""
        ctx = _checked(context)
        d = self.draft
        rule = (float(d.min_share), int(d.min_match), float(d.factor), MAX_MATCH, SAMPLE, LOCAL_MAX)
        toks, first, shares = _chain(self.index["corpus"], self.index["sa"], ctx, int(k), rule)
        self.last_source = ("", "memory", "request")[int(first)] if len(toks) else ""
        return toks.copy(), shares.copy()

    def propose_reference(self, context, k: int, *, temperature: float = 0.0, rng=None):
        """:meth:`propose` step by step through :func:`match` (the rule the compiled chain follows;
        the sampled path)."""
        from .drafts import EMPTY, Proposal

        text = list(np.asarray(context, np.int64).reshape(-1))
        out: list[int] = []
        rows: list[np.ndarray] = []
        budget, first = k, ""
        for i in range(k):
            m = self.match(text)
            if i == 0:
                budget = min(k, int(np.ceil(self.draft.factor * m.length)))
                first = m.source
            if i >= budget or not self._confident(m):
                break
            if temperature > 0.0:
                c = self._candidates_of(m, WIDTH, temperature)
                q = over_vocab(c, self.vocab)
                tok = int(c.tokens[sampling.draw(c.probs, rng)])
                rows.append(q)
            else:
                tok = int(m.tokens[0])
            out.append(tok)
            text.append(tok)
        self.last_source = first if out else ""
        if not out:
            return EMPTY
        return Proposal(np.array(out, np.int64), np.array(rows) if rows else None)

    def draft_tree(self, context, width: int, depth: int, shape: str = "spine"):
        """A token tree of the memory's candidates: each level the top ``width`` continuations of
        the longest match after each kept node's path, only where the memory is confident
        (``"spine"``: only the first child goes on; ``"full"`` and ``"dynamic"``: every child,
        so the tree grows where past replies agree)."""
        from .tree import grow_tree

        if shape not in ("spine", "full", "dynamic"):
            raise ValueError(f"shape must be 'spine', 'full' or 'dynamic'; got {shape!r}")
        width = _v.integer("w", width, 1, WIDTH)
        ctx = list(np.asarray(context, np.int64).reshape(-1))
        root = self.match(ctx)  # the root's guesses, and where the round's first guess comes from

        def candidates(path):
            return self._candidates_of(self.match(ctx + path) if path else root, width, 1.0)

        tree = grow_tree(candidates, depth, spread=shape != "spine")
        self.last_source = root.source if self._confident(root) else ""
        return tree


def warmup() -> None:
    """Compile the searches (numba caches them on disk) on a tiny corpus."""
    idx = build_index([np.array([1, 2, 3, 1, 2, 4], np.int64)])
    match(idx, np.array([1, 2], np.int64))


__all__ = ["ASSET", "MAX_MATCH", "Match", "MemoryDraft", "MemoryIndexError", "MemoryRun", "SEP",
           "WIDTH", "build_index", "corpus_of", "index_digest", "index_meta", "load_index", "match", "suffix_array",
           "warmup"]
