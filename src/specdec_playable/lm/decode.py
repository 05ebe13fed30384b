"""Plain and speculative decoding with the real model: each decoder yields one pass at a time.

:func:`generate_passes` writes one token per target pass. :func:`speculate_passes` lets a draft
propose up to ``k`` tokens, checks them all in one target pass over ``k + 1`` positions, keeps the
longest agreeing prefix, and takes the target's own token where the draft first went wrong (the
correction) or, when every draft was accepted, one more token from the same pass (the bonus).
Rejected drafts are undone by rolling the cache back.

Each is a generator: every ``next()`` runs one target pass (and, for speculation, the draft's
guesses before it) and yields its :class:`Update`; when the run ends, the generator returns its
:class:`Generation` (``StopIteration.value``; :func:`finish` drives a run to its end and returns
it). Nothing runs between two ``next()`` calls, so a caller can interleave runs in one thread
(:mod:`.race`) or stop one early. A run keeps its own clock (:class:`RunClock`): it counts only
the time the run works, inside ``next()``, so every time it reports is its own, measured where it
ran. The clock is injectable (``clock=``, seconds): wall time by default; the race times its runs by
the process's CPU time (:data:`.race.CPU_CLOCK`), which a busy machine's waits for a core do not
inflate; a test passes a fake one.

Greedy speculative decoding returns exactly the target's greedy text. With sampling, each drafted
token ``x`` is accepted with probability ``min(1, p(x) / q(x))`` and a rejection is replaced by a draw
from ``norm(max(0, p - q))`` (Leviathan, Kalman and Matias, 2023; Chen et al., 2023), so the output
follows the target's distribution ``p`` whatever the draft does.

Every run takes a token budget, an optional wall-time budget (seconds since the run was created,
so runs created together share it) and an optional cancel flag (anything with ``is_set()``, such
as :class:`threading.Event`), checked before every pass. :func:`generate` and :func:`speculate`
are the same runs driven to their end, with an optional ``progress`` callback per pass.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass

import numpy as np

from ..sim import sampling as rule
from ..sim import validate as _v
from ..sim.acceptance import Acceptance
from ..sim.events import Event, Events, verdict_events
from . import sampling
from .drafts import EMPTY, Observes, Proposal

MAX_NEW_MAX = 4096
#: The longest draft the real decoders take (the simulation allows sim.validate.K_MAX).
LM_K_MAX = 16
MARKS = ("generate", "accepted", "correction", "bonus")
#: A clock: seconds, increasing (``time.perf_counter`` unless a caller passes its own).
Clock = Callable[[], float]


@dataclass(frozen=True, eq=False)
class Update:
    """What one target pass decided: what a decoder yields.

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
        The draft's proposal this round (empty for a plain pass); for a tree, every node.
    n_accepted : int
        How many of the proposed tokens were accepted.
    judged : int
        How deep the proposal reached (the chain's length, the tree's depth; 0 without one):
        the draft positions this pass could judge.
    missed : bool
        Whether the pass rejected a guess (the round ended on a correction).
    total_tokens : int
        Output length so far.
    elapsed_ms : float
        The run's own clock at the end of this pass (:class:`RunClock`: its working time since
        it started, the time it was suspended between passes not counted).
    turn_ms : float
        The run's working time from the end of its previous pass to the end of this one: the
        draft's guesses, the target pass and the bookkeeping of this round.
    pass_ms, draft_ms : float
        The target pass alone (with its verdict), and the draft's guesses this round.
    positions : int
        Positions the target pass scored: 1 + the guesses it checked, or the prompt's length for
        the prefill.
    events : Events
        The events this round added.
    tree : TreeRound or None
        For a token-tree verify pass (:func:`.tree.speculate_tree_passes`), the whole round: the
        tree, its mask and the accepted path.
    drafted_by : str
        Where this round's guesses came from, for drafts that draw on more than one source (the
        memory draft: ``"memory"`` or ``"request"``; the hybrid: those or ``"head"``); ``""``
        for the others, and for a round with no guesses.
    """

    round: int
    kind: str
    tokens: tuple
    texts: tuple
    marks: tuple
    proposed: tuple
    proposed_texts: tuple
    n_accepted: int
    judged: int
    missed: bool
    total_tokens: int
    elapsed_ms: float
    turn_ms: float
    pass_ms: float
    draft_ms: float
    positions: int
    events: Events
    tree: object = None
    drafted_by: str = ""


@dataclass(frozen=True, eq=False)
class Generation:
    """A run of :func:`generate_passes` or :func:`speculate_passes`, finished or so far
    (built by :func:`generation_of`).

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
        included); times are ms on the run's own clock (:class:`RunClock`: its working time since
        it started, so a run that took turns with another reads as if it had run alone).
    draft : str
        The draft's name, or ``"none"`` for plain decoding.
    k : int
        Draft length (0 for plain decoding).
    temperature, top_p : float
        0 means greedy.
    prefill_ms, wall_ms : float
        The prompt's turn (its pass and bookkeeping), and the whole run (prefill included): the
        run's own clock at its last pass.
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
        ``"budget"`` (the token budget, capped by the context), ``"eos"``, ``"cancelled"`` or ``"time"``;
        ``"running"`` for a run so far.
    drafted_by : tuple of str
        Each pass's :attr:`Update.drafted_by`, in order (empty for drafts with one source).

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
    drafted_by: tuple = ()

    @property
    def decode_ms(self) -> float:
        """Wall clock after the prefill: the part speculation can shorten."""
        return self.wall_ms - self.prefill_ms

    @property
    def written(self) -> int:
        """Tokens the passes after the prefill wrote: the output's after its first, and the
        end-of-sequence token a run's last pass may write (see :attr:`tokens_per_pass`)."""
        return len(self.tokens) - 1 + (self.stopped == "eos")

    @property
    def tokens_per_pass(self) -> float:
        """Tokens written per target pass after the prefill (1.0 for plain decoding), at least 1.

        Every pass writes at least one token: the end-of-sequence token a run's last pass may
        write counts, although the output leaves it out (a short reply would otherwise read
        below 1: ten tokens and an eleventh pass that wrote only the end).
        """
        if not self.passes:
            return 1.0
        return self.written / self.passes

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


