"""Measure how guessable each token of a real text is: the target's p against a draft's q.

For a text, every token is scored teacher-forced (the real text before it is the context; the
first token's context is the model's beginning-of-text token). At each token the target gives p,
the draft gives q, and the token's *acceptance probability* is ``sum(min(p, q))``: the
probability that speculative sampling keeps the draft's proposal there (Leviathan et al. 2023,
Theorem 3.5). Also recorded: whether greedy drafting would be kept (the draft's top token is the
target's top token), the target's probability of the text's own token, and the draft's top guess.

For a context (Episode 6), the target's and the draft's most likely next tokens with their
probabilities, the mass of everything else, and ``sum(min(p, q))`` over the whole vocabulary.

``scripts/score_texts.py`` runs this once for the bundled texts and writes the page's asset; a
visitor's pasted text runs it live on a worker (it checks ``stopped`` between passes).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from .score import iter_distributions, whole_distribution

#: Positions scored per target pass when measuring a text (progress is reported per pass).
CHUNK = 32
#: Characters of text measured at most (a pasted text is at most 2,000).
CHARS_MAX = 20_000


def default_draft():
    """The draft the page measures with: the trained draft head (:mod:`.head`)."""
    from .head import DraftHead

    return DraftHead()


def token_pieces(tokenizer, ids) -> tuple[str, ...]:
    """The text of each token such that the pieces join back to the text exactly.

    A character whose UTF-8 bytes span several tokens belongs to the token holding its last byte
    (the earlier tokens get an empty piece).

    Examples
    --------
    >>> tok = get_model().tokenizer                                # doctest: +SKIP
    >>> "".join(token_pieces(tok, tok.encode("déjà vu"))) == "déjà vu"  # doctest: +SKIP
    True
    """
    pieces = []
    pending = b""
    for i in ids:
        pending += tokenizer.token_bytes(int(i))
        cut = _complete_prefix(pending)
        pieces.append(pending[:cut].decode("utf-8", errors="replace"))
        pending = pending[cut:]
    if pending and pieces:
        pieces[-1] += pending.decode("utf-8", errors="replace")
    return tuple(pieces)


def _complete_prefix(b: bytes) -> int:
    """Length of the longest prefix of ``b`` that ends on a UTF-8 character boundary."""
    n = len(b)
    i = n - 1
    while i >= 0 and n - i <= 4 and 0x80 <= b[i] < 0xC0:  # continuation bytes
        i -= 1
    if i < 0 or n - i > 4:
        return n  # not UTF-8: emit it (decoded as replacement characters)
    lead = b[i]
    need = 1 if lead < 0x80 else 2 if lead < 0xE0 else 3 if lead < 0xF0 else 4
    return n if n - i >= need else i


@dataclass(frozen=True, eq=False)
class TextMeasurement:
    """Per-token measurements of one text (arrays read-only, one entry per token).

    Attributes
    ----------
    ids : numpy.ndarray of int64
        The text's token ids.
    pieces : tuple of str
        Each token's text; ``"".join(pieces)`` is the text.
    alpha : numpy.ndarray
        ``sum(min(p, q))`` at each token: speculative sampling's acceptance probability.
    greedy : numpy.ndarray of bool
        Whether greedy drafting is kept there (the draft's top token is the target's top token).
    p_token : numpy.ndarray
        The target's probability of the text's own token (temperature 1).
    guess : tuple of str
        The draft's most likely token there, as text ("" where it proposes nothing).
    complete : bool
        False when measuring stopped early (then the arrays cover the first tokens only).
    beside : tuple of (str, numpy.ndarray)
        Per draft measured beside the main one (``measure_text``'s ``beside``), its name and
        whether its first greedy guess is the target's top token at each token (bool,
        read-only); :meth:`kept_beside` reads one.
    """

    ids: np.ndarray
    pieces: tuple[str, ...]
    alpha: np.ndarray
    greedy: np.ndarray
    p_token: np.ndarray
    guess: tuple[str, ...]
    complete: bool = True
    beside: tuple = ()

    def __post_init__(self):
        for name in ("ids", "alpha", "greedy", "p_token"):
            a = np.array(getattr(self, name))
            a.setflags(write=False)
            object.__setattr__(self, name, a)
        kept = []
        for name, col in self.beside:
            a = np.array(col, dtype=bool)
            a.setflags(write=False)
            kept.append((str(name), a))
        object.__setattr__(self, "beside", tuple(kept))

    def kept_beside(self, name: str) -> np.ndarray | None:
        """The ``beside`` draft ``name``'s greedy kept per token, or None if it was not measured."""
        return next((col for n, col in self.beside if n == name), None)

    def __len__(self) -> int:
        return int(self.alpha.size)

    @property
    def mean_alpha(self) -> float:
        return float(self.alpha.mean()) if len(self) else float("nan")


