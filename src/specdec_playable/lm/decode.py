"""Plain and speculative decoding with the real model, every pass timed on the wall clock.

:func:`generate` writes one token per target pass. :func:`speculate` lets a draft propose up to
``k`` tokens, checks them all in one target pass over ``k + 1`` positions, keeps the longest agreeing
prefix, and takes the target's own token where the draft first went wrong (the correction) or, when
every draft was accepted, one more token from the same pass (the bonus). Rejected drafts are undone
by rolling the cache back.

Greedy speculative decoding returns exactly the target's greedy text. With sampling, each drafted
token ``x`` is accepted with probability ``min(1, p(x) / q(x))`` and a rejection is replaced by a draw
from ``norm(max(0, p - q))`` (Leviathan, Kalman and Matias, 2023; Chen et al., 2023), so the output
follows the target's distribution ``p`` whatever the draft does.

Both runners take a token budget, an optional wall-time budget, an optional cancel flag (anything
with ``is_set()``, such as :class:`threading.Event`) and an optional ``progress`` callback, called
after every target pass with an :class:`Update`; a page's worker thread can stream tokens from it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ..sim import validate as _v
from ..sim.acceptance import Acceptance
from ..sim.events import Event, Events, verdict_events
from . import sampling
from .drafts import EMPTY, Proposal

MAX_NEW_MAX = 4096
#: The longest draft the real decoders take (the simulation allows sim.validate.K_MAX).
LM_K_MAX = 16
MARKS = ("generate", "accepted", "correction", "bonus")


@dataclass(frozen=True, eq=False)
class Update:
    """What one target pass decided (passed to ``progress``).

    Attributes
    ----------
    round : int
        Target pass number: 0 is the prompt's prefill.
    kind : str
        ``"generate"`` (one position scored) or ``"verify"`` (drafts checked).
    tokens, texts, marks : tuple
        The tokens this pass added to the output, their text and how each was decided
        (``generate``, ``accepted``, ``correction`` or ``bonus``).
    proposed, proposed_texts : tuple
        The draft's proposal this round (empty for a plain pass).
    n_accepted : int
        How many of the proposed tokens were accepted.
    total_tokens : int
        Output length so far.
    elapsed_ms : float
        Wall clock since the run started.
    events : Events
        The events this round added.
    tree : TreeRound or None
        For a token-tree verify pass (:func:`.tree.speculate_tree`), the whole round: the tree,
        its mask and the accepted path.
    """

    round: int
    kind: str
    tokens: tuple
    texts: tuple
    marks: tuple
    proposed: tuple
    proposed_texts: tuple
    n_accepted: int
    total_tokens: int
    elapsed_ms: float
    events: Events
    tree: object = None


@dataclass(frozen=True, eq=False)
class Generation:
    """A finished run of :func:`generate` or :func:`speculate`.

    Attributes
    ----------
    prompt, tokens : tuple of int
        Prompt ids and generated ids (an end-of-sequence token stops the run and is not included).
    text : str
        The generated text.
    marks : tuple of str
        How each generated token was decided: ``generate`` (one pass, one token, including the
        prefill's), ``accepted`` (a draft the target agreed with), ``correction`` or ``bonus``.
    events : Events
        Lane ``"big"``: ``generate`` and ``verify`` passes, then the verdicts of each verify
        (``accepted``, ``rejected``, ``discarded``, ``correction``, ``bonus``) stamped at its end.
        Lane ``"draft"``: one ``draft`` event per proposed token. ``token`` is the position in the
        output; ``text`` is the token's text (the draft's guess for drafted tokens, rejected ones
        included); times are ms since the run started.
    draft : str
        The draft's name, or ``"none"`` for plain decoding.
    k : int
        Draft length (0 for plain decoding).
    temperature, top_p : float
        0 means greedy.
    prefill_ms, wall_ms : float
        The prompt's pass, and the whole run (prefill included).
    passes : int
        Target passes after the prefill.
    draft_ms : float
        Time spent inside the draft.
    proposed, accepted, rejected : int
        Drafted tokens, those accepted, and rounds that ended on a rejection.
    accept_at : numpy.ndarray, shape (k,)
        Acceptance rate at each draft position: accepted there over judged there (NaN if never
        judged). A position is judged when every earlier draft of the round was accepted.
    stopped : str
        ``"budget"`` (the token budget, capped by the context), ``"eos"``, ``"cancelled"`` or ``"time"``.

    Examples
    --------
    >>> m = get_model()                                                     # doctest: +SKIP
    >>> r = speculate(m, m.tokenizer.chat("Hi"), PromptLookup(), 4, max_new=16)  # doctest: +SKIP
    >>> r.tokens_per_pass >= 1                                              # doctest: +SKIP
    True
    """

    prompt: tuple
    tokens: tuple
    text: str
    marks: tuple
    events: Events
    draft: str
    k: int
    temperature: float
    top_p: float
    prefill_ms: float
    wall_ms: float
    passes: int
    draft_ms: float
    proposed: int
    accepted: int
    rejected: int
    accept_at: np.ndarray
    stopped: str

    @property
    def decode_ms(self) -> float:
        """Wall clock after the prefill: the part speculation can shorten."""
        return self.wall_ms - self.prefill_ms

    @property
    def tokens_per_pass(self) -> float:
        """Tokens written per target pass after the prefill (1.0 for plain decoding)."""
        return (len(self.tokens) - 1) / self.passes if self.passes else 1.0

    @property
    def tokens_per_second(self) -> float:
        """Tokens after the prefill's first one, per second of decoding."""
        return (len(self.tokens) - 1) / (self.decode_ms / 1e3) if self.decode_ms > 0 else 0.0

    @property
    def acceptance_rate(self) -> float:
        """Accepted drafts over judged drafts (accepted + rejected); NaN if none was judged."""
        judged = self.accepted + self.rejected
        return self.accepted / judged if judged else float("nan")

    @property
    def draft_ms_per_token(self) -> float:
        return self.draft_ms / self.proposed if self.proposed else 0.0