#: What a decoder returns: a generator of one :class:`Update` per target pass, whose return value
#: is the finished :class:`Generation`.
Passes = Generator[Update, None, "Generation"]


def generation_of(updates: Sequence[Update], *, prompt, draft: str, k: int, temperature: float,
                  top_p: float, stopped: str, text: str | None = None) -> Generation:
    """The one place a :class:`Generation` is built: from a run's updates, in order.

    A finished run passes its decoded ``text`` and why it stopped; a run so far (a page's
    snapshot) passes ``stopped="running"`` and gets its text joined from the tokens' texts.

    Examples
    --------
    >>> generation_of([], prompt=(1, 2), draft="none", k=0, temperature=0.0, top_p=1.0,
    ...               stopped="cancelled").tokens
    ()
    """
    ups = list(updates)
    decode = [u for u in ups if u.round > 0]
    events = Events.of([e for u in ups for e in u.events.records()])
    return Generation(
        prompt=tuple(int(t) for t in prompt), tokens=tuple(t for u in ups for t in u.tokens),
        text="".join(t for u in ups for t in u.texts) if text is None else text,
        marks=tuple(m for u in ups for m in u.marks), events=events, draft=draft, k=k,
        temperature=temperature, top_p=top_p,
        prefill_ms=sum(u.turn_ms for u in ups if u.round == 0),
        wall_ms=ups[-1].elapsed_ms if ups else 0.0, passes=len(decode),
        draft_ms=float(sum(u.draft_ms for u in decode)),
        proposed=sum(len(u.proposed) for u in decode),
        accepted=sum(u.n_accepted for u in decode), rejected=sum(bool(u.missed) for u in decode),
        accept_at=Acceptance.rate_by_position([u.judged for u in decode],
                                              [u.n_accepted for u in decode], k),
        stopped=stopped,
        drafted_by=tuple(u.drafted_by for u in decode) if any(u.drafted_by for u in decode) else ())


