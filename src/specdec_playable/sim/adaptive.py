"""Adaptive draft length: policies that choose k round by round, raced on one token stream.

The stream is several texts back to back (Episode 6 races code, a poem and JSON measured by
the real model, :func:`data.measured.measured_stream`), each token with its own acceptance
probability ``q``. One uniform number per token position is drawn once and shared by
every policy: the draft's guess at position ``i`` is right exactly when
``u[i] < q[i]``. So every policy sees the same randomness and the races differ
only by the policies' choices.

A round that drafts ``d`` tokens costs one big-model pass plus ``d`` draft steps
of ``c`` passes each and yields the accepted drafts plus one token of the big
model's own. A round with speculation switched off is plain decoding: one pass,
one token. Plain decoding of the whole stream costs one pass per token, so a
policy's speedup is ``len(stream) / total cost``.

Policies
--------
:class:`FixedK`
    Always draft ``k``.
:class:`PlusTwoMinusOne`
    Grow ``k`` by 2 after a round with every draft accepted, else shrink by 1
    (never below 1, never above ``k_max``).
:class:`EstimateBestK`
    Keep an exponential moving average of the acceptance rate and draft
    ``theory.best_k(estimate, c)``.
:class:`EstimateWithOffSwitch`
    The same, but stop speculating (plain decoding) while the estimate is below
    ``theory.break_even_q(best k, c)``, drafting a short probe round every few
    tokens to notice when the text turns predictable again.
:class:`MatchLength`
    Draft as many tokens as the text just written matches in the model's past replies (the
    memory draft's rule); plain decoding where it matches fewer than two.

Examples
--------
>>> stream = Stream(tuple("abcdefghijkl"), np.linspace(0.2, 0.9, 12), (("code", 0, 12),))
>>> runs = race(stream, default_policies(), c=0.15, rng=0)
>>> all(r.output == stream.tokens for r in runs)
True
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import validate as _v
from . import theory
from .acceptance import Acceptance
from .validate import K_DEFAULT

#: Longest draft any policy may choose.
K_CAP = 12
REPEATS_MAX = 20


# ---------------------------------------------------------------------------
# The stream
# ---------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Stream:
    """Tokens with their acceptance probabilities, and where each text (genre) starts and ends.

    Attributes
    ----------
    tokens : tuple of str
    q : numpy.ndarray
        Read-only; probability the draft guesses each token.
    segments : tuple of (label, start, end)
        One entry per text: its kind (``"code"``, ``"poem"``, ...) and token range.
    match : numpy.ndarray of int, optional
        Read-only; per token, how long a stretch just before it the memory draft matches in the
        model's past replies (:class:`MatchLength` reads it); None where not measured.
    """

    tokens: tuple[str, ...]
    q: np.ndarray
    segments: tuple[tuple[str, int, int], ...]
    match: np.ndarray | None = None

    def __post_init__(self):
        if self.match is not None:
            m = np.array(self.match, dtype=np.int64)
            if m.shape != (len(self.tokens),) or (m < 0).any():
                raise ValueError(f"match must hold one length >= 0 per token ({len(self.tokens)}); "
                                 f"got shape {m.shape}")
            m.setflags(write=False)
            object.__setattr__(self, "match", m)

    def __len__(self) -> int:
        return len(self.tokens)


def stream_of(texts, repeats: int = 1) -> Stream:
    """Texts (each with ``tokens``, per-token ``q`` and a ``kind``) back to back, each ``repeats``
    times, as one read-only :class:`Stream` with a segment per text."""
    repeats = _v.integer("repeats", repeats, 1, REPEATS_MAX)
    tokens: list[str] = []
    qs: list[np.ndarray] = []
    segments = []
    for t in texts:
        start = len(tokens)
        for _ in range(repeats):
            tokens.extend(t.tokens)
            qs.append(t.q)
        segments.append((t.kind, start, len(tokens)))
    q = np.concatenate(qs)
    q.setflags(write=False)
    return Stream(tuple(tokens), q, tuple(segments))


def plus_two_minus_one(k: int, drafted: int, accepted: int, k_max: int = K_CAP) -> int:
    """Next k of the +2/-1 heuristic: ``k + 2`` if all drafts were kept, else ``k - 1``; in [1, k_max].

    Examples
    --------
    >>> plus_two_minus_one(4, 4, 4), plus_two_minus_one(4, 4, 2), plus_two_minus_one(1, 1, 0)
    (6, 3, 1)
    >>> plus_two_minus_one(11, 11, 11, k_max=12)
    12
    """
    nxt = k + 2 if accepted >= drafted else k - 1
    return int(min(max(nxt, 1), k_max))


def ema_update(estimate: float, drafted: int, accepted: int, alpha: float) -> float:
    """Fold one round's judged drafts into an exponential moving average of acceptance.

    A round that drafted ``drafted`` and kept ``accepted`` judged ``accepted``
    drafts that were right, and, if ``accepted < drafted``, one that was wrong
    (the rest were thrown away unjudged). Each judged draft moves the estimate
    ``alpha`` of the way towards 1 (right) or 0 (wrong).

    Examples
    --------
    >>> ema_update(0.5, 2, 2, 0.5)   # two hits: 0.5 -> 0.75 -> 0.875
    0.875
    >>> ema_update(0.5, 3, 1, 0.5)   # a hit, then a miss: 0.75 -> 0.375
    0.375
    >>> ema_update(0.5, 0, 0, 0.5)   # nothing drafted, nothing learned
    0.5
    """
    keep = (1.0 - alpha) ** accepted
    est = 1.0 - keep * (1.0 - estimate)
    if accepted < drafted:
        est *= 1.0 - alpha
    return float(est)


# ---------------------------------------------------------------------------
# Policies: a frozen configuration, and a small controller per run
# ---------------------------------------------------------------------------


class _Controller:
    """Chooses each round's k (0 = plain decoding) and learns from the result. :func:`run_policy`
    sets ``stream`` once and ``pos`` (where the round starts) before each :meth:`next_k`."""

    estimate = float("nan")
    stream: Stream | None = None
    pos = 0

    def next_k(self) -> int:  # pragma: no cover - interface
        raise NotImplementedError

    def observe(self, drafted: int, accepted: int) -> None:
        pass


@dataclass(frozen=True)
class FixedK:
    """Always draft ``k`` tokens."""

    k: int = K_DEFAULT

    @property
    def label(self) -> str:
        return f"fixed k = {self.k}"

    def controller(self, c: float) -> _Controller:
        k = _v.integer("k", self.k, 1, K_CAP)

        class C(_Controller):
            def next_k(self):
                return k

        return C()


@dataclass(frozen=True)
class PlusTwoMinusOne:
    """+2 after a perfect round, -1 after a miss, starting at ``k0``."""

    k0: int = K_DEFAULT
    k_max: int = K_CAP

    @property
    def label(self) -> str:
        return "+2 / −1 heuristic"

    def controller(self, c: float) -> _Controller:
        cfg = self
        _v.integer("k_max", cfg.k_max, 1, K_CAP)

        class C(_Controller):
            k = _v.integer("k0", cfg.k0, 1, cfg.k_max)

            def next_k(self):
                return self.k

            def observe(self, drafted, accepted):
                self.k = plus_two_minus_one(self.k, drafted, accepted, cfg.k_max)

        return C()


@dataclass(frozen=True)
class EstimateBestK:
    """Draft ``theory.best_k`` of a moving-average acceptance estimate."""

    alpha: float = 0.15
    start: float = 0.6
    k_max: int = K_CAP

    @property
    def label(self) -> str:
        return "best k from estimate"

    def _check(self):
        _v.real("alpha", self.alpha, 0.0, 1.0, lo_open=True)
        _v.probability("start", self.start)
        _v.integer("k_max", self.k_max, 1, K_CAP)

    def controller(self, c: float) -> _Controller:
        self._check()
        cfg = self

        class C(_Controller):
            estimate = cfg.start

            def next_k(self):
                return theory.best_k(self.estimate, c, k_max=cfg.k_max)

            def observe(self, drafted, accepted):
                self.estimate = ema_update(self.estimate, drafted, accepted, cfg.alpha)

        return C()


@dataclass(frozen=True)
class EstimateWithOffSwitch(EstimateBestK):
    """Best k from the estimate, but plain decoding while the estimate is below break-even.

    While off, every ``probe_every``-th round is a probe that drafts ``probe_k``
    tokens, so the estimate keeps learning and speculation can come back on.
    """

    probe_every: int = 6
    probe_k: int = 2

    @property
    def label(self) -> str:
        return "best k, off below break-even"

    def controller(self, c: float) -> _Controller:
        self._check()
        _v.integer("probe_every", self.probe_every, 1, 1000)
        _v.integer("probe_k", self.probe_k, 1, K_CAP)
        cfg = self

        class C(_Controller):
            estimate = cfg.start
            plain = 0  # plain rounds since speculation went off or last probed

            def next_k(self):
                k = theory.best_k(self.estimate, c, k_max=cfg.k_max)
                if not below_break_even(self.estimate, k, c):
                    self.plain = 0
                    return k
                if self.plain >= cfg.probe_every:
                    self.plain = 0
                    return cfg.probe_k
                self.plain += 1
                return 0

            def observe(self, drafted, accepted):
                self.estimate = ema_update(self.estimate, drafted, accepted, cfg.alpha)

        return C()


@dataclass(frozen=True)
class MatchLength:
    """Draft as many tokens as the text just written matches in the model's past replies: the
    memory draft's own rule (SuffixDecoding's: a longer match earns a longer draft), ``k =
    ceil(factor * m)`` for a match of ``m`` tokens, at most ``k_max``, and plain decoding where
    the match is shorter than ``min_match``. It reads the stream's :attr:`Stream.match`, not the
    rounds: it learns nothing from them.

    Examples
    --------
    >>> s = Stream(tuple("abcdef"), np.full(6, 0.9), (("code", 0, 6),), match=[0, 1, 2, 3, 5, 9])
    >>> ctl = MatchLength().controller(0.1)
    >>> ctl.stream = s
    >>> [(setattr(ctl, "pos", i), ctl.next_k())[1] for i in range(6)]
    [0, 0, 2, 3, 5, 9]
    """

    factor: float = 1.0
    min_match: int = 2
    k_max: int = K_CAP

    @property
    def label(self) -> str:
        return "k from the match length"

    def controller(self, c: float) -> _Controller:
        _v.real("factor", self.factor, 0.0, 16.0, lo_open=True)
        _v.integer("min_match", self.min_match, 1, 1000)
        _v.integer("k_max", self.k_max, 1, K_CAP)
        cfg = self

        class C(_Controller):
            def next_k(self):
                if self.stream is None or self.stream.match is None:
                    raise ValueError("the match-length policy needs a stream with match lengths "
                                     "(Stream.match)")
                m = int(self.stream.match[self.pos])
                return 0 if m < cfg.min_match else min(cfg.k_max, int(np.ceil(cfg.factor * m)))

        return C()


def below_break_even(estimate: float, k: int, c: float) -> bool:
    """Whether drafting ``k`` at acceptance ``estimate`` is expected to lose to plain decoding.

    Examples
    --------
    >>> below_break_even(0.10, 1, 0.15), below_break_even(0.20, 1, 0.15)
    (True, False)
    """
    be = theory.break_even_q(k, c)
    return bool(np.isnan(be) or estimate < be)


def default_policies(fixed_k: int = K_DEFAULT, *, match: bool = False) -> tuple:
    """The policies the page races: four, and with ``match`` the fifth, :class:`MatchLength`
    (for a stream with match lengths)."""
    four = (FixedK(fixed_k), PlusTwoMinusOne(), EstimateBestK(), EstimateWithOffSwitch())
    return (*four, MatchLength()) if match else four


# ---------------------------------------------------------------------------
# Running a policy over the stream
# ---------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class PolicyRun:
    """One policy's run over the stream, round by round.

    Attributes
    ----------
    label : str
        The policy's name.
    start : numpy.ndarray of int
        Stream position where each round began.
    k : numpy.ndarray of int
        Draft length each round chose (0: speculation off, plain decoding).
    drafted, accepted, tokens : numpy.ndarray of int
        Drafts made (``k`` capped near the end of the stream), drafts kept, tokens yielded.
    cost : numpy.ndarray of float
        Each round's time in big-model passes: ``1 + drafted * c``.
    wall : numpy.ndarray of float
        Cumulative wall clock after each round.
    estimate : numpy.ndarray of float
        The policy's acceptance estimate when it chose k (NaN if it keeps none).
    output : tuple of str
        What the run wrote, round by round: the kept drafts and the big model's token.
    """

    label: str
    start: np.ndarray
    k: np.ndarray
    drafted: np.ndarray
    accepted: np.ndarray
    tokens: np.ndarray
    cost: np.ndarray
    wall: np.ndarray
    estimate: np.ndarray
    output: tuple[str, ...]

    @property
    def n_rounds(self) -> int:
        return int(self.k.size)

    @property
    def total_cost(self) -> float:
        return float(self.wall[-1])

    @property
    def speedup(self) -> float:
        """Plain decoding's cost (one pass per token) over this run's cost."""
        return len(self.output) / self.total_cost

    @property
    def acceptance(self) -> Acceptance:
        """Drafts judged (the kept ones and each round's first miss) and kept."""
        return Acceptance.of_rounds(self.drafted, self.accepted)

    @property
    def acceptance_rate(self) -> float:
        """Kept drafts over judged drafts (NaN if the policy never drafted)."""
        return self.acceptance.rate

    @property
    def plain_rounds(self) -> int:
        return int((self.k == 0).sum())

    def wall_at(self, written) -> np.ndarray | float:
        """The wall clock (passes) when ``written`` tokens were out, read off the run's line.

        The line joins the round ends (tokens written so far, wall clock so far) from
        (0, 0), as the race chart draws it; between two round ends it is interpolated.

        Examples
        --------
        >>> s = Stream(tuple("abcdefghijkl"), np.full(12, 0.9), (("code", 0, 12),))
        >>> r = run_policy(FixedK(3), s, np.ones(len(s), bool), c=0.1)
        >>> round(float(r.wall_at(4)), 2), round(float(r.wall_at(6)), 2)
        (1.3, 1.95)
        """
        x = np.concatenate([[0], np.cumsum(self.tokens)])
        y = np.concatenate([[0.0], self.wall])
        out = np.interp(written, x, y)
        return float(out) if np.ndim(out) == 0 else out

    def stretch_costs(self, segments) -> np.ndarray:
        """Passes spent on each ``(label, start, end)`` stretch of the stream, split where the
        race chart's bands split its line (:meth:`wall_at`)."""
        edges = np.array([[a, b] for _, a, b in segments], dtype=float)
        at = self.wall_at(edges.ravel()).reshape(edges.shape)
        return at[:, 1] - at[:, 0]

    def mean_k(self, start: int, end: int) -> float:
        """Mean draft length of the rounds that began in ``[start, end)`` (NaN if none did)."""
        sel = (self.start >= start) & (self.start < end)
        return float(self.k[sel].mean()) if sel.any() else float("nan")


def draw_uniforms(n: int, *, rng=None) -> np.ndarray:
    """The shared randomness: one uniform per stream position."""
    n = _v.integer("n", n, 1, _v.ROUNDS_MAX)
    return _v.generator(rng).random(n)


def run_policy(policy, stream: Stream, hits, c: float) -> PolicyRun:
    """Run ``policy`` over ``stream``; ``hits[i]`` says whether the draft guesses token ``i`` right.

    Examples
    --------
    >>> s = Stream(tuple("abcdefghijkl"), np.full(12, 0.9), (("code", 0, 12),))
    >>> r = run_policy(FixedK(3), s, np.ones(len(s), bool), c=0.1)
    >>> int(r.tokens[0]), int(r.accepted[0]), round(float(r.cost[0]), 2)
    (4, 3, 1.3)
    """
    c = _v.draft_cost(c)
    hits = np.asarray(hits, dtype=bool)
    n = len(stream)
    if hits.shape != (n,):
        raise ValueError(f"hits must have one entry per stream token ({n}); got shape {hits.shape}")
    ctl = policy.controller(c)
    ctl.stream = stream
    misses = np.flatnonzero(~hits)
    rows = []
    out: list[str] = []
    pos = 0
    while pos < n:
        est = ctl.estimate
        ctl.pos = pos
        k = int(ctl.next_k())
        d = min(k, n - pos - 1)  # always leave the big model one token to write
        # Drafts kept: up to the first miss at or after pos, within d.
        j = np.searchsorted(misses, pos)
        first_miss = int(misses[j]) if j < misses.size else n
        a = min(first_miss - pos, d)
        t = a + 1
        out.extend(stream.tokens[pos: pos + t])
        rows.append((pos, k, d, a, t, 1.0 + d * c, est))
        if d > 0:
            ctl.observe(d, a)
        pos += t
    arr = np.array(rows, dtype=float)
    start, k, d, a, t = (arr[:, i].astype(np.int64) for i in range(5))
    cost = arr[:, 5]
    result = PolicyRun(policy.label, start, k, d, a, t, cost, np.cumsum(cost), arr[:, 6],
                       tuple(out))
    for v in (start, k, d, a, t, cost, result.wall, result.estimate):
        v.setflags(write=False)
    return result


def race(stream: Stream, policies, c: float, *, rng=None) -> tuple[PolicyRun, ...]:
    """Run every policy on ``stream`` with one shared draw of randomness."""
    u = draw_uniforms(len(stream), rng=rng)
    hits = u < stream.q
    return tuple(run_policy(pol, stream, hits, c) for pol in policies)
