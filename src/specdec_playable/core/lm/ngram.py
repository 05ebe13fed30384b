"""The learned draft: a token n-gram model over SmolLM2's own tokenizer, trained offline.

``scripts/train_learned_draft.py`` counts, in Python standard-library source (PSF licence), which
token most often follows each context of 1, 2 and 3 tokens, and keeps contexts seen often enough.
The table ships as ``assets/lm/ngram_draft.npz`` (provenance in ``assets/PROVENANCE.md`` and
``assets/lm/ngram_draft.json``). Proposing is a few binary searches per token: the draft costs
almost nothing next to a target pass, but it knows only what code usually looks like, nothing of
the conversation.

The longest known context wins (3, then 2, then 1 tokens). The draft stops proposing when the
winning continuation's share of that context's count falls below ``min_share``: on this CPU every
extra verified position costs real time, so an unsure guess is worth less than no guess.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np

from ..assets import asset_path

ASSET = "lm/ngram_draft.npz"
ORDERS = (3, 2, 1)

_LOCK = threading.Lock()
_TABLES: dict | None = None


def _key(ctx: np.ndarray, vocab: int) -> int:
    key = 0
    for t in ctx:
        key = key * vocab + int(t)
    return key


def load_tables(path=None) -> dict:
    """The shipped table (loaded once per process, arrays read-only)."""
    global _TABLES
    if path is None and _TABLES is not None:
        return _TABLES
    with _LOCK:
        if path is None and _TABLES is not None:
            return _TABLES
        with np.load(asset_path(ASSET) if path is None else path) as z:
            tables = {name: z[name] for name in z.files}
        for a in tables.values():
            a.setflags(write=False)
        if path is None:
            _TABLES = tables
        return tables


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
    """

    min_share: float = 0.5
    name: str = "learned"

    def __post_init__(self):
        if not (isinstance(self.min_share, (int, float)) and 0.0 <= self.min_share <= 1.0):
            raise ValueError(f"min_share must be in [0, 1]; got {self.min_share!r}")

    capture = ()

    def begin(self, model) -> "_NgramRun":
        return _NgramRun(load_tables(), self.min_share)

    def teacher_forced(self, model, tokens, start: int, stop: int, pass_, temperature: float):
        """One-hot q on the proposed first token at each position (a zero row: no proposal)."""
        run = self.begin(model)
        ids = np.asarray(tokens, dtype=np.int64)
        q = np.zeros((stop - start, model.config.vocab_size), np.float32)
        for i in range(start, stop):
            tok = run.next_token(ids[max(0, i - 2):i + 1])
            if tok >= 0:
                q[i - start, tok] = 1.0
        return q


class _NgramRun:
    def __init__(self, tables: dict, min_share: float) -> None:
        self.t = tables
        self.vocab = int(tables["vocab"][0])
        self.min_share = int(np.ceil(min_share * 255))

    def next_token(self, ctx: np.ndarray) -> int:
        """The most frequent next token after the longest known suffix of ``ctx``, or -1."""
        t = self.t
        for n in ORDERS:
            if ctx.size < n:
                continue
            keys = t[f"keys{n}"]
            key = _key(ctx[ctx.size - n:], self.vocab)
            i = int(np.searchsorted(keys, key))
            if i < keys.size and keys[i] == key:
                if t[f"share{n}"][i] < self.min_share:
                    return -1
                return int(t[f"next{n}"][i])
        return -1

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