def finish(passes: Generator, progress: Callable | None = None):
    """Drive a decoder (or a race) to its end: ``progress(item)`` after each item it yields; return
    what it returns (the :class:`Generation`)."""
    while True:
        try:
            item = next(passes)
        except StopIteration as stop:
            return stop.value
        if progress is not None:
            progress(item)


class RunClock:
    """A run's own clock: the time it works, in ms since it started.

    A decoder pauses it while it is suspended at a ``yield`` (another run may be taking its turn)
    and resumes it when asked for the next pass, so what it reads is this run's time alone. The
    time since the start on ``wall`` (:meth:`wall_s`; ``clock`` itself if not given), pauses
    included, is what a time budget counts. The clock starts paused: a run created beside another
    does not count the other's first pass.
    """

    def __init__(self, clock: Clock = time.perf_counter, wall: Clock | None = None) -> None:
        self.read = clock
        self.t0 = clock()
        self._wall = wall or clock
        self._wall0 = self._wall()
        self._paused = 0.0
        self._since: float | None = self.t0

    def ms(self, t: float | None = None) -> float:
        """Working time at reading ``t`` of the clock (now, if None), in ms."""
        t = self.read() if t is None else t
        return (t - self.t0 - self._paused) * 1e3

    def wall_s(self) -> float:
        return self._wall() - self._wall0

    def pause(self) -> None:
        self._since = self.read()

    def resume(self) -> None:
        if self._since is not None:
            self._paused += self.read() - self._since
            self._since = None


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
    """One run's bookkeeping, shared by every decoder: its clock, output, events, stopping, and
    the updates it yields (from which :meth:`result` builds its :class:`Generation`)."""

    def __init__(self, model, ids, *, max_new, temperature, top_p, rng, cancel, max_seconds,
                 draft_name, k, clock: Clock = time.perf_counter, wall: Clock | None = None):
        self.model, self.tok = model, model.tokenizer
        self.temperature, self.top_p = temperature, top_p
        self.rng = _v.generator(rng)
        self.cancel, self.max_seconds = cancel, max_seconds
        self.max_new = max_new
        self.draft_name, self.k = draft_name, k
        self.clock = RunClock(clock, wall)
        self.ctx = np.empty(ids.size + max_new + k + 1, np.int64)  # prompt + output, one buffer
        self.ctx[:ids.size] = ids
        self.n_prompt = ids.size
        self.out: list[int] = []
        self.events: list[Event] = []
        self.updates: list[Update] = []
        self.stopped = "budget"
        self.passes = 0

    def now(self) -> float:
        """A reading of the run's clock (seconds; :meth:`ms` turns it into the run's own ms)."""
        return self.clock.read()

    def ms(self, t: float) -> float:
        return self.clock.ms(t)

    def context(self) -> np.ndarray:
        return self.ctx[:self.n_prompt + len(self.out)]

    def pick(self, logits: np.ndarray) -> int:
        if self.temperature == 0.0:
            return int(np.argmax(logits))
        return sampling.draw(sampling.probabilities(logits, self.temperature, self.top_p), self.rng)

    @property
    def ended(self) -> bool:
        return self.stopped == "eos"

    def should_stop(self) -> bool:
        if self.ended:
            return True
        if self.cancel is not None and self.cancel.is_set():
            self.stopped = "cancelled"
        elif self.max_seconds is not None and self.clock.wall_s() >= self.max_seconds:
            self.stopped = "time"
        elif len(self.out) >= self.max_new:
            self.stopped = "budget"
        else:
            return False
        return True

    def emit(self, rnd: int, kind: str, new: list[int], marks: list[str], *, pass_ms: float,
             positions: int, draft_ms: float = 0.0, proposed=(), n_accepted=0, judged=0,
             missed=False, first_event=0, tree=None, drafted_by: str = "") -> Update:
        """Append tokens (stopping at end-of-sequence) and record the pass's :class:`Update`.

        Guesses at or past the end count as nothing: where the round accepted a guess of the end
        itself, only the guesses before it count as judged and accepted (the round ended at the
        end of the reply, not on a miss)."""
        eos = self.tok.eos_id
        if eos in new:
            cut = new.index(eos)
            new, marks = new[:cut], marks[:cut]
            self.stopped = "eos"
            if cut < n_accepted:
                n_accepted, judged, missed = cut, cut, False
        start = len(self.out)
        self.ctx[self.n_prompt + start:self.n_prompt + start + len(new)] = new
        self.out.extend(new)
        text = self.tok.token_text
        elapsed = self.clock.ms()
        update = Update(
            round=rnd, kind=kind, tokens=tuple(new), texts=tuple(text(t) for t in new),
            marks=tuple(marks), proposed=tuple(int(t) for t in proposed),
            proposed_texts=tuple(text(t) for t in proposed), n_accepted=n_accepted,
            judged=judged, missed=bool(missed), total_tokens=len(self.out), elapsed_ms=elapsed,
            turn_ms=elapsed - (self.updates[-1].elapsed_ms if self.updates else 0.0),
            pass_ms=pass_ms, draft_ms=draft_ms, positions=positions,
            events=Events.of(self.events[first_event:]), tree=tree, drafted_by=drafted_by)
        self.updates.append(update)
        return update

    def drive(self, first: Callable[[], Update], step: Callable[[], Update]) -> Passes:
        """Yield ``first()``'s update (the prompt's pass), then ``step()``'s until the run stops;
        return the :class:`Generation`. The clock runs only inside ``next()``."""
        self.clock.resume()
        make = first
        while not self.should_stop():
            update = make()
            make = step
            self.clock.pause()
            yield update
            self.clock.resume()
        self.clock.pause()
        return self.result()

    def prefill(self, cache, observer: Observes | None = None) -> Update:
        """The prompt's pass; ``observer`` (a proposer that reads them) gets its hidden states."""
        t = self.now()
        fw = self.model.forward(self.context(), cache, logits="last", capture=captures(observer))
        if observer is not None:
            observer.observe(*fw.features())
        tok = self.pick(fw.logits[-1])
        t1 = self.now()
        first = len(self.events)
        self.events.append(Event("big", "generate", 0, 0, self.tok.token_text(tok), self.ms(t),
                                 self.ms(t1)))
        return self.emit(0, "generate", [tok], ["generate"], pass_ms=(t1 - t) * 1e3,
                         positions=self.n_prompt, first_event=first)

    def result(self) -> "Generation":
        return generation_of(self.updates, prompt=self.ctx[:self.n_prompt], draft=self.draft_name,
                             k=self.k, temperature=self.temperature, top_p=self.top_p,
                             stopped=self.stopped, text=self.tok.decode(self.out))


