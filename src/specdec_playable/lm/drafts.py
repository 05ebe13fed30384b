"""Drafts: cheap guessers that propose up to ``k`` next tokens for the target model to check.

:class:`Draft` says what a draft is: a small immutable object whose ``begin(model)`` returns a
per-run :class:`Proposer` (its state, such as an early exit's own cache, lives there);
``proposer.propose(context, k, ...)`` returns a :class:`Proposal`. A proposal may be shorter than
``k`` (even empty) when the draft has nothing to offer. Deterministic drafts return
``p_draft=None``: for speculative sampling that is a one-hot p_draft on each proposed token.
Scoring a text teacher-forced is not a draft's job: see :func:`.score.draft_distributions`.

* :class:`PromptLookup` copies what followed the latest earlier occurrence of the text's last few
  tokens (vLLM's ``ngram`` proposer; Hugging Face's ``prompt_lookup_num_tokens``). Costs ~nothing.
* :class:`EarlyExit` runs only the first ``m`` blocks of the target, then its final norm and head:
  no training, and a poor guesser (the honest bad draft).
* :class:`NgramDraft` (in :mod:`.ngram`) is a token n-gram table trained offline on stdlib text.
* :class:`DraftHead` (in :mod:`.head`) is a small trained head that reads the target's features.

The drafts a page, the CLI or a benchmark offers are in :mod:`.registry`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from . import sampling


@dataclass(frozen=True, eq=False)
class Proposal:
    """Tokens a draft proposes, in order.

    Attributes
    ----------
    tokens : numpy.ndarray of int64, shape (d,), d <= k
    p_draft : numpy.ndarray of float64, shape (d, vocab), or None
        The draft's distribution at each proposed position (None: one-hot on ``tokens``).
    stamps : numpy.ndarray of float, shape (d,), or None
        ``time.perf_counter()`` when each token was ready (None: all at once, at the end).
    """

    tokens: np.ndarray
    p_draft: np.ndarray | None = None
    stamps: np.ndarray | None = None

    def __len__(self) -> int:
        return int(self.tokens.size)

    def first(self, n: int) -> "Proposal":
        """The first ``n`` proposed tokens (itself when it has no more)."""
        if len(self) <= n:
            return self
        return Proposal(self.tokens[:n], None if self.p_draft is None else self.p_draft[:n],
                        None if self.stamps is None else self.stamps[:n])


EMPTY = Proposal(np.zeros(0, np.int64))


@runtime_checkable
class Proposer(Protocol):
    """A draft's state during one run."""

    def propose(self, context, k: int, *, temperature: float = 0.0, top_p: float = 1.0,
                rng=None) -> Proposal:
        """Up to ``k`` tokens to follow ``context`` (prompt and output ids so far)."""
        ...


@runtime_checkable
class Observes(Protocol):
    """A proposer that reads the target's hidden states (the draft head).

    ``capture`` (a tuple of block counts) names the blocks after which the decoder's target passes
    must also keep the residual stream for it (``Model.forward(capture=...)``); empty for most.
    """

    capture: tuple

    def observe(self, hidden, captured=None) -> None:
        """The target's final-normed hidden states of the next context positions: the prompt's (its
        prefill), then those each verify pass kept, in order; ``captured`` maps each block count of
        :attr:`capture` to its residual stream at the same positions."""
        ...


@runtime_checkable
class DraftsTrees(Protocol):
    """A proposer that drafts a whole token tree itself (the draft head)."""

    def draft_tree(self, context, width: int, depth: int, shape: str = "spine"):
        """A :class:`.tree.DraftTree` of guesses after ``context``."""
        ...


@runtime_checkable
class GivesCandidates(Protocol):
    """A proposer whose top-``w`` next tokens build a tree level by level (the n-gram table)."""

    def candidates(self, context, w: int):
        """Its ``w`` likeliest next tokens after ``context`` (a :class:`.ngram.Candidates`)."""
        ...


@runtime_checkable
class GivesDistribution(Protocol):
    """A draft with a whole next-token distribution to score by (the n-gram table)."""

    def distribution(self, context, vocab: int, *, temperature: float = 1.0):
        """Its probabilities over ``vocab`` tokens after ``context``."""
        ...


@runtime_checkable
class Draft(Protocol):
    """What a draft is.

    Attributes
    ----------
    name : str
        Its name in results (the key of its :class:`.registry.DraftSpec`).
    capture : tuple of int
        Block counts after which a teacher-forced target pass must keep the residual stream for
        this draft (:func:`.score.draft_distributions`); empty for most drafts.
    needs_features : bool
        Whether teacher-forced scoring must hand it the target's features (the draft head); such
        a draft has ``features(pass_)``, what it reads of a target pass.

    What a draft's proposer can do beyond :class:`Proposer` is said by the protocols it meets:
    :class:`Observes`, :class:`DraftsTrees`, :class:`GivesCandidates`; the decoders ask with
    ``isinstance``.
    """

    name: str
    capture: tuple
    needs_features: bool

    def begin(self, model) -> Proposer:
        """A fresh proposer for one run of ``model``."""
        ...


