"""Teacher-forced scoring of a whole text: the target's p and a draft's q at every position.

Position ``i`` predicts token ``i + 1`` from tokens ``0 .. i``. The text goes through the model in
chunks (one pass per chunk, appending to one cache), so a long text needs only one chunk's
``(chunk, vocab)`` distributions in memory at a time.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from . import sampling

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

    @property
    def greedy_match(self) -> float:
        """Share of positions where the target's greedy token is the text's next token."""
        return float((self.target_top == self.tokens[1:]).mean())

    @property
    def draft_match(self) -> float:
        """Share of positions where the draft's top token equals the target's greedy token."""
        return float((self.draft_top == self.target_top).mean())


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
    """One target pass per chunk of positions, appending to one cache: (start, stop, Pass)."""
    chunk = int(chunk)
    if not 1 <= chunk <= 1024:
        raise ValueError(f"chunk must be in [1, 1024]; got {chunk}")
    n = ids.size - 1  # positions that predict a next token
    cache = model.new_cache(capacity=ids.size)
    capture = tuple(getattr(draft, "capture", ()))
    for start in range(0, n, chunk):
        stop = min(start + chunk, n)
        yield start, stop, model.forward(ids[start:stop], cache, logits="all", capture=capture)


def iter_distributions(model, tokens, *, draft=None, temperature: float = 1.0,
                       chunk: int = CHUNK) -> Iterator[tuple[int, np.ndarray, np.ndarray | None]]:
    """Yield ``(start, p, q)`` per chunk: positions ``start ..`` with p and q as float32 rows.

    ``q`` rows are the draft's distributions (all zero where it proposes nothing); ``q`` is None
    without a draft. Drafts supply them with ``teacher_forced(model, tokens, start, stop, pass_,
    temperature)``.
    """
    ids = _check_tokens(model, tokens)
    temperature = _check_temperature(temperature)
    for start, stop, fw in _passes(model, ids, draft, chunk):
        p = sampling.probabilities(fw.logits, temperature).astype(np.float32)
        q = None
        if draft is not None:
            q = draft.teacher_forced(model, ids, start, stop, fw, temperature).astype(np.float32)
        yield start, p, q


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
    for start, stop, fw in _passes(model, ids, draft, chunk):
        rows = np.arange(stop - start)
        z = fw.logits.astype(np.float64)
        z -= z.max(axis=1, keepdims=True)
        logz = np.log(np.exp(z).sum(axis=1))
        logprob[start:stop] = z[rows, ids[start + 1:stop + 1]] - logz
        target_top[start:stop] = fw.logits.argmax(axis=1)
        if draft is not None:
            p = sampling.probabilities(fw.logits, temperature)
            q = draft.teacher_forced(model, ids, start, stop, fw, temperature)
            has = q.sum(axis=1) > 0
            alpha[start:stop] = np.minimum(p, q).sum(axis=1)
            draft_top[start:stop] = np.where(has, q.argmax(axis=1), -1)
    return TextScores(tokens=ids, logprob=logprob, target_top=target_top, draft_top=draft_top,
                      alpha=alpha)
