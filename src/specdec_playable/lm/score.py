"""Teacher-forced scoring of a whole text: the target's p_big and a draft's p_draft at every position.

Position ``i`` predicts token ``i + 1`` from tokens ``0 .. i``. The text goes through the model in
chunks (one pass per chunk, appending to one cache), so a long text needs only one chunk's
``(chunk, vocab)`` distributions in memory at a time.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from . import sampling
from .decode import captures
from .drafts import EarlyExit, GivesDistribution, Observes, exit_logits
from .head import DraftHead, head_logits, teacher_forced
from .ngram import NgramDraft

CHUNK = 128
TOKENS_MAX = 8000


@dataclass(frozen=True, eq=False)
class TextScores:
    """Per-position scores of a text under the target (and a draft).

    Attributes
    ----------
    tokens : numpy.ndarray of int64, shape (n,)
    logprob : numpy.ndarray, shape (n - 1,)
        The target's natural-log probability of each next token (temperature 1).
    target_top : numpy.ndarray of int64, shape (n - 1,)
        The target's greedy choice at each position.
    draft_top : numpy.ndarray of int64, shape (n - 1,)
        The draft's most likely token (-1 where it proposes nothing; all -1 without a draft).
    alpha : numpy.ndarray, shape (n - 1,)
        ``sum(min(p, q))`` at each position: the probability that speculative sampling at the
        scoring temperature accepts the draft's token there (0 where it proposes nothing; NaN
        without a draft).

    Examples
    --------
    >>> m = get_model()                                               # doctest: +SKIP
    >>> s = score_text(m, m.tokenizer.encode("def add(a, b):\\n    return a + b\\n"))  # doctest: +SKIP
    >>> s.perplexity < 30                                             # doctest: +SKIP
    True
    """

    tokens: np.ndarray
    logprob: np.ndarray
    target_top: np.ndarray
    draft_top: np.ndarray
    alpha: np.ndarray

    @property
    def perplexity(self) -> float:
        return float(np.exp(-self.logprob.mean()))


def _check_tokens(model, tokens) -> np.ndarray:
    ids = model.tokenizer.as_array(tokens)
    if not 2 <= ids.size <= TOKENS_MAX:
        raise ValueError(f"a scored text must have 2 to {TOKENS_MAX} tokens; got {ids.size}")
    return ids


def _check_temperature(temperature) -> float:
    t = float(temperature)
    if not 0 < t <= sampling.TEMPERATURE_MAX:
        raise ValueError(f"temperature must be in (0, {sampling.TEMPERATURE_MAX:g}]; got {temperature!r}")
    return t


def _passes(model, ids: np.ndarray, draft, chunk: int):
    """One target pass per chunk of positions, appending to one cache: (start, stop, Pass, features).

    ``features`` is what the draft reads of the target at positions ``0 .. stop - 1``
    (``draft.features`` of each pass) when it reads them (``draft.needs_features``), else None.
    """
    chunk = int(chunk)
    if not 1 <= chunk <= 1024:
        raise ValueError(f"chunk must be in [1, 1024]; got {chunk}")
    n = ids.size - 1  # positions that predict a next token
    cache = model.new_cache(capacity=ids.size)
    capture = () if draft is None else tuple(draft.capture)
    keep = draft is not None and bool(draft.needs_features)
    seen = []
    for start in range(0, n, chunk):
        stop = min(start + chunk, n)
        fw = model.forward(ids[start:stop], cache, logits="all", capture=capture)
        if keep:
            seen.append(draft.features(fw))
        yield start, stop, fw, (np.concatenate(seen) if keep else None)


@functools.singledispatch
def draft_distributions(draft, model, tokens, start: int, stop: int, *, pass_,
                        temperature: float, features=None) -> np.ndarray:
    """The draft's p_draft rows (float32, ``(stop - start, vocab)``) at positions ``start .. stop``
    of ``tokens``, teacher-forced; ``pass_`` is the target's pass over them (with the residual
    streams the draft's ``capture`` asked for); ``features``, for a draft that reads them, the
    target's final-normed hidden states of positions ``0 .. stop - 1``.

    Any :class:`.drafts.Draft`: one-hot on its first proposed token (a zero row: no proposal).
    """
    proposer = draft.begin(model)
    ids = np.asarray(tokens, dtype=np.int64)
    out = np.zeros((stop - start, model.config.vocab_size), np.float32)
    for i in range(start, stop):
        prop = proposer.propose(ids[:i + 1], 1)
        if len(prop):
            out[i - start, prop.tokens[0]] = 1.0
    return out


@draft_distributions.register
def _ngram(draft: NgramDraft, model, tokens, start: int, stop: int, *, pass_,
           temperature: float, features=None) -> np.ndarray:
    run = draft.begin(model)
    ids = np.asarray(tokens, dtype=np.int64)
    out = np.zeros((stop - start, model.config.vocab_size), np.float32)
    for i in range(start, stop):
        tok = run.next_token(ids[max(0, i - 2):i + 1])
        if tok >= 0:
            out[i - start, tok] = 1.0
    return out


@draft_distributions.register
def _early_exit(draft: EarlyExit, model, tokens, start: int, stop: int, *, pass_,
                temperature: float, features=None) -> np.ndarray:
    return sampling.probabilities(exit_logits(model, pass_.captured[draft.m]), temperature)


@draft_distributions.register
def _head(draft: DraftHead, model, tokens, start: int, stop: int, *, pass_,
          temperature: float, features=None) -> np.ndarray:
    """The head's q at each position from the target's real features before it (position 0, which
    has none, gets a zero row: no proposal)."""
    w = draft.weights()
    pred = teacher_forced(model, w, tokens, features, start, stop)
    q = sampling.probabilities(head_logits(model, w, pred), temperature)
    q[:max(0, 1 - start)] = 0.0
    return q


@dataclass(frozen=True)
class WholeDistribution:
    """A draft scored by its whole next-token distribution (``draft.distribution``) rather than a
    one-hot on its top guess: sum(min(p_big, p_draft)) then counts every token it would sample,
    as speculative sampling does."""

    draft: object
    capture = ()
    needs_features = False

    @property
    def name(self) -> str:
        return self.draft.name


@draft_distributions.register
def _whole(draft: WholeDistribution, model, tokens, start: int, stop: int, *, pass_,
           temperature: float, features=None) -> np.ndarray:
    ids = np.asarray(tokens, dtype=np.int64)
    vocab = model.config.vocab_size
    out = np.zeros((stop - start, vocab), np.float32)
    for i in range(start, stop):
        out[i - start] = draft.draft.distribution(ids[max(0, i - 2):i + 1], vocab,
                                                  temperature=temperature)
    return out


def whole_distribution(draft):
    """The draft as the scorer reads it: by its whole distribution where it has one."""
    return WholeDistribution(draft) if isinstance(draft, GivesDistribution) else draft


def iter_distributions(model, tokens, *, draft=None, temperature: float = 1.0,
                       chunk: int = CHUNK) -> Iterator[tuple[int, np.ndarray, np.ndarray | None]]:
    """Yield ``(start, p_big, p_draft)`` per chunk: positions ``start ..`` as float32 rows.

    ``p_draft`` rows are the draft's distributions (:func:`draft_distributions`; all zero where it
    proposes nothing); ``p_draft`` is None without a draft.
    """
    ids = _check_tokens(model, tokens)
    temperature = _check_temperature(temperature)
    for start, stop, fw, feats in _passes(model, ids, draft, chunk):
        p_big = sampling.probabilities(fw.logits, temperature).astype(np.float32)
        p_draft = None
        if draft is not None:
            p_draft = draft_distributions(draft, model, ids, start, stop, pass_=fw,
                                          temperature=temperature, features=feats).astype(np.float32)
        yield start, p_big, p_draft


def score_text(model, tokens, *, draft=None, temperature: float = 1.0,
               chunk: int = CHUNK) -> TextScores:
    """Score every position of a text under the target and, optionally, a draft.

    Parameters
    ----------
    model : Model
    tokens : sequence of int
        2 to 8,000 token ids.
    draft : PromptLookup, EarlyExit or NgramDraft, optional
    temperature : float
        Temperature of p and q for ``alpha`` (``logprob`` is always at temperature 1).
    chunk : int
        Positions per pass, in [1, 1024] (memory holds ``chunk x vocab`` floats per distribution).

    Returns
    -------
    TextScores
    """
    ids = _check_tokens(model, tokens)
    temperature = _check_temperature(temperature)
    n = ids.size - 1
    logprob = np.empty(n)
    target_top = np.empty(n, np.int64)
    draft_top = np.full(n, -1, np.int64)
    alpha = np.full(n, np.nan)
    for start, stop, fw, feats in _passes(model, ids, draft, chunk):
        rows = np.arange(stop - start)
        z = fw.logits.astype(np.float64)
        z -= z.max(axis=1, keepdims=True)
        logz = np.log(np.exp(z).sum(axis=1))
        logprob[start:stop] = z[rows, ids[start + 1:stop + 1]] - logz
        target_top[start:stop] = fw.logits.argmax(axis=1)
        if draft is not None:
            p_big = sampling.probabilities(fw.logits, temperature)
            p_draft = draft_distributions(draft, model, ids, start, stop, pass_=fw,
                                          temperature=temperature, features=feats)
            has = p_draft.sum(axis=1) > 0
            alpha[start:stop] = np.minimum(p_big, p_draft).sum(axis=1)
            draft_top[start:stop] = np.where(has, p_draft.argmax(axis=1), -1)
    return TextScores(tokens=ids, logprob=logprob, target_top=target_top, draft_top=draft_top,
                      alpha=alpha)


def accepted_along(model, tokens, draft, k: int, *, every: int = 1) -> np.ndarray:
    """Greedy rounds along a text: drafts kept by a round that starts at each position.

    At position ``t`` (every ``every``-th, from 0) the draft proposes up to ``k`` tokens after
    ``tokens[:t + 1]`` and one target pass over ``[tokens[t], *drafts]`` judges them, exactly as a
    speculative round with that context would: the count kept is the longest prefix equal to the
    target's greedy tokens. The mean plus one is the draft's tokens per pass (tau) on this text.
    A draft whose proposer reads them (:class:`.drafts.Observes`) is given the target's features
    of every position fed.

    Returns
    -------
    numpy.ndarray of int64, one count in ``[0, k]`` per round
    """
    ids = _check_tokens(model, tokens)
    every = int(every)
    if not 1 <= every <= ids.size:
        raise ValueError(f"every must be in [1, {ids.size}]; got {every}")
    cache = model.new_cache(capacity=ids.size + k + 2)
    proposer = draft.begin(model)
    observer = proposer if isinstance(proposer, Observes) else None
    capture = captures(observer)
    observe = observer.observe if observer is not None else (lambda hidden, captured=None: None)
    out = []
    for t in range(0, ids.size - 1, every):
        if t > cache.length:
            observe(*model.forward(ids[cache.length:t], cache, logits="none", capture=capture).features())
        drafts = [int(x) for x in proposer.propose(ids[:t + 1], k).tokens[:k]]
        fw = model.forward([int(ids[t]), *drafts], cache, logits="all", capture=capture)
        best = fw.logits.argmax(axis=1)
        a = 0
        while a < len(drafts) and drafts[a] == int(best[a]):
            a += 1
        observe(*fw.features(slice(0, 1)))
        cache.rollback(t + 1)
        out.append(a)
    return np.array(out, np.int64)