def _check_text(text) -> str:
    if not isinstance(text, str) or not text:
        raise ValueError("text must be a non-empty string")
    if len(text) > CHARS_MAX:
        raise ValueError(f"text must have at most {CHARS_MAX:,} characters; got {len(text):,}")
    return text


def measure_text(model, text: str, *, draft=None, chunk: int = CHUNK,
                 stopped: Callable[[], bool] | None = None,
                 report: Callable[[int, int], None] | None = None,
                 beside: Mapping[str, object] | None = None) -> TextMeasurement:
    """Measure every token of ``text`` (see the module docstring).

    Parameters
    ----------
    model : Model
    text : str
        1 to 20,000 characters.
    draft : optional
        Any :class:`.drafts.Draft` (default :func:`default_draft`).
    chunk : int
        Positions per target pass.
    stopped : callable, optional
        Checked before each pass; when it returns True the result so far is returned with
        ``complete=False``.
    report : callable, optional
        Called as ``report(done, total)`` tokens after each pass.
    beside : mapping, optional
        Name -> another draft whose first greedy guess is checked at every token against the
        same target passes (:attr:`TextMeasurement.beside`): a chain draft (its ``propose``),
        cheap beside the passes, such as the memory draft.
    """
    text = _check_text(text)
    draft = default_draft() if draft is None else draft
    tok = model.tokenizer
    ids = np.asarray(tok.encode(text), dtype=np.int64)
    if ids.size == 0:
        raise ValueError("the text has no tokens")
    seq = np.concatenate([[tok.bos_id], ids])  # the first token is predicted from the start token
    n = ids.size
    cols = _Columns(alpha=np.zeros(n), greedy=np.zeros(n, bool), p_token=np.zeros(n),
                    guess_ids=np.full(n, -1, np.int64))
    done = 0
    complete = True
    if report is not None:
        report(0, n)
    others = {name: d.begin(model) for name, d in (beside or {}).items()}
    kept = {name: np.zeros(n, bool) for name in others}
    stream = iter_distributions(model, seq, draft=whole_distribution(draft), chunk=chunk)
    while True:
        if stopped is not None and stopped():
            complete = False
            break
        try:
            start, p_big, p_draft = next(stream)
        except StopIteration:
            break
        done = cols.fill(start, p_big, p_draft, ids)
        top = p_big.argmax(axis=1)
        for name, run in others.items():
            for i in range(start, done):
                guess = run.propose(seq[:i + 1], 1).tokens
                kept[name][i] = len(guess) > 0 and int(guess[0]) == int(top[i - start])
        if report is not None:
            report(done, n)
    alpha = np.clip(cols.alpha[:done], 0.0, 1.0)  # float32 rounding can leave 1 + 1e-7
    guess = tuple("" if g < 0 else "".join(token_pieces(tok, [g])) for g in cols.guess_ids[:done])
    return TextMeasurement(ids=ids[:done], pieces=token_pieces(tok, ids)[:done], alpha=alpha,
                           greedy=cols.greedy[:done], p_token=cols.p_token[:done], guess=guess,
                           complete=complete, beside=tuple((k, v[:done]) for k, v in kept.items()))


@dataclass(frozen=True, eq=False)
class _Columns:
    """Per-token columns of a measurement, filled a chunk at a time."""

    alpha: np.ndarray
    greedy: np.ndarray
    p_token: np.ndarray
    guess_ids: np.ndarray

    def fill(self, start: int, p_big: np.ndarray, p_draft: np.ndarray, ids: np.ndarray) -> int:
        """Score the chunk of positions ``start ..``; return the position after it."""
        stop = start + p_big.shape[0]
        p64, q64 = p_big.astype(np.float64), p_draft.astype(np.float64)
        self.alpha[start:stop] = np.minimum(p64, q64).sum(axis=1)
        has = q64.sum(axis=1) > 0
        top = np.where(has, q64.argmax(axis=1), -1)
        self.greedy[start:stop] = has & (top == p64.argmax(axis=1))
        self.p_token[start:stop] = p64[np.arange(stop - start), ids[start:stop]]
        self.guess_ids[start:stop] = top
        return stop


