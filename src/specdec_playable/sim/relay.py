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
from .events import Events

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
    tokens = _check_tokens(target_tokens)
    n = len(tokens)
    g = _check_q(q, n)
    k = _v.draft_length(k)
    big = _v.duration_ms("big_pass_ms", big_pass_ms)
    step = _v.duration_ms("draft_step_ms", draft_step_ms)
    rng = _v.generator(rng)
    if decoys is None:
        decoys = ["?"] * n
    elif isinstance(decoys, str) or len(decoys) != n:
        raise ValueError(f"decoys must have one string per token ({n})")
    decoys = [str(d) for d in decoys]

    # A drafted position is judged at most once before it is written, so one
    # uniform per position decides every judgement the run makes.
    hits = rng.random(n) < g

    rows: list[tuple] = []
    output: list[str] = []
    starts, ends, drafted, accepted, made, firsts = [], [], [], [], [], []
    pos, t, r = 0, 0.0, 0
    while pos < n:
        d = min(k, n - pos)
        for i in range(d):
            guess = tokens[pos + i] if hits[pos + i] else decoys[pos + i]
            rows.append(("draft", "draft", r, pos + i, guess, t + i * step, t + (i + 1) * step))
        v0 = t + d * step
        v1 = v0 + big
        rows.append(("big", "verify", r, pos, "", v0, v1))
        window = hits[pos:pos + d]
        a = int(d if window.all() else window.argmin())
        for i in range(a):
            rows.append(("big", "accepted", r, pos + i, tokens[pos + i], v1, v1))
        new = a
        if a < d:
            rows.append(("big", "rejected", r, pos + a, decoys[pos + a], v1, v1))
            for i in range(a + 1, d):
                rows.append(("big", "discarded", r, pos + i, decoys[pos + i], v1, v1))
            rows.append(("big", "correction", r, pos + a, tokens[pos + a], v1, v1))
            new += 1
        elif pos + d < n:
            rows.append(("big", "bonus", r, pos + d, tokens[pos + d], v1, v1))
            new += 1
        output.extend(tokens[pos:pos + new])
        starts.append(t)
        ends.append(v1)
        drafted.append(d)
        accepted.append(a)
        made.append(new)
        firsts.append(pos)
        pos += new
        t = v1
        r += 1

    rounds = {
        "start_ms": np.array(starts, dtype=float),
        "end_ms": np.array(ends, dtype=float),
        "drafted": np.array(drafted, dtype=np.int64),
        "accepted": np.array(accepted, dtype=np.int64),
        "tokens": np.array(made, dtype=np.int64),
        "first_token": np.array(firsts, dtype=np.int64),
    }
    return RelayResult(
        output=tuple(output),
        events=Events.from_rows(rows),
        rounds=rounds,
        wall_ms=t,
        baseline_ms=n * big,
    )