def speedup(plain: Generation, spec: Generation) -> float:
    """Decoding speed of ``spec`` over ``plain`` (tokens per second, prefill excluded)."""
    return spec.tokens_per_second / plain.tokens_per_second if plain.tokens_per_second else float("nan")


def draft_cost(plain: Generation, spec: Generation) -> float:
    """Draft cost c: draft time per proposed token over the target's time per decode step."""
    step = plain.decode_ms / plain.passes if plain.passes else float("nan")
    return spec.draft_ms_per_token / step


def check_run(model, prompt, *, max_new, temperature, top_p, max_seconds, extra: int) -> tuple:
    """Validated ``(ids, max_new, temperature, top_p, max_seconds)``; ``max_new`` is cut to the
    context left after the prompt and ``extra`` positions a round may score beyond the output."""
    ids = model.tokenizer.as_array(prompt)
    if ids.size == 0:
        raise ValueError("prompt must hold at least one token")
    max_new = _v.integer("max_new", max_new, 1, MAX_NEW_MAX)
    temperature = _v.real("temperature", temperature, 0.0, sampling.TEMPERATURE_MAX)
    top_p = _v.real("top_p", top_p, 0.0, 1.0, lo_open=True)
    if max_seconds is not None:
        max_seconds = _v.real("max_seconds", max_seconds, 0.0, 86400.0, lo_open=True)
    room = model.config.context - ids.size - extra
    if room < 1:
        raise ValueError(f"prompt must have at most {model.config.context - extra - 1} tokens; "
                         f"got {ids.size}")
    return ids, min(max_new, room), temperature, top_p, max_seconds


