"""The n-gram table: a token n-gram draft over SmolLM2's own tokenizer, trained offline.

``scripts/train_learned_draft.py`` counts, in Python standard-library source (PSF licence), which
tokens follow each context of 1, 2 and 3 tokens, and keeps, for each context seen often enough, its
``WIDTH`` (8) most frequent continuations with their counts. The table ships as
``assets/lm/ngram_draft.npz`` (provenance in ``assets/PROVENANCE.md`` and
``assets/lm/ngram_draft.json``). Proposing is a few binary searches per token: the draft costs
almost nothing next to a target pass, but it knows only what code usually looks like, nothing of
the conversation.

The longest known context wins (3, then 2, then 1 tokens). The draft stops proposing when the
winning continuation's share of that context's count falls below ``min_share``: on this CPU every
extra verified position costs real time, so an unsure guess is worth less than no guess.

Proposing reads only each context's most frequent continuation. :meth:`NgramDraft.candidates`
reads the others too: the draft's top-w guesses with their probabilities, for a draft distribution
q (with a temperature) and for token trees (:mod:`.tree`).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np

from ..sim import validate as _v
from ..shipped import asset_path
from .sampling import TEMPERATURE_MAX

ASSET = "lm/ngram_draft.npz"
ORDERS = (3, 2, 1)
#: Continuations kept per context in the shipped table.
WIDTH = 8

_LOCK = threading.Lock()
_TABLES: dict | None = None


def _key(ctx: np.ndarray, vocab: int) -> int:
    key = 0
    for t in ctx:
        key = key * vocab + int(t)
    return key


def load_tables(path=None) -> dict:
    """The shipped table (loaded once per process, arrays read-only).

    Per order n: ``keys{n}`` (sorted context keys), ``share{n}`` (the top continuation's share of
    the context's count, 0-255), ``width{n}`` (continuations kept), ``cand{n}`` and ``count{n}``
    (the kept continuations, most frequent first, one run per context), ``rest{n}`` (the count of
    the continuations not kept); derived here: ``start{n}`` (each context's run in ``cand{n}``,
    plus the end) and ``next{n}`` (its most frequent continuation).
    """
    global _TABLES
    if path is None and _TABLES is not None:
        return _TABLES
    with _LOCK:
        if path is None and _TABLES is not None:
            return _TABLES
        with np.load(asset_path(ASSET) if path is None else path) as z:
            tables = {name: z[name] for name in z.files}
        for n in ORDERS:
            start = np.zeros(tables[f"width{n}"].size + 1, np.int64)
            np.cumsum(tables[f"width{n}"], out=start[1:])
            tables[f"start{n}"] = start
            tables[f"next{n}"] = tables[f"cand{n}"][start[:-1]]
        for a in tables.values():
            a.setflags(write=False)
        if path is None:
            _TABLES = tables
        return tables


@dataclass(frozen=True, eq=False)
class Candidates:
    """The learned draft's top guesses for the next token after one context.

    Attributes
    ----------
    tokens : numpy.ndarray of int64, shape (m,)
        At most ``w`` continuations, most likely first (empty when no suffix of the context is
        known).
    probs : numpy.ndarray of float64, shape (m,)
        The draft's probability q of each, normalised over *all* the continuations the table
        keeps for the context (up to :data:`WIDTH`), so they sum to at most 1 when ``m < WIDTH``.
    order : int
        Tokens of context the guess is based on (3, 2 or 1; 0 when none is known).
    kept_mass : float
        Share of the context's training count that the kept continuations cover (the rest,
        ``1 - kept_mass``, is the mass q drops; see :meth:`NgramDraft.candidates`).
    confident : bool
        Whether the top guess clears the draft's ``min_share`` (exactly when :meth:`propose`
        would propose it).
    """

    tokens: np.ndarray
    probs: np.ndarray
    order: int
    kept_mass: float
    confident: bool

    def __len__(self) -> int:
        return int(self.tokens.size)


NONE = Candidates(np.zeros(0, np.int64), np.zeros(0), 0, 0.0, False)


def count_probs(counts: np.ndarray, temperature: float) -> np.ndarray:
    """A draft's q over continuations seen ``counts`` times (most frequent first): the counts raised
    to ``1 / temperature`` and normalised; temperature 0 puts all the mass on the first."""
    if temperature == 0.0:
        probs = np.zeros(counts.size)
        probs[0] = 1.0
        return probs
    logw = np.log(counts) / temperature
    probs = np.exp(logw - logw.max())
    return probs / probs.sum()


def over_vocab(c: Candidates, vocab: int) -> np.ndarray:
    """``c``'s probabilities over the whole vocabulary (float64, ``(vocab,)``; zero elsewhere)."""
    q = np.zeros(int(vocab))
    q[c.tokens] = c.probs
    return q