def generate_passes(model, prompt: Sequence[int], *, max_new: int = 64, temperature: float = 0.0,
                    top_p: float = 1.0, rng=None, cancel=None, max_seconds: float | None = None,
                    clock: Clock = time.perf_counter, wall: Clock | None = None) -> Passes:
    """Plain decoding, pass by pass: the prefill writes the first token, then one pass per token.

    Arguments are checked when it is called (a ``ValueError`` comes at once); the passes run
    one per ``next()``.

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
    cancel : threading.Event, optional
        Checked before every pass; when set the run stops and returns what it has.
    max_seconds : float, optional
        Wall-time budget from this call, checked before every pass.
    clock : callable
        Seconds the passes are timed with (``time.perf_counter``); a test passes its own.
    wall : callable, optional
        Seconds the time budget counts (``clock`` itself if not given).

    Returns
    -------
    generator
        Yields an :class:`Update` per pass; returns the :class:`Generation`.

    Examples
    --------
    >>> run = generate_passes(m, m.tokenizer.chat("Hi"), max_new=4)        # doctest: +SKIP
    >>> [u.round for u in run]                                              # doctest: +SKIP
    [0, 1, 2, 3]
    """
    ids, max_new, temperature, top_p, max_seconds = check_run(
        model, prompt, max_new=max_new, temperature=temperature, top_p=top_p,
        max_seconds=max_seconds, extra=0)
    run = RunLog(model, ids, max_new=max_new, temperature=temperature, top_p=top_p, rng=rng,
                 cancel=cancel, max_seconds=max_seconds, draft_name="none", k=0, clock=clock,
                 wall=wall)
    cache = model.new_cache(capacity=ids.size + max_new + 1)
    return run.drive(lambda: run.prefill(cache), lambda: plain_step(run, cache))