class RunLog:
    """One run's bookkeeping, shared by every decoder: clock, output, events, stopping, progress."""

    def __init__(self, model, ids, *, max_new, temperature, top_p, rng, progress, cancel,
                 max_seconds, draft_name, k):
        self.model, self.tok = model, model.tokenizer
        self.temperature, self.top_p = temperature, top_p
        self.rng = _v.generator(rng)
        self.progress, self.cancel, self.max_seconds = progress, cancel, max_seconds
        self.max_new = max_new
        self.draft_name, self.k = draft_name, k
        self.t0 = time.perf_counter()
        self.ctx = np.empty(ids.size + max_new + k + 1, np.int64)  # prompt + output, one buffer
        self.ctx[:ids.size] = ids
        self.n_prompt = ids.size
        self.out: list[int] = []
        self.marks: list[str] = []
        self.events: list[Event] = []
        self.stopped = "budget"
        self.passes = 0
        self.prefill_ms = 0.0
        self.draft_ms = 0.0
        self.proposed = self.accepted = self.rejected = 0
        self.judgements: list[tuple[int, int]] = []  # (drafted, accepted) of each verify pass

    def ms(self, t: float) -> float:
        return (t - self.t0) * 1e3

    def context(self) -> np.ndarray:
        return self.ctx[:self.n_prompt + len(self.out)]

    def pick(self, logits: np.ndarray) -> int:
        if self.temperature == 0.0:
            return int(np.argmax(logits))
        return sampling.draw(sampling.probabilities(logits, self.temperature, self.top_p), self.rng)

    def should_stop(self) -> bool:
        if self.cancel is not None and self.cancel.is_set():
            self.stopped = "cancelled"
        elif self.max_seconds is not None and time.perf_counter() - self.t0 >= self.max_seconds:
            self.stopped = "time"
        elif len(self.out) >= self.max_new:
            self.stopped = "budget"
        else:
            return False
        return True

    def judged(self, drafted: int, accepted: int, *, missed: bool) -> None:
        """Count one verify pass's verdict: ``drafted`` deep, ``accepted`` kept."""
        self.judgements.append((drafted, accepted))
        self.accepted += accepted
        self.rejected += bool(missed)

    def emit(self, rnd: int, kind: str, new: list[int], marks: list[str], *, proposed=(),
             n_accepted=0, first_event=0, tree=None) -> bool:
        """Append tokens (stopping at end-of-sequence); report progress. True if the run ends."""
        eos = self.tok.eos_id
        ended = False
        if eos in new:
            cut = new.index(eos)
            new, marks, ended = new[:cut], marks[:cut], True
            self.stopped = "eos"
        start = len(self.out)
        self.ctx[self.n_prompt + start:self.n_prompt + start + len(new)] = new
        self.out.extend(new)
        self.marks.extend(marks)
        if self.progress is not None:
            self.progress(self._update(rnd, kind, new, marks, proposed=proposed,
                                       n_accepted=n_accepted, first_event=first_event, tree=tree))
        return ended

    def _update(self, rnd, kind, new, marks, *, proposed, n_accepted, first_event, tree) -> Update:
        text = self.tok.token_text
        return Update(
            round=rnd, kind=kind, tokens=tuple(new), texts=tuple(text(t) for t in new),
            marks=tuple(marks), proposed=tuple(int(t) for t in proposed),
            proposed_texts=tuple(text(t) for t in proposed), n_accepted=n_accepted,
            total_tokens=len(self.out), elapsed_ms=self.ms(time.perf_counter()),
            events=Events.of(self.events[first_event:]), tree=tree)

    def prefill(self, cache, observe=None) -> bool:
        """The prompt's pass; ``observe`` (a proposer's) gets the prompt's hidden states."""
        t = time.perf_counter()
        fw = self.model.forward(self.context(), cache, logits="last")
        if observe is not None:
            observe(fw.hidden)
        tok = self.pick(fw.logits[-1])
        t1 = time.perf_counter()
        self.prefill_ms = (t1 - t) * 1e3
        first = len(self.events)
        self.events.append(Event("big", "generate", 0, 0, self.tok.token_text(tok), self.ms(t),
                                 self.ms(t1)))
        return self.emit(0, "generate", [tok], ["generate"], first_event=first)

    def result(self) -> "Generation":
        k = self.k
        drafted = [d for d, _ in self.judgements]
        kept = [a for _, a in self.judgements]
        return Generation(
            prompt=tuple(int(t) for t in self.ctx[:self.n_prompt]), tokens=tuple(self.out),
            text=self.tok.decode(self.out), marks=tuple(self.marks),
            events=Events.of(self.events), draft=self.draft_name, k=k,
            temperature=self.temperature, top_p=self.top_p, prefill_ms=self.prefill_ms,
            wall_ms=self.ms(time.perf_counter()), passes=self.passes, draft_ms=self.draft_ms,
            proposed=self.proposed, accepted=self.accepted, rejected=self.rejected,
            accept_at=Acceptance.rate_by_position(drafted, kept, k), stopped=self.stopped)


