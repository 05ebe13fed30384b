"""One prompt, two runs: speculative and plain decoding of the same prompt, raced fairly.

:func:`compare` is what a page's worker runs. It writes the prompt's reply speculatively (the
draft guesses, one target pass checks the guesses) and the plain way (one target pass per
token) at the same time, taking turns pass by pass in one process (:func:`.race.race`), so a
change of the machine's load hits both runs alike. It returns a :class:`Comparison` of the two:
their texts, marks and measured events (each run's clock as if it had run alone), every turn's
time, and the fair speedup with its interval (:attr:`Comparison.fair`). While it runs it
reports a :class:`Live` object, whose snapshot is a :class:`Comparison` of what each run has
written so far. The drafts it takes are those of :mod:`.registry`.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ..sim.events import Event, Events
from ..sim.relay import RelayResult
from .decode import Generation, Update, draft_cost, finish, generation_of, speedup
from .race import FairSpeedup, Turns, fair_speedup, race_passes
from .registry import draft_key, make_draft

#: Phases of a comparison: both runs writing, or done.
PHASES = ("running", "done")
#: Seed of the bootstrap behind every interval shown (the same run gives the same interval).
BOOTSTRAP_SEED = 7


@dataclass(frozen=True, eq=False)
class Comparison:
    """A speculative run and a plain run of the same prompt, finished or so far.

    Attributes
    ----------
    phase : str
        ``"running"`` (both runs are writing, taking turns) or ``"done"``.
    spec, plain : Generation or None
        The two runs, each clock as if it had run alone. While a run is writing it is its part
        so far (``stopped == "running"``, ``text`` joined from the tokens' texts); None if the
        run never started.
    turns : Turns or None
        Every turn of the race, in order (None for a run so far, and for runs recorded before
        the race).

    Examples
    --------
    >>> m = get_model()                                                     # doctest: +SKIP
    >>> r = compare(m, m.tokenizer.chat("Hi"), "lookup", 4, max_new=16)     # doctest: +SKIP
    >>> r.phase, r.spec.tokens == r.plain.tokens                           # doctest: +SKIP
    ('done', True)
    """

    phase: str
    spec: Generation | None
    plain: Generation | None
    turns: Turns | None = None

    @property
    def finished(self) -> bool:
        return self.phase == "done"

    @cached_property
    def fair(self) -> FairSpeedup | None:
        """The race's speedup with its bootstrap interval and work-based figure (None without turns)."""
        if self.turns is None or not self.finished:
            return None
        return fair_speedup(self.turns, rng=BOOTSTRAP_SEED,
                            ended=self.spec is not None and self.spec.stopped == "eos")

    @property
    def greedy(self) -> bool:
        run = self.spec or self.plain
        return run is None or run.temperature == 0.0

    @property
    def speedup(self) -> float:
        """Speculative over plain tokens per second (prompt pass excluded); NaN until both end.

        With turns, the race's figure (:attr:`fair`): plain time per token over speculative
        time per token, the same ratio as the two compacted clocks give.
        """
        if not self.finished or self.spec is None or self.plain is None:
            return math.nan
        if self.fair is not None:
            return self.fair.speedup
        return speedup(self.plain, self.spec)

    @property
    def step_ms(self) -> float:
        """The plain run's time per decode step (one target pass, one position)."""
        p = self.plain
        return p.decode_ms / p.passes if p is not None and p.passes else math.nan

    @property
    def draft_cost(self) -> float:
        """Draft time per proposed token over a plain decode step (NaN if nothing was proposed)."""
        if self.spec is None or not self.spec.proposed or not math.isfinite(self.step_ms):
            return math.nan
        return draft_cost(self.plain, self.spec)

    @property
    def verify_ms(self) -> float:
        """Mean time of the speculative run's verify passes (NaN if it had none)."""
        return _mean_duration(self.spec, "verify")

    @property
    def verify_cost(self) -> float:
        """A verify pass of this run over a plain decode step: what checking the guesses cost."""
        return self.verify_ms / self.step_ms

    @property
    def positions_per_verify(self) -> float:
        """Mean positions a verify pass scored: the pending token plus the drafts it checked."""
        s = self.spec
        if s is None:
            return math.nan
        n = int(np.sum(s.events.kind == "verify"))
        return 1.0 + s.proposed / n if n else math.nan


#: Event kinds that write an output token (one each, at its position).
WRITTEN = ("generate", "accepted", "correction", "bonus")


def token_texts(run: Generation) -> list[str]:
    """The text of each output token of ``run``, read from its events (no tokenizer needed)."""
    out = [""] * len(run.tokens)
    ev = run.events.of_kind(*WRITTEN)
    for pos, text in zip(ev.token.tolist(), ev.text.tolist()):
        if 0 <= pos < len(out):  # a token past the end is the end-of-sequence the run dropped
            out[pos] = text
    return out


#: The events of a verify round that Episode 2's relay draws.
VERIFY_KINDS = ("draft", "verify", "accepted", "rejected", "discarded", "correction", "bonus")


def as_relay(run: Generation) -> RelayResult:
    """The verify rounds of a real run as Episode 2's relay result, rounds numbered from 0.

    Passes without guesses (the prompt's, and any where the draft had nothing to offer) are
    left out: Episode 7's view draws them as plain passes.
    """
    ev = run.events
    verify = ev.of_kind("verify")
    order = verify.round.tolist()
    renumber = {r: i for i, r in enumerate(order)}
    sel = ev.where(np.isin(ev.round, order) & np.isin(ev.kind, VERIFY_KINDS))
    events = Events(lane=sel.lane, kind=sel.kind, round=np.array([renumber[r] for r in sel.round.tolist()],
                                                                  dtype=np.int64),
                    token=sel.token, text=sel.text, start_ms=sel.start_ms, end_ms=sel.end_ms)
    n = len(order)
    drafted, accepted, made = (np.zeros(n, np.int64) for _ in range(3))
    start = verify.start_ms.copy()
    for kind, rnd, s in zip(events.kind.tolist(), events.round.tolist(), events.start_ms.tolist()):
        if kind == "draft":
            drafted[rnd] += 1
            start[rnd] = min(start[rnd], s)
        elif kind == "accepted":
            accepted[rnd] += 1
            made[rnd] += 1
        elif kind in ("correction", "bonus"):
            made[rnd] += 1
    rounds = dict(start_ms=start, end_ms=verify.end_ms.copy(), drafted=drafted, accepted=accepted,
                  tokens=made, first_token=verify.token.copy())
    return RelayResult(output=tuple(token_texts(run)), events=events, rounds=rounds,
                       wall_ms=run.wall_ms, baseline_ms=math.nan)


def _mean_duration(run: Generation | None, kind: str) -> float:
    if run is None:
        return math.nan
    ev = run.events.of_kind(kind)
    ev = ev.where(ev.round > 0)  # the prompt's pass is not a decode step
    return float(np.mean(ev.end_ms - ev.start_ms)) if len(ev) else math.nan


class _Recorder:
    """Collects one run's updates; :meth:`so_far` is the run as far as it got."""

    def __init__(self, prompt: Sequence[int], draft: str, k: int, temperature: float,
                 top_p: float) -> None:
        self.prompt = tuple(int(t) for t in prompt)
        self.draft, self.k = draft, k
        self.temperature, self.top_p = temperature, top_p
        self.updates: list[Update] = []

    def __call__(self, update: Update) -> None:
        self.updates.append(update)

    def so_far(self, ups: list[Update] | None = None) -> Generation:
        return generation_of(self.updates if ups is None else ups, prompt=self.prompt,
                             draft=self.draft, k=self.k, temperature=self.temperature,
                             top_p=self.top_p, stopped="running")


class Live:
    """A comparison while it runs: the worker appends each pass's update, pollers take snapshots.

    The worker's side costs an append per pass, so reporting does not slow the timed runs; a
    snapshot is built by whoever asks (a page's poll) and kept until the next update, so many
    visitors polling one shared run build it once per pass between them.
    """

    def __init__(self, spec: _Recorder, plain: _Recorder) -> None:
        self._lock = threading.Lock()
        self._spec, self._plain = spec, plain
        self._cached: tuple[tuple, Comparison] | None = None

    def add(self, run: str, update: Update) -> None:
        """Record one pass of ``run`` (``"spec"`` or ``"plain"``)."""
        with self._lock:
            (self._spec if run == "spec" else self._plain)(update)

    def snapshot(self) -> Comparison:
        """The runs so far, as a :class:`Comparison` in phase ``"running"``."""
        with self._lock:
            key = (len(self._spec.updates), len(self._plain.updates))
            if self._cached is not None and self._cached[0] == key:
                return self._cached[1]
            spec_ups, plain_ups = list(self._spec.updates), list(self._plain.updates)
        snap = Comparison("running", self._spec.so_far(spec_ups), self._plain.so_far(plain_ups))
        with self._lock:
            self._cached = (key, snap)
        return snap


def compare(model, prompt: Sequence[int], draft: str, k: int, *, max_new: int,
            temperature: float = 0.0, top_p: float = 1.0, seed: int | None = None,
            cancel=None, max_seconds: float | None = None,
            report: Callable[[Live], None] | None = None,
            stream: Callable[[str, object], None] | None = None) -> Comparison:
    """Write the reply to ``prompt`` speculatively and plainly, taking turns, and compare the runs.

    Parameters
    ----------
    model : Model
    prompt : sequence of int
        Prompt ids (e.g. ``model.tokenizer.chat(text)``).
    draft : str
        A draft's key (:data:`.registry.DRAFTS`; an older name finds it too).
    k : int
        Most tokens drafted per round.
    max_new : int
        Token budget of each run.
    temperature, top_p : float
        0 for greedy decoding; else speculative sampling against plain sampling.
    seed : int, optional
        Seeds the two runs' independent random streams (sampling only).
    cancel : threading.Event, optional
        Set to stop; both runs return what they have at their next pass.
    max_seconds : float, optional
        Time budget of the race (both runs share the same span of time). A run that hits it
        stops with ``stopped == "time"``.
    report : callable, optional
        Called with the run's :class:`Live` before the first pass and after every pass; its
        :meth:`Live.snapshot` is the comparison so far.
    stream : callable, optional
        Called as the runs go with what another process needs to mirror them (see
        :class:`Mirror`): ``("spec", update)`` or ``("plain", update)`` after each pass.

    Returns
    -------
    Comparison
        ``phase == "done"``, with the race's :attr:`Comparison.turns`.
    """
    draft = draft_key(draft)  # validates the name before any work
    model.tokenizer.token_text(0)  # the token text table is built once, outside the timed runs
    live = Live(_Recorder(prompt, draft, k, temperature, top_p),
                _Recorder(prompt, "none", 0, temperature, top_p))

    def on_turn(item: tuple[str, Update]) -> None:
        live.add(*item)
        if stream is not None:
            stream(*item)
        if report is not None:
            report(live)

    passes = race_passes(model, prompt, make_draft(draft), k, max_new=max_new,
                         temperature=temperature, top_p=top_p, rng=np.random.SeedSequence(seed),
                         cancel=cancel, max_seconds=max_seconds)
    if report is not None:
        report(live)
    r = finish(passes, on_turn)
    return Comparison("done", r.spec, r.plain, r.turns)


class Mirror:
    """A comparison made in another process, rebuilt here from what its ``stream`` sent.

    :meth:`feed` takes the ``(kind, value)`` pairs of :func:`compare`'s ``stream`` in order;
    :attr:`live` is then a :class:`Live` of the runs so far, as if they ran in this process.
    """

    def __init__(self, prompt: Sequence[int], draft: str, k: int, temperature: float,
                 top_p: float = 1.0) -> None:
        self.live = Live(_Recorder(prompt, draft_key(draft), k, temperature, top_p),
                         _Recorder(prompt, "none", 0, temperature, top_p))

    def feed(self, kind: str, value) -> None:
        if kind not in ("spec", "plain"):
            raise ValueError(f"unexpected stream item {kind!r}")
        self.live.add(kind, value)


# --- runs as JSON (recorded runs ship as an asset) ------------------------------------------


def generation_to_json(g: Generation) -> dict:
    """A run as plain JSON types (events as columns; NaN as null)."""
    out = {f: getattr(g, f) for f in ("prompt", "tokens", "text", "marks", "draft", "k", "temperature",
                                      "top_p", "prefill_ms", "wall_ms", "passes", "draft_ms",
                                      "proposed", "accepted", "rejected", "stopped")}
    out["prompt"], out["tokens"], out["marks"] = list(g.prompt), list(g.tokens), list(g.marks)
    out["accept_at"] = [None if math.isnan(a) else float(a) for a in g.accept_at]
    out["events"] = g.events.to_dict()
    if g.drafted_by:
        out["drafted_by"] = list(g.drafted_by)
    return out


def generation_from_json(d: dict) -> Generation:
    """The inverse of :func:`generation_to_json`."""
    ev = d["events"]
    events = Events.of([Event(*row) for row in zip(*(ev[c] for c in Events.columns()))])
    fields = {k: v for k, v in d.items() if k not in ("events", "accept_at")}
    fields.update(prompt=tuple(d["prompt"]), tokens=tuple(d["tokens"]), marks=tuple(d["marks"]),
                  draft=d["draft"] if d["draft"] == "none" else draft_key(d["draft"]),
                  drafted_by=tuple(d.get("drafted_by", ())))
    return Generation(**fields, events=events,
                      accept_at=np.array([np.nan if a is None else a for a in d["accept_at"]], float))


def comparison_to_json(c: Comparison) -> dict:
    """A finished comparison as plain JSON types."""
    out = {"phase": c.phase, "spec": generation_to_json(c.spec), "plain": generation_to_json(c.plain)}
    if c.turns is not None:
        out["turns"] = c.turns.to_dict()
    return out


def comparison_from_json(d: dict) -> Comparison:
    """The inverse of :func:`comparison_to_json`."""
    turns = Turns.from_dict(d["turns"]) if "turns" in d else None
    return Comparison(d["phase"], generation_from_json(d["spec"]), generation_from_json(d["plain"]),
                      turns)
