"""One full speculative run over a known big-model text.

The big model's own output is known in advance (``target_tokens``); the draft
model guesses each position correctly with that position's acceptance
probability ``q``.
Each round:

1. the draft proposes ``d = min(k, tokens left)`` tokens, one step each;
2. the big model scores all ``d`` in one pass;
3. the matching prefix is accepted, the first miss is rejected and the big
   model's own token is written in its place (the correction); drafts after
   the miss are discarded unjudged;
4. if every draft was accepted and text remains, the same pass yields one more
   token for free (the bonus).

Whatever the draft guesses, the output is the big model's text: that is the
guarantee speculative decoding gives, and :func:`run` returns it for checking.
"""

from __future__ import annotations

from dataclasses import dataclass
from collections.abc import Sequence

import numpy as np

from . import validate as _v
from .acceptance import Acceptance
from .events import Event, Events, verdict_events

TOKENS_MAX = 100_000


@dataclass(frozen=True, eq=False)
class RelayResult:
    """Outcome of :func:`run`.

    Attributes
    ----------
    output : tuple of str
        The tokens produced, in order. Always equal to the target text.
    events : Events
        Draft steps (lane ``"draft"``), verify passes (lane ``"big"``) and the
        verdicts (``accepted``, ``rejected``, ``discarded``, ``correction``,
        ``bonus``; lane ``"big"``, stamped at the end of their verify pass).
    rounds : dict of numpy.ndarray
        One entry per round: ``start_ms``, ``end_ms``, ``drafted``, ``accepted``,
        ``tokens`` (tokens the round produced) and ``first_token`` (its first
        position in the text).
    wall_ms : float
        When the speculative run finishes.
    baseline_ms : float
        The big model alone: one pass per token.

    Examples
    --------
    >>> r = run(["a", "b", "c"], 1.0, 2, rng=0)
    >>> r.output, r.wall_ms, r.baseline_ms
    (('a', 'b', 'c'), 720.0, 1800.0)
    """

    output: tuple[str, ...]
    events: Events
    rounds: dict
    wall_ms: float
    baseline_ms: float

    @property
    def speedup(self) -> float:
        """``baseline_ms / wall_ms`` (1.0 for an empty text)."""
        return self.baseline_ms / self.wall_ms if self.wall_ms > 0 else 1.0

    @property
    def n_rounds(self) -> int:
        return int(self.rounds["tokens"].shape[0])

    @property
    def acceptance(self) -> Acceptance:
        """Drafts judged (the accepted ones and each round's first miss) and accepted."""
        return Acceptance.of_rounds(self.rounds["drafted"], self.rounds["accepted"])

    @property
    def acceptance_rate(self) -> float:
        """Accepted drafts over judged drafts (NaN for an empty text: nothing judged)."""
        return self.acceptance.rate


def _check_tokens(target_tokens) -> list[str]:
    if isinstance(target_tokens, (str, bytes)) or not isinstance(target_tokens, Sequence):
        raise ValueError(
            f"target_tokens must be a sequence of strings; got {type(target_tokens).__name__}"
        )
    if len(target_tokens) > TOKENS_MAX:
        raise ValueError(
            f"target_tokens must have at most {TOKENS_MAX} tokens; got {len(target_tokens)}"
        )
    for i, tok in enumerate(target_tokens):
        if not isinstance(tok, str):
            raise ValueError(f"target_tokens[{i}] must be a string; got {tok!r}")
    return list(target_tokens)


def _check_q(q, n: int) -> np.ndarray:
    if n == 0 and np.ndim(q) == 1 and np.size(q) == 0:
        return np.zeros(0)  # an empty text with its (empty) per-token array
    g = _v.real_array("q", q, 0.0, 1.0)
    if g.ndim == 0:
        return np.full(n, float(g))
    if g.shape != (n,):
        raise ValueError(
            f"q must be one probability or one per token ({n}); got shape {g.shape}"
        )
    return g