def generate(model, prompt: Sequence[int], *, progress: Callable[[Update], None] | None = None,
             **kwargs) -> Generation:
    """:func:`generate_passes` driven to its end; ``progress(update)`` after every pass.

    Returns
    -------
    Generation
    """
    return finish(generate_passes(model, prompt, **kwargs), progress)


def plain_step(run: RunLog, cache) -> Update:
    """One target pass that writes one token."""
    rnd = run.passes + 1
    t = run.now()
    logits = run.model.forward([run.out[-1]], cache, logits="last").logits[-1]
    tok = run.pick(logits)
    t1 = run.now()
    run.passes += 1
    first = len(run.events)
    run.events.append(Event("big", "generate", rnd, len(run.out), run.tok.token_text(tok),
                            run.ms(t), run.ms(t1)))
    return run.emit(rnd, "generate", [tok], ["generate"], pass_ms=(t1 - t) * 1e3, positions=1,
                    first_event=first)


def speculate_passes(model, prompt: Sequence[int], draft, k: int, *, max_new: int = 64,
                     temperature: float = 0.0, top_p: float = 1.0, rng=None, cancel=None,
                     max_seconds: float | None = None, clock: Clock = time.perf_counter,
                     wall: Clock | None = None) -> Passes:
    """Speculative decoding, pass by pass: ``draft`` proposes up to ``k`` tokens, one target pass
    checks them.

    Parameters are those of :func:`generate_passes`, plus:

    draft : Draft
        Any :class:`.drafts.Draft` (prompt lookup, early exit, the n-gram table, the draft head).
    k : int
        Most tokens drafted per round, in [1, 16]. Near the budget the draft is asked for fewer,
        so the output never exceeds ``max_new``.

    Returns
    -------
    generator
        Yields an :class:`Update` per target pass; returns the :class:`Generation`.
    """
    k = _v.integer("k", k, 1, LM_K_MAX)
    proposer = draft.begin(model)
    merges = merges_chains(proposer, temperature)
    ids, max_new, temperature, top_p, max_seconds = check_run(
        model, prompt, max_new=max_new, temperature=temperature, top_p=top_p,
        max_seconds=max_seconds, extra=(2 * k if merges else k) + 1)
    run = RunLog(model, ids, max_new=max_new, temperature=temperature, top_p=top_p, rng=rng,
                 cancel=cancel, max_seconds=max_seconds, draft_name=str(draft.name), k=k,
                 clock=clock, wall=wall)
    cache = model.new_cache(capacity=ids.size + max_new + (2 * k if merges else k) + 2)
    observer = proposer if isinstance(proposer, Observes) else None
    if merges:  # one verify pass for two chains: a tree of at most 2k nodes, k deep
        from .tree import tree_round

        return run.drive(lambda: run.prefill(cache, observer),
                         lambda: tree_round(run, cache, proposer, observer, shape="spine", width=1,
                                            depth=k))
    return run.drive(lambda: run.prefill(cache, observer),
                     lambda: speculative_round(run, cache, proposer, observer))


def merges_chains(proposer, temperature: float) -> bool:
    """Whether ``proposer`` drafts its greedy rounds as one tree of several chains (the hybrid's
    ``merges``): its rounds are then verified as a token tree, one pass each."""
    return bool(getattr(proposer, "merges", False)) and float(temperature) == 0.0