@dataclass(frozen=True)
class PromptLookup:
    """Propose the tokens that followed the latest earlier match of the text's last n tokens.

    The longest n in ``[n_min, n_max]`` with a match wins; among its matches the most recent one.

    Parameters
    ----------
    n_min, n_max : int
        Shortest and longest n-gram to look up (1 <= n_min <= n_max <= 8).

    Examples
    --------
    >>> p = PromptLookup().begin(None)
    >>> p.propose(np.array([5, 6, 7, 9, 5, 6]), 2).tokens
    array([7, 9])
    """

    n_min: int = 1
    n_max: int = 3
    name: str = "lookup"
    needs_features = False

    def __post_init__(self):
        if not (isinstance(self.n_min, int) and isinstance(self.n_max, int)
                and 1 <= self.n_min <= self.n_max <= 8):
            raise ValueError(f"need integers 1 <= n_min <= n_max <= 8; got {self.n_min}, {self.n_max}")

    def begin(self, model) -> "PromptLookup":
        return self  # stateless: every proposal reads only the context

    def propose(self, context, k: int, *, temperature: float = 0.0, top_p: float = 1.0,
                rng=None) -> Proposal:
        ctx = np.asarray(context, dtype=np.int64)
        size = ctx.size
        for n in range(min(self.n_max, size - 1), self.n_min - 1, -1):
            pattern = ctx[size - n:]
            # Windows starting at i = 0 .. size-n-1 (each has at least one token after it).
            win = np.lib.stride_tricks.sliding_window_view(ctx[:size - 1], n)
            hits = np.flatnonzero((win == pattern).all(axis=1))
            if hits.size:
                start = int(hits[-1]) + n
                return Proposal(ctx[start:start + k].copy())
        return EMPTY

    capture = ()


@dataclass(frozen=True)
class EarlyExit:
    """The target's first ``m`` blocks, then its final norm and head: an untrained draft.

    Its cost per token is about ``m / 30`` of a decode step plus the whole head (49,152 x 576), so it
    is never cheap, and without training its guesses are poor.

    Parameters
    ----------
    m : int
        Blocks to run, in [1, 29].
    """

    m: int = 6
    name: str = "early-exit"
    needs_features = False

    def __post_init__(self):
        if not (isinstance(self.m, int) and 1 <= self.m <= 29):
            raise ValueError(f"m must be an integer in [1, 29]; got {self.m!r}")

    def begin(self, model) -> "_EarlyExitRun":
        return _EarlyExitRun(model, self.m)

    @property
    def capture(self) -> tuple[int, ...]:
        """A teacher-forced target pass keeps the residual stream after block m for this draft."""
        return (self.m,)


def exit_logits(model, residual: np.ndarray) -> np.ndarray:
    """Logits of the final norm and tied head applied to a residual stream taken early."""
    from .model import rms_norm

    return model.head(rms_norm(residual, model.config.eps) * model.weights.final_norm)


class _EarlyExitRun:
    """One run's early-exit state: its own m-layer cache and the tokens fed into it."""

    def __init__(self, model, m: int) -> None:
        self.model = model
        self.m = m
        self.cache = model.new_cache(n_layers=m)
        self.fed: list[int] = []

    def _sync(self, ctx: np.ndarray) -> np.ndarray:
        """Bring the cache to the context; return the logits after its last token."""
        fed = self.fed
        common = 0
        limit = min(len(fed), ctx.size - 1)  # always feed at least the last token
        while common < limit and fed[common] == ctx[common]:
            common += 1
        self.cache.rollback(common)
        del fed[common:]
        new = ctx[common:]
        out = self.model.forward(new, self.cache, logits="last", n_layers=self.m)
        fed.extend(int(t) for t in new)
        return out.logits[-1]

    def propose(self, context, k: int, *, temperature: float = 0.0, top_p: float = 1.0,
                rng=None) -> Proposal:
        ctx = np.asarray(context, dtype=np.int64)
        logits = self._sync(ctx)
        tokens, dists, stamps = [], [], []
        for i in range(k):
            if temperature > 0:
                p_draft = sampling.probabilities(logits, temperature, top_p)
                tok = int(sampling.draw(p_draft, rng))
                dists.append(p_draft)
            else:
                tok = int(np.argmax(logits))
            tokens.append(tok)
            stamps.append(time.perf_counter())
            if i + 1 < k:
                logits = self.model.forward([tok], self.cache, logits="last", n_layers=self.m).logits[-1]
                self.fed.append(tok)
        return Proposal(np.array(tokens, np.int64), np.array(dists) if dists else None,
                        np.array(stamps))