@dataclass(frozen=True, eq=False)
class NextToken:
    """The target's and the draft's next-token distributions after one context, summarised.

    Attributes
    ----------
    context : str
    target : tuple of (str, float)
        The target's ``top`` most likely tokens and their probabilities, most likely first.
    draft : tuple of (str, float, float)
        The draft's tokens with nonzero probability (at most ``top``), most likely first: each
        with its probability under the draft and under the target.
    target_rest, draft_rest : float
        Probability of every other token (``1 - sum`` of the listed ones).
    alpha : float
        ``sum(min(p, q))`` over the whole vocabulary.
    """

    context: str
    target: tuple[tuple[str, float], ...]
    draft: tuple[tuple[str, float, float], ...]
    target_rest: float
    draft_rest: float
    alpha: float


def _top(tokenizer, dist: np.ndarray, top: int, nonzero: bool) -> tuple[tuple[str, float], ...]:
    order = np.argsort(-dist, kind="stable")[:top]
    if nonzero:
        order = order[dist[order] > 0]
    return tuple(("".join(token_pieces(tokenizer, [int(i)])), float(dist[i])) for i in order)


def top_only(nt: NextToken) -> tuple[tuple[tuple[str, float, float], ...], float]:
    """The draft of ``nt`` kept to its listed tokens: those renormalised (each
    ``(piece, q, p)``) and the acceptance ``sum(min(p, q))`` of that draft, exact over the whole
    vocabulary (it proposes nothing else). The draft of Episode 6's part 1 is this one: a chart
    can list its every token, and speculative sampling over the listed tokens and one bar for the
    rest is then the full-vocabulary process grouped.

    Examples
    --------
    >>> nt = NextToken("x", (("a", 0.5),), (("a", 0.2, 0.5), ("b", 0.2, 0.1)), 0.5, 0.6, 0.3)
    >>> top_only(nt)
    ((('a', 0.5, 0.5), ('b', 0.5, 0.1)), 0.6)
    """
    kept = sum(q for _, q, _ in nt.draft)
    if kept <= 0:
        raise ValueError("the draft lists no token with nonzero probability")
    draft = tuple((piece, q / kept, p) for piece, q, p in nt.draft)
    return draft, float(sum(min(p, q) for _, q, p in draft))


def next_token(model, context: str, *, draft=None, top: int = 8,
               draft_top: int | None = None) -> NextToken:
    """The next-token distributions of the target and the draft after ``context``."""
    context = _check_text(context)
    draft_top = top if draft_top is None else draft_top
    for name, v in (("top", top), ("draft_top", draft_top)):
        if not 1 <= int(v) <= 64:
            raise ValueError(f"{name} must be in [1, 64]; got {v!r}")
    draft = default_draft() if draft is None else draft
    tok = model.tokenizer
    # The scorer predicts each token from those before it: one token more (any; here the end
    # token) makes its last row the prediction after the whole context.
    seq = np.concatenate([[tok.bos_id], tok.encode(context), [tok.eos_id]]).astype(np.int64)
    last = None
    for _start, p, q in iter_distributions(model, seq, draft=whole_distribution(draft), chunk=256):
        last = (p[-1].astype(np.float64), q[-1].astype(np.float64))
    p, q = last
    t = _top(tok, p, top, nonzero=False)
    d = tuple((piece, qv, float(p[i])) for (piece, qv), i in zip(
        _top(tok, q, draft_top, nonzero=True), np.argsort(-q, kind="stable")))
    return NextToken(context=context, target=t, draft=d,
                     target_rest=max(0.0, 1.0 - sum(v for _, v in t)),
                     draft_rest=max(0.0, 1.0 - sum(v for _, v, _ in d)),
                     alpha=float(np.minimum(p, q).sum()))