@dataclass(frozen=True)
class NgramDraft:
    """Propose the continuation the training text most often had after the last 1-3 tokens.

    Parameters
    ----------
    min_share : float
        Stop proposing when the best continuation had less than this share of its context's
        count, in [0, 1]. 0 always proposes ``k`` tokens where any context is known.

    Examples
    --------
    >>> d = NgramDraft().begin(None)                              # doctest: +SKIP
    >>> d.propose(tokenizer.encode("for i in range("), 2).tokens  # doctest: +SKIP
    >>> NgramDraft().candidates(tokenizer.encode("import "), 3).tokens  # doctest: +SKIP
    """

    min_share: float = 0.5
    name: str = "ngram"
    needs_features = False

    def __post_init__(self):
        if not (isinstance(self.min_share, (int, float)) and 0.0 <= self.min_share <= 1.0):
            raise ValueError(f"min_share must be in [0, 1]; got {self.min_share!r}")

    capture = ()

    def begin(self, model) -> "_NgramRun":
        return _NgramRun(load_tables(), self.min_share)

    def candidates(self, context, w: int = WIDTH, *, temperature: float = 1.0) -> Candidates:
        """The draft's ``w`` most likely next tokens after ``context``, with their probabilities.

        The guess comes from the longest suffix of ``context`` (3, 2, then 1 tokens) that the
        table knows, as for :meth:`propose`; the probabilities are that context's training counts
        ``c`` raised to ``1 / temperature`` and normalised over the continuations the table keeps
        (its :data:`WIDTH` most frequent). The mass this drops:

        * the continuations beyond the kept ones (``1 - kept_mass`` of the context's count; over
          the shipped table, weighted by count, 8% for 3-token contexts, 18% for 2-token and 43%
          for 1-token ones, whose followers are many);
        * everything shorter contexts know (no back-off mixing) and every token never seen after
          the context (no smoothing): q is zero outside the kept continuations.

        Parameters
        ----------
        context : sequence of int
            Token ids; only the last three are read.
        w : int
            Most candidates to return, in [1, WIDTH].
        temperature : float
            In [0, 10]: 1 gives the training frequencies, lower sharpens, 0 puts all the mass on
            the most frequent continuation.

        Returns
        -------
        Candidates
        """
        return self.begin(None).candidates(context, w, temperature=temperature)

    def distribution(self, context, vocab: int, *, temperature: float = 1.0) -> np.ndarray:
        """The draft's q over the whole vocabulary (float64, ``(vocab,)``; all zero if unknown)."""
        return self.begin(None).distribution(context, vocab, temperature=temperature)


class _NgramRun:
    def __init__(self, tables: dict, min_share: float) -> None:
        self.t = tables
        self.vocab = int(tables["vocab"][0])
        self.min_share = int(np.ceil(min_share * 255))

    def _find(self, ctx: np.ndarray) -> tuple[int, int]:
        """(order, row) of the longest known suffix of ``ctx``, or (0, -1)."""
        t = self.t
        for n in ORDERS:
            if ctx.size < n:
                continue
            keys = t[f"keys{n}"]
            key = _key(ctx[ctx.size - n:], self.vocab)
            i = int(np.searchsorted(keys, key))
            if i < keys.size and keys[i] == key:
                return n, i
        return 0, -1

    def next_token(self, ctx: np.ndarray) -> int:
        """The most frequent next token after the longest known suffix of ``ctx``, or -1."""
        n, i = self._find(ctx)
        if n == 0 or self.t[f"share{n}"][i] < self.min_share:
            return -1
        return int(self.t[f"next{n}"][i])

    def candidates(self, context, w: int = WIDTH, *, temperature: float = 1.0) -> Candidates:
        """See :meth:`NgramDraft.candidates`."""
        w = _v.integer("w", w, 1, WIDTH)
        temperature = _v.real("temperature", temperature, 0.0, TEMPERATURE_MAX)
        ctx = np.asarray(context, dtype=np.int64).reshape(-1)[-ORDERS[0]:]
        n, i = self._find(ctx)
        if n == 0:
            return NONE
        t = self.t
        lo, hi = int(t[f"start{n}"][i]), int(t[f"start{n}"][i + 1])
        counts = t[f"count{n}"][lo:hi].astype(np.float64)
        probs = count_probs(counts, temperature)
        kept = counts.sum()
        return Candidates(
            tokens=t[f"cand{n}"][lo:min(hi, lo + w)].astype(np.int64), probs=probs[:w], order=n,
            kept_mass=float(kept / (kept + float(t[f"rest{n}"][i]))),
            confident=bool(t[f"share{n}"][i] >= self.min_share))

    def distribution(self, context, vocab: int, *, temperature: float = 1.0) -> np.ndarray:
        """See :meth:`NgramDraft.distribution`."""
        return over_vocab(self.candidates(context, WIDTH, temperature=temperature), vocab)

    def propose(self, context, k: int, *, temperature: float = 0.0, top_p: float = 1.0, rng=None):
        from .drafts import Proposal

        ctx = list(np.asarray(context, dtype=np.int64)[-3:])
        out = []
        for _ in range(k):
            tok = self.next_token(np.array(ctx[-3:], np.int64))
            if tok < 0:
                break
            out.append(tok)
            ctx.append(tok)
        return Proposal(np.array(out, np.int64))