def run(
    target_tokens,
    q,
    k,
    *,
    rng,
    big_pass_ms=600.0,
    draft_step_ms=60.0,
    decoys=None,
) -> RelayResult:
    """Run speculative decoding over a known big-model text.

    Parameters
    ----------
    target_tokens : sequence of str
        What the big model alone would write (at most 100,000 tokens).
    q : float or array_like
        Probability that the draft guesses a position right: one for all tokens,
        or one per token, each in [0, 1].
    k : int
        Tokens drafted per round, in [1, 64].
    rng : numpy.random.Generator, int or None
        Source of randomness. One uniform is drawn per position, up front.
    big_pass_ms, draft_step_ms : float
        Time of one big-model pass and of one draft step, > 0.
    decoys : sequence of str, optional
        The draft's wrong guess at each position (shown for rejected and
        discarded drafts). Defaults to ``"?"``.

    Returns
    -------
    RelayResult
    """
    tokens, g, k, big, step, rng, decoys = _check_run(
        target_tokens, q, k, rng=rng, big_pass_ms=big_pass_ms, draft_step_ms=draft_step_ms,
        decoys=decoys)
    n = len(tokens)
    # A drafted position is judged at most once before it is written, so one
    # uniform per position decides every judgement the run makes.
    hits = rng.random(n) < g
    events: list[Event] = []
    rounds: list[_Round] = []
    pos, t = 0, 0.0
    while pos < n:
        r = _round(_Text(tokens, decoys, hits), pos, min(k, n - pos), t=t, step=step, big=big,
                   r=len(rounds))
        events += r.events
        rounds.append(r)
        pos, t = pos + r.tokens, r.end_ms
    return RelayResult(
        output=tuple(tokens[:pos]),
        events=Events.of(events),
        rounds=_round_table(rounds),
        wall_ms=t,
        baseline_ms=n * big,
    )


def _check_run(target_tokens, q, k, *, rng, big_pass_ms, draft_step_ms, decoys) -> tuple:
    tokens = _check_tokens(target_tokens)
    n = len(tokens)
    if decoys is None:
        decoys = ["?"] * n
    elif isinstance(decoys, str) or len(decoys) != n:
        raise ValueError(f"decoys must have one string per token ({n})")
    return (tokens, _check_q(q, n), _v.draft_length(k),
            _v.duration_ms("big_pass_ms", big_pass_ms),
            _v.duration_ms("draft_step_ms", draft_step_ms), _v.generator(rng),
            [str(d) for d in decoys])


@dataclass(frozen=True)
class _Round:
    """One draft -> verify -> judge round of :func:`run`."""

    start_ms: float
    end_ms: float
    drafted: int
    accepted: int
    tokens: int
    first_token: int
    events: list


@dataclass(frozen=True)
class _Text:
    """The known text, the draft's wrong guesses and whether it guesses each position right."""

    tokens: list
    decoys: list
    hits: np.ndarray


def _round(text: _Text, pos: int, d: int, *, t: float, step: float, big: float,
           r: int) -> _Round:
    """Round ``r``: draft ``d`` tokens from ``pos`` at time ``t``, verify them in one pass of
    ``big`` ms (each draft step takes ``step``), judge, record."""
    tokens, decoys, hits = text.tokens, text.decoys, text.hits
    guesses = [tokens[pos + i] if hits[pos + i] else decoys[pos + i] for i in range(d)]
    events = [Event("draft", "draft", r, pos + i, guesses[i], t + i * step, t + (i + 1) * step)
              for i in range(d)]
    v0 = t + d * step
    v1 = v0 + big
    events.append(Event("big", "verify", r, pos, "", v0, v1))
    window = hits[pos:pos + d]
    a = int(d if window.all() else window.argmin())
    # The verdicts show the draft's wrong guess from the first miss on.
    shown = guesses[:a] + decoys[pos + a:pos + d]
    last = tokens[pos + a] if a < d else (tokens[pos + d] if pos + d < len(tokens) else None)
    events += verdict_events(r, pos, shown, a, last, v1)
    return _Round(t, v1, d, a, a + (last is not None), pos, events)


def _round_table(rounds: list[_Round]) -> dict:
    cols = {"start_ms": float, "end_ms": float, "drafted": np.int64, "accepted": np.int64,
            "tokens": np.int64, "first_token": np.int64}
    return {name: np.array([getattr(r, name) for r in rounds], dtype=dt) for name, dt in cols.items()}


@dataclass(frozen=True)
class Guarantee:
    """The relay's output compared token by token with the big model's own text."""

    matches: int
    n_tokens: int
    first_mismatch: int | None

    @property
    def ok(self) -> bool:
        return self.first_mismatch is None and self.matches == self.n_tokens


def check_guarantee(output, target) -> Guarantee:
    """Compare ``output`` with ``target`` position by position (lengths may differ)."""
    output, target = list(output), list(target)
    n = max(len(output), len(target))
    first = None
    matches = 0
    for i in range(n):
        same = i < len(output) and i < len(target) and output[i] == target[i]
        matches += same
        if not same and first is None:
            first = i
    return Guarantee(matches=matches, n_tokens=len(target), first_mismatch=first)