def generate(model, prompt: Sequence[int], *, max_new: int = 64, temperature: float = 0.0,
             top_p: float = 1.0, rng=None, progress: Callable[[Update], None] | None = None,
             cancel=None, max_seconds: float | None = None) -> Generation:
    """Plain decoding: the prefill writes the first token, then one target pass per token.

    Parameters
    ----------
    model : Model
    prompt : sequence of int
        Prompt ids (e.g. ``model.tokenizer.chat(text)``).
    max_new : int
        Token budget, in [1, 4096] (also capped by the context).
    temperature : float
        0 for greedy decoding, else in (0, 10].
    top_p : float
        Nucleus mass in (0, 1].
    rng : numpy.random.Generator, int or None
        Randomness for sampling.
    progress : callable, optional
        Called with an :class:`Update` after every pass.
    cancel : threading.Event, optional
        Checked before every pass; when set the run stops and returns what it has.
    max_seconds : float, optional
        Wall-time budget, checked before every pass.

    Returns
    -------
    Generation
    """
    ids, max_new, temperature, top_p, max_seconds = check_run(
        model, prompt, max_new=max_new, temperature=temperature, top_p=top_p,
        max_seconds=max_seconds, extra=0)
    run = RunLog(model, ids, max_new=max_new, temperature=temperature, top_p=top_p, rng=rng,
                 progress=progress, cancel=cancel, max_seconds=max_seconds, draft_name="none", k=0)
    cache = model.new_cache(capacity=ids.size + max_new + 1)
    if run.should_stop() or run.prefill(cache):
        return run.result()
    while not run.should_stop():
        if plain_step(run, cache):
            break
    return run.result()


def plain_step(run: RunLog, cache) -> bool:
    """One target pass that writes one token. True if the run ended (end-of-sequence)."""
    rnd = run.passes + 1
    t = time.perf_counter()
    logits = run.model.forward([run.out[-1]], cache, logits="last").logits[-1]
    tok = run.pick(logits)
    t1 = time.perf_counter()
    run.passes += 1
    first = len(run.events)
    run.events.append(Event("big", "generate", rnd, len(run.out), run.tok.token_text(tok),
                            run.ms(t), run.ms(t1)))
    return run.emit(rnd, "generate", [tok], ["generate"], first_event=first)


def speculate(model, prompt: Sequence[int], draft, k: int, *, max_new: int = 64,
              temperature: float = 0.0, top_p: float = 1.0, rng=None,
              progress: Callable[[Update], None] | None = None, cancel=None,
              max_seconds: float | None = None) -> Generation:
    """Speculative decoding: ``draft`` proposes up to ``k`` tokens, one target pass checks them.

    Parameters are those of :func:`generate`, plus:

    draft : Draft
        Any :class:`.drafts.Draft` (prompt lookup, early exit, the n-gram draft).
    k : int
        Most tokens drafted per round, in [1, 16]. Near the budget the draft is asked for fewer,
        so the output never exceeds ``max_new``.

    Returns
    -------
    Generation
    """
    k = _v.integer("k", k, 1, LM_K_MAX)
    ids, max_new, temperature, top_p, max_seconds = check_run(
        model, prompt, max_new=max_new, temperature=temperature, top_p=top_p,
        max_seconds=max_seconds, extra=k + 1)
    run = RunLog(model, ids, max_new=max_new, temperature=temperature, top_p=top_p, rng=rng,
                 progress=progress, cancel=cancel, max_seconds=max_seconds,
                 draft_name=str(getattr(draft, "name", type(draft).__name__)), k=k)
    cache = model.new_cache(capacity=ids.size + max_new + k + 2)
    proposer = draft.begin(model)
    if run.should_stop() or run.prefill(cache, getattr(proposer, "observe", None)):
        return run.result()
    while not run.should_stop():
        if speculative_round(run, cache, proposer):
            break
    return run.result()