def speculate(model, prompt: Sequence[int], draft, k: int, *,
              progress: Callable[[Update], None] | None = None, **kwargs) -> Generation:
    """:func:`speculate_passes` driven to its end; ``progress(update)`` after every pass.

    Returns
    -------
    Generation
    """
    return finish(speculate_passes(model, prompt, draft, k, **kwargs), progress)


def captures(observer: Observes | None) -> tuple:
    """The blocks whose residual streams a target pass keeps for ``observer`` (none without one)."""
    return () if observer is None else tuple(observer.capture)


def speculative_round(run: RunLog, cache, proposer, observer: Observes | None) -> Update:
    """Draft -> verify -> judge -> record, once."""
    rnd, first, pos0 = run.passes + 1, len(run.events), len(run.out)
    prop, draft_ms = draft_step(run, proposer, min(run.k, run.max_new - pos0 - 1), rnd)
    drafts = [int(x) for x in prop.tokens]
    v0 = run.now()
    past = cache.length
    fw = run.model.forward([run.out[-1], *drafts], cache, logits="all", capture=captures(observer))
    a, last = judge_pass(run, fw.logits, drafts, prop.p_draft)
    cache.rollback(past + 1 + a)
    v1 = run.now()
    run.passes += 1
    if observer is not None:
        observer.observe(*fw.features(slice(0, 1 + a)))
    mark = record_verdict(run, rnd, pos0, drafts, accepted=a, last=last,
                          span=(run.ms(v0), run.ms(v1)))
    return run.emit(rnd, "verify" if drafts else "generate", drafts[:a] + [last],
                    ["accepted"] * a + [mark], pass_ms=(v1 - v0) * 1e3, positions=1 + len(drafts),
                    draft_ms=draft_ms, proposed=drafts, n_accepted=a, judged=len(drafts),
                    missed=a < len(drafts), first_event=first, drafted_by=drafted_by(proposer, drafts))


def drafted_by(proposer, guesses) -> str:
    """Where a round's guesses came from (a proposer's ``last_source``), or "" without guesses."""
    return str(getattr(proposer, "last_source", "")) if len(guesses) else ""


def draft_step(run: RunLog, proposer, d_max: int, rnd: int) -> tuple[Proposal, float]:
    """Ask the draft for up to ``d_max`` tokens; log one event per token. Returns the proposal
    and the draft's time (ms).

    A proposal's ``stamps`` are ``time.perf_counter()`` readings; each token's event ends where
    its stamp falls after the call began, kept inside the call's span on the run's clock."""
    t, p0 = run.now(), time.perf_counter()
    prop: Proposal = EMPTY
    if d_max > 0:
        prop = proposer.propose(run.context(), d_max, temperature=run.temperature,
                                top_p=run.top_p, rng=run.rng)
        prop = prop.first(d_max)
    t1 = run.now()
    start, end = run.ms(t), run.ms(t1)
    prev = start
    for i, x in enumerate(prop.tokens.tolist()):
        at = end if prop.stamps is None else min(max(start + (prop.stamps[i] - p0) * 1e3, prev), end)
        run.events.append(Event("draft", "draft", rnd, len(run.out) + i, run.tok.token_text(x),
                                prev, at))
        prev = at
    return prop, end - start


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
    return "correction" if a < d else "bonus"


def judge(p_big, drafts, p_draft, rng) -> tuple[int, int]:
    """Speculative sampling over one verify pass: (accepted count, the token that follows).

    The rule is the simulation's own (:func:`sim.sampling.verify_chain`): each drafted ``x`` is kept
    with probability ``min(1, p_big(x) / p_draft(x))`` (uniforms drawn up front); the first
    rejection is replaced by a draw from ``norm(max(0, p_big - p_draft))``, and if all ``d`` are
    kept one more token comes from ``p_big`` at the last position. ``p_draft`` None means a
    one-hot draft on each drafted token.
    """
    return rule.verify_chain(p_big, drafts, p_draft, rng)