def speculative_round(run: RunLog, cache, proposer) -> bool:
    """Draft -> verify -> judge -> record, once. True if the run ended (end-of-sequence)."""
    rnd, first, pos0 = run.passes + 1, len(run.events), len(run.out)
    prop = draft_step(run, proposer, min(run.k, run.max_new - pos0 - 1), rnd)
    drafts = [int(x) for x in prop.tokens]
    v0 = time.perf_counter()
    past = cache.length
    fw = run.model.forward([run.out[-1], *drafts], cache, logits="all")
    a, last = judge_pass(run, fw.logits, drafts, prop.p_draft)
    cache.rollback(past + 1 + a)
    v1 = time.perf_counter()
    run.passes += 1
    observe = getattr(proposer, "observe", None)
    if observe is not None:
        observe(fw.hidden[:1 + a])
    mark = record_verdict(run, rnd, pos0, drafts, accepted=a, last=last,
                          span=(run.ms(v0), run.ms(v1)))
    return run.emit(rnd, "verify" if drafts else "generate", drafts[:a] + [last],
                    ["accepted"] * a + [mark], proposed=drafts, n_accepted=a, first_event=first)


def draft_step(run: RunLog, proposer, d_max: int, rnd: int) -> Proposal:
    """Ask the draft for up to ``d_max`` tokens; log its time and one event per token."""
    t = time.perf_counter()
    prop: Proposal = EMPTY
    if d_max > 0:
        prop = proposer.propose(run.context(), d_max, temperature=run.temperature,
                                top_p=run.top_p, rng=run.rng)
        prop = prop.first(d_max)
    t1 = time.perf_counter()
    d = len(prop)
    run.draft_ms += (t1 - t) * 1e3
    run.proposed += d
    stamps = prop.stamps if prop.stamps is not None else np.full(d, t1)
    prev, pos0 = t, len(run.out)
    for i, x in enumerate(prop.tokens.tolist()):
        end = float(stamps[i])
        run.events.append(Event("draft", "draft", rnd, pos0 + i, run.tok.token_text(x),
                                run.ms(prev), run.ms(end)))
        prev = end
    return prop


def judge_pass(run: RunLog, logits: np.ndarray, drafts: list[int], p_draft) -> tuple[int, int]:
    """How many drafts the target keeps, and the token it writes after them."""
    if run.temperature == 0.0:
        best = np.argmax(logits, axis=-1)
        a = 0
        while a < len(drafts) and drafts[a] == int(best[a]):
            a += 1
        return a, int(best[a])
    p_big = sampling.probabilities(logits, run.temperature, run.top_p)
    return judge(p_big, drafts, p_draft, run.rng)


def record_verdict(run: RunLog, rnd: int, pos0: int, drafts: list[int], *, accepted: int,
                   last: int, span: tuple[float, float]) -> str:
    """Log the verify pass over ``span`` (ms) and its verdict; return how ``last`` was decided."""
    vs, ve = span
    d, a = len(drafts), accepted
    text = run.tok.token_text
    if not d:
        run.events.append(Event("big", "generate", rnd, pos0, text(last), vs, ve))
        return "generate"
    run.events.append(Event("big", "verify", rnd, pos0, "", vs, ve))
    run.events += verdict_events(rnd, pos0, [text(x) for x in drafts], a, text(last), ve)
    run.judged(d, a, missed=a < d)
    return "correction" if a < d else "bonus"


def judge(p_big, drafts, p_draft, rng) -> tuple[int, int]:
    """Speculative sampling over one verify pass: (accepted count, the token that follows).

    Parameters
    ----------
    p_big : numpy.ndarray, shape (d + 1, vocab)
        The target's distributions at the pending token and at each drafted token.
    drafts : sequence of int, length d
    p_draft : numpy.ndarray, shape (d, vocab), or None
        The draft's distributions (None: one-hot on each drafted token).
    rng : numpy.random.Generator

    Each drafted ``x`` is kept with probability ``min(1, p_big(x) / p_draft(x))`` (uniforms drawn
    up front); the first rejection is replaced by a draw from ``norm(max(0, p_big - p_draft))``,
    and if all ``d`` are kept one more token comes from ``p_big`` at the last position.
    """
    d = len(drafts)
    u = rng.random(d)
    for i, x in enumerate(drafts):
        qi = None if p_draft is None else p_draft[i]
        if u[i] >= sampling.accept_probability(p_big[i], qi, x):
            return i, sampling.draw(sampling.residual(p_big[i], qi, x), rng)
    return d, sampling.draw(p_big[d], rng)
