"""State of Episode 7: a real model speculates, live.

The visitor picks a task (or types a prompt), a draft, k, a token budget and greedy or sampling
decoding, and presses Run. The run goes to the process's one worker queue
(:func:`serve.jobs.shared_queue`): a speculative run and a plain run of the same prompt, taking
turns pass by pass so that both meet the same load (:func:`lm.compare.compare`, :mod:`lm.race`),
made in the worker's own model process
(:mod:`serve.model_process`), off the server's event loop and out of its interpreter lock. A task's run with given settings
is computed once per process and shared (its job has a key); a typed prompt runs for its visitor
alone.

This object holds the settings, the visitor's hold on the run, and what the page shows: the run
so far or finished, its place in line, and every sentence computed from its numbers. The view
calls :meth:`RealText.poll` while :attr:`RealText.active`, and :meth:`RealText.close` when the
session ends. The model is loaded by each worker's process on its first run, never here. No
Panel or Bokeh.
"""

from __future__ import annotations

import gzip
import json
import math
from dataclasses import dataclass
from functools import lru_cache

import param

from . import seed_param, unlocked
from .ep2 import Guarantee, check_guarantee
from ..serve import interface as jobs
from ..sim import theory
from .. import lm
from ..shipped import asset_path
from ..lm.compare import Comparison, comparison_from_json
from ..lm.prompts import PROMPTS, TASK_CHECKS

#: The tasks, in the order the page offers them: key of lm.prompts.PROMPTS -> label. Each is a
#: task SmolLM2-135M really does (its greedy reply is checked: lm.prompts.TASK_CHECKS).
TASKS = {
    "repeat": "Copy: repeat a sentence exactly",
    "json-person": "Copy: a person's details as JSON",
    "where": "Extraction: where Jonas Berg works",
    "sum-function": "Fresh writing: a Python sum function",
    "sky": "Fresh writing: why the sky is blue",
}
#: Why prompt lookup's acceptance differs between the two kinds of task (shown with the prompt).
COPY_LINE = ("A copy task: the reply repeats words of the prompt, and prompt lookup guesses by "
             "copying what followed the same words in the prompt, so many of its guesses are right.")
FRESH_LINE = ("Fresh writing: the reply’s words are not in the prompt, so prompt lookup has little to "
              "copy and few of its guesses are right.")
CUSTOM = "custom"
#: The drafts the page offers: key of lm.compare.DRAFTS -> label.
DRAFT_LABELS = {
    "lookup": "Prompt lookup (copies from the prompt)",
    "learned": "Learned n-gram (trained on Python source)",
    "head": "Draft head (trained to imitate the model)",
    "early-exit": "Early exit (the model's first 6 of 30 blocks, untrained)",
}
DECODINGS = {"Greedy": "greedy", "Sampling": "sampling"}


def default_draft(task: str) -> str:
    """The draft a task starts with: prompt lookup where the reply copies the prompt, else the
    draft head (it imitates the model, so it needs nothing to copy)."""
    copy = TASK_CHECKS.get(task, (None, False))[1]
    return "lookup" if copy else "head"

PROMPT_MAX_CHARS = 500
#: The longest draft Episode 7 offers (the real decoders take up to lm.decode.LM_K_MAX).
REAL_K_SLIDER_MAX = 8
MAX_NEW_MAX = 128
MAX_NEW_DEFAULT = 64
#: A run (both decodings, and the model's first load) stops after this long.
JOB_BUDGET_S = 120.0
#: What a visitor's run is doing, as the page says it.
STATUSES = ("idle", "queued", "running", "done", "cancelled", "failed", "refused", "recorded")
RECORDED = "lm/ep7_recorded.json.gz"
#: What the page says once a run is cancelled (what both runs wrote stays on the page).
CANCELLED_LINE = ("Cancelled: both runs stop at their next pass. What they wrote so far is shown; "
                  "no speedup is measured from a cancelled run.")


@dataclass(frozen=True)
class Settings:
    """What one Run asks for. ``task`` is a key of :data:`TASKS` or :data:`CUSTOM`."""

    task: str
    prompt: str
    draft: str
    k: int
    max_new: int
    temperature: float
    seed: int

    @property
    def greedy(self) -> bool:
        return self.temperature == 0.0

    @property
    def key(self) -> tuple | None:
        """The shared job's key: a task's run is computed once per process; a typed prompt never shared."""
        if self.task == CUSTOM:
            return None
        return ("ep7", self.task, self.draft, self.k, self.max_new, self.temperature,
                None if self.greedy else self.seed)

    def describe(self) -> str:
        """The settings in a line (plain text; escape it for HTML)."""
        task = "your own prompt" if self.task == CUSTOM else TASKS[self.task].split(":")[0].lower()
        mode = "greedy" if self.greedy else f"sampling at temperature {self.temperature:g}, seed {self.seed}"
        return (f"{task} · {DRAFT_LABELS[self.draft].split(' (')[0].lower()} · k = {self.k} · "
                f"up to {self.max_new} new tokens · {mode}")


def kind_line(task: str) -> str:
    """Whether a task is a copy task or fresh writing, and what that does to prompt lookup."""
    if task not in TASK_CHECKS:
        return ""
    return COPY_LINE if TASK_CHECKS[task][1] else FRESH_LINE


def check_prompt(text: str | None) -> str:
    """A typed prompt as it will be sent, or ValueError saying why not."""
    text = "" if text is None else str(text)
    if len(text) > PROMPT_MAX_CHARS:
        raise ValueError(f"Your prompt has {len(text):,} characters; at most {PROMPT_MAX_CHARS} fit.")
    if not text.strip():
        raise ValueError("Type a prompt first (at most 500 characters).")
    return text


class RealText(param.Parameterized):
    """A real model's speculative run against its plain run, for one visitor.

    ``queue`` defaults to the process's shared queue and ``work`` to :func:`serve.interface.generation_work` (tests
    pass their own queue and a function that needs no model).
    """

    task = param.Selector(
        default="repeat", objects={**{v: k for k, v in TASKS.items()}, "Your own prompt": CUSTOM},
        label="Task", doc="A prepared task (each one computed once on this server and shared), "
                          "or your own prompt (run live, for you alone).")
    prompt = param.String(
        default="", label=f"Your own prompt (at most {PROMPT_MAX_CHARS} characters)",
        doc="What the model is asked when the task is your own prompt; shown as plain text.")
    draft = param.Selector(
        default="lookup", objects={v: k for k, v in DRAFT_LABELS.items()}, label="Draft",
        doc="Who guesses the next tokens for the model to check.")
    k = param.Integer(
        default=4, bounds=(1, REAL_K_SLIDER_MAX), label="Draft length k",
        doc="Most tokens the draft guesses before one pass of the model checks them.")
    max_new = param.Integer(
        default=MAX_NEW_DEFAULT, bounds=(1, MAX_NEW_MAX), label="New tokens (at most)",
        doc="The token budget of each run; a run also ends when the model ends its reply.")
    decoding = param.Selector(
        default="greedy", objects=DECODINGS, label="Decoding",
        doc="Greedy: always the most likely token. Sampling: a random draw at the temperature.")
    temperature = param.Number(
        default=0.7, bounds=(0.1, 1.5), step=0.05, label="Temperature",
        doc="Sampling only: below 1 sharpens the model's probabilities, above 1 flattens them.")
    seed = seed_param(7, doc="Sampling only: the same seed and settings give the same draws.")

    status = param.Selector(default="idle", objects=list(STATUSES), constant=True,
                            doc="What the visitor's run is doing.")
    position = param.Integer(default=0, bounds=(0, None), constant=True,
                             doc="Place in line while queued (1 = next), else 0.")
    comparison = param.ClassSelector(class_=Comparison, default=None, allow_None=True, constant=True,
                                     doc="The run shown: so far while it runs, then finished.")
    shown = param.ClassSelector(class_=Settings, default=None, allow_None=True, constant=True,
                                doc="The settings of the run shown.")
    shared = param.Boolean(default=False, constant=True,
                           doc="True when the run shown was already computed for an earlier visitor.")
    message = param.String(default="", constant=True,
                           doc="A one-line message: why a run was refused, failed or stopped early.")

    def __init__(self, *, queue: jobs.JobQueue | None = None, work=jobs.generation_work, **params):
        if "draft" not in params:
            params["draft"] = default_draft(params.get("task", self.param.task.default))
        super().__init__(**params)
        self.param.watch(self._task_sets_its_draft, ["task", "draft"], onlychanged=False)
        self._queue = queue
        self._work = work
        self._handle: jobs.Handle | None = None
        self.line = None  # the queue as the last poll of a queued run saw it (a jobs.Place)

    def _task_sets_its_draft(self, *events) -> None:
        """A new task brings its default draft, unless the same change also set the draft (a
        link restoring both)."""
        names = {e.name for e in events}
        if "task" in names and "draft" not in names:
            self.draft = default_draft(self.task)

    # -- settings ----------------------------------------------------------------------------
    def settings(self) -> Settings:
        """The current controls as one run's settings (ValueError for a bad typed prompt)."""
        text = check_prompt(self.prompt) if self.task == CUSTOM else PROMPTS[self.task][1]
        greedy = self.decoding == "greedy"
        return Settings(task=self.task, prompt=text, draft=self.draft, k=int(self.k),
                        max_new=int(self.max_new),
                        temperature=0.0 if greedy else round(float(self.temperature), 4),
                        seed=int(self.seed))

    @property
    def queue(self) -> jobs.JobQueue:
        return self._queue if self._queue is not None else jobs.shared_queue()

    @property
    def active(self) -> bool:
        """True while this visitor's run is queued or running (the view polls meanwhile)."""
        return self._handle is not None

    def _set(self, **values) -> None:
        with unlocked(self):
            self.param.update(**values)

    # -- running -----------------------------------------------------------------------------
    def run(self) -> None:
        """Submit a run with the current settings (or show a recorded one without the model)."""
        if self.active:
            return
        try:
            settings = self.settings()
        except ValueError as exc:
            self._set(status="refused", message=str(exc))
            return
        if self._work is jobs.generation_work and not lm.is_installed():
            recorded = recorded_runs().get((settings.task, settings.draft))
            if recorded is None:
                self._set(status="refused", message=no_model_line(settings))
            else:
                self._set(status="recorded", comparison=recorded, shown=recorded_settings(settings),
                          shared=False, position=0, message=no_model_line(settings))
            return
        try:
            handle = self.queue.submit(self._work(settings), key=settings.key, budget_s=JOB_BUDGET_S,
                                       label=f"ep7 {settings.task} {settings.draft} k={settings.k}")
        except jobs.QueueFull:
            q = self.queue
            self._set(status="refused", position=0, message=full_line(
                q.waiting, q.workers, q.running_elapsed_s(), q.recent_run_s(),
                q.recent_run_s(crowded=True)))
            return
        self._handle = handle
        self._set(shown=settings, comparison=None, message="",
                  shared=handle.job.state == jobs.DONE)
        self.poll()

    def poll(self) -> bool:
        """Bring status, place in line and the run so far up to date; True while still active."""
        handle = self._handle
        if handle is None:
            return False
        job = handle.job
        place = job.place  # state, place in line and the queue's figures, read at one instant
        state = place.state
        if state == jobs.QUEUED:
            self.line = place
            self._set(status="queued", position=place.position)
            return True
        if state == jobs.RUNNING:
            progress = job.progress
            self._set(status="running", position=0, comparison=_snapshot(progress))
            return True
        self._handle = None
        if state == jobs.DONE:
            self._set(status="done", position=0, comparison=job.result,
                      message=stopped_line(job.result))
        elif state == jobs.CANCELLED:
            self._set(status="cancelled", position=0, comparison=_latest(job),
                      message=CANCELLED_LINE)
        else:
            self._set(status="failed", position=0, message=job.error or "The run failed.")
        return False

    def cancel(self) -> None:
        """Withdraw this visitor's run. A run nobody else holds stops at its next pass."""
        handle, self._handle = self._handle, None
        if handle is None:
            return
        handle.cancel()
        self._set(status="cancelled", position=0, comparison=_latest(handle.job),
                  message=CANCELLED_LINE)

    def close(self) -> None:
        """The visitor left (tab closed): cancel the run, if any."""
        self.cancel()

    # -- what the page says ------------------------------------------------------------------
    @property
    def guarantee(self) -> Guarantee | None:
        """Greedy runs compared token by token.

        While the plain run writes, and when a budget stopped it early, over the tokens it has
        written; once both ended normally, over the whole of both texts.
        """
        c = self.comparison
        if c is None or c.spec is None or c.plain is None or not c.greedy:
            return None
        spec, plain = c.spec.tokens, c.plain.tokens
        if not c.finished or c.plain.stopped in ("time", "cancelled"):
            n = min(len(spec), len(plain))
            spec, plain = spec[:n], plain[:n]
        return check_guarantee(spec, plain)


def _snapshot(progress) -> Comparison | None:
    """What a running job reported (a :class:`lm.compare.Live`), as a comparison so far."""
    take = getattr(progress, "snapshot", None)
    return take() if callable(take) else None


def _latest(job: jobs.Job) -> Comparison | None:
    """The job's result, or else what it had written when last reported."""
    return job.result if isinstance(job.result, Comparison) else _snapshot(job.progress)


# --- sentences computed from a run ----------------------------------------------------------


def ratio_words(speedup: float) -> str:
    """Speculative against plain, in words that agree with the number shown (two decimals)."""
    if not math.isfinite(speedup) or speedup <= 0:
        return "no speedup could be measured"
    shown = f"{speedup:.2f}"
    if shown == "1.00":
        return "as fast as plain decoding, to two decimals (1.00×)"
    if speedup > 1:
        return f"faster than plain decoding: {shown}× its tokens per second"
    return (f"slower than plain decoding: {shown}× its tokens per second "
            f"(plain decoding was {1 / speedup:.2f}× as fast)")


def cost_words(cost: float) -> str:
    """A draft cost c to three decimals, or "under 0.001" when it would round to 0.000."""
    return f"{cost:.3f}" if cost >= 0.0005 else "under 0.001"


def interval_words(f) -> str:
    """The bootstrap interval of a fair speedup, in words."""
    return (f"{f.level:.0%} interval {f.low:.2f}× to {f.high:.2f}× (bootstrap over "
            f"{_n(f.n_rounds, 'round')}, {f.n_resamples:,} resamples)")


def verdict(c: Comparison) -> str:
    """The run's headline: faster, slower or no measurable difference, from the fair interval."""
    f = c.fair
    if f is None:
        return f"On this run speculative decoding was {ratio_words(c.speedup)}."
    if f.verdict == "too few rounds":
        return (f"Too few rounds to measure a speedup: {_n(f.n_rounds, 'round')} "
                "(the interval needs at least two); run more new tokens.")
    shown = f"{f.speedup:.2f}×"
    if f.verdict == "faster":
        return f"Speculative decoding was faster: {shown} plain decoding’s speed, {interval_words(f)}."
    if f.verdict == "slower":
        return (f"Speculative decoding was slower: {shown} plain decoding’s speed, {interval_words(f)}; "
                f"plain decoding was {1 / f.speedup:.2f}× as fast.")
    return (f"No measurable difference: {shown} plain decoding’s speed, but its {interval_words(f)} "
            "includes 1.")


def work_words(c: Comparison) -> str:
    """The work-based figure: tokens per pass against this run's measured cost of a pass."""
    f = c.fair
    if f is None or not math.isfinite(f.work_speedup):
        return ""
    n = f.common_size
    cost = f.cost_of(n)
    return (f"By the work alone, what an idle machine would show: {f.tokens_per_pass:.2f} tokens "
            f"per pass, and a pass over {n} position{'' if n == 1 else 's'} cost {cost:.1f}× a plain "
            f"step in this run (medians of {_n(int(f.size_counts.max()), 'pass', 'passes')} and "
            f"{_n(int(c.plain.passes), 'step')}), so {f.work_speedup:.2f}×.")


def why(c: Comparison, k: int) -> str:
    """Where the time went: tokens per verify pass against what a pass and the guesses cost."""
    s = c.spec
    parts = []
    if s.proposed:
        judged = s.accepted + s.rejected
        parts.append(f"The model accepted {s.accepted} of the {judged} guesses it judged "
                     f"({s.acceptance_rate:.0%}), so each pass wrote {s.tokens_per_pass:.2f} tokens")
        if math.isfinite(c.verify_cost):
            parts.append(f"but a verify pass over up to {k + 1} positions cost {c.verify_cost:.1f}× a "
                         f"plain step on average ({c.verify_ms:,.0f} ms against {c.step_ms:,.0f} ms)")
        if math.isfinite(c.draft_cost):
            parts.append(f"and each guess cost {cost_words(c.draft_cost)} of a step to make "
                         f"({s.draft_ms_per_token:.2f} ms)")
        text = ", ".join(parts[:1]) + (", " + " ".join(parts[1:]) if len(parts) > 1 else "") + "."
    else:
        text = "The draft proposed nothing on this run, so every pass was a plain decode step."
    idle = sum(1 for r in set(s.events.round[(s.events.kind == "generate")].tolist()) if r > 0)
    if s.proposed and idle:
        text += (f" The draft had no guess at {idle} of the {s.passes} passes; those were plain "
                 "decode steps.")
    work = work_words(c)
    return text + (" " + work if work else "")


def map_words(c: Comparison, k: int) -> str | None:
    """Where Episode 5's theory puts this run, against what was measured (None: no q measured)."""
    q, cost = c.spec.acceptance_rate, c.draft_cost
    if not (math.isfinite(q) and math.isfinite(cost) and math.isfinite(c.speedup)):
        return None
    predicted = theory.expected_speedup(min(q, 1.0), k, min(cost, 1.0))
    c_text = f"c = {cost:.3f}" if cost >= 0.0005 else "c under 0.001"
    text = (f"Episode 5’s theory puts q = {q:.2f}, k = {k}, {c_text} at "
            f"{predicted:.2f}×. It counts a verify pass as one step, as on a GPU")
    if math.isfinite(c.verify_cost):
        text += f"; here a verify pass cost {c.verify_cost:.1f}× a step"
    return text + f", and this run measured {c.speedup:.2f}×."


def check_words(c: Comparison, g: Guarantee | None) -> tuple[str, str]:
    """The guarantee, as (verdict kind, sentence): kind is ``ok``, ``fail``, ``pending`` or ``info``."""
    if c.spec is None:
        return "pending", "The guarantee is checked once both runs have written."
    if not c.greedy:
        same = c.plain is not None and c.plain.tokens == c.spec.tokens
        if c.plain is None or not c.finished:
            return "pending", "Sampling: the plain run is a second draw, compared when it ends."
        return "info", ("Sampling: the two runs are two separate draws, so their texts "
                        + ("happen to be the same" if same else "differ")
                        + ". What speculative sampling guarantees is the distribution: every token "
                          "comes from the model’s own probabilities, whatever the draft guessed.")
    if g is None:
        return "pending", "The plain run checks the guarantee token by token once it starts."
    n = g.n_tokens
    if not g.ok:
        return "fail", (f"Mismatch: {g.matches} of {n} tokens match; the first difference is at "
                        f"token {g.first_mismatch + 1}.")
    if not c.finished:
        return "pending", f"Checking token by token: {n} of {len(c.spec.tokens)} tokens so far, all identical."
    if len(c.plain.tokens) < len(c.spec.tokens):
        return "ok", (f"Checked token by token: the plain run stopped after {n} of "
                      f"{len(c.spec.tokens)} tokens, and those {n} are identical.")
    return "ok", (f"Checked token by token: all {n} tokens are identical to what the model writes "
                  "alone, one pass per token.")


def stopped_line(c: Comparison | None) -> str:
    """Why a finished run ended early, if it did (empty otherwise)."""
    if c is None or c.spec is None:
        return ""
    if c.spec.stopped == "time" or (c.plain is not None and c.plain.stopped == "time"):
        return (f"The server’s time budget ({JOB_BUDGET_S:.0f} s for both runs) ran out: the runs "
                "stopped early, and the numbers are for what they wrote.")
    return ""


def estimated_wait_s(position: int, workers: int, running_elapsed_s, recent_run_s) -> float | None:
    """Seconds until a run at ``position`` in line starts, from the measured run times.

    Each run ahead is taken to last the median of ``recent_run_s`` (the last runs that finished
    on this server); a running one has that minus what it has already run (at least 0). The
    runs ahead go to whichever worker frees first. None when no run has finished yet.
    """
    if not recent_run_s or position < 1:
        return None
    typical = float(sorted(recent_run_s)[len(recent_run_s) // 2])
    free = sorted([max(typical - e, 0.0) for e in running_elapsed_s][:workers]
                  + [0.0] * max(workers - len(running_elapsed_s), 0))
    for _ in range(position - 1):
        free[0] += typical
        free.sort()
    return free[0]


def wait_words(position: int, workers: int, running_elapsed_s, recent_run_s,
               crowded_run_s=()) -> str:
    """The estimated wait in a sentence, with what it was computed from.

    A run behind a line will run with every worker busy, so the runs measured that way
    (``crowded_run_s``) are used when there are any: where runs contend for the memory, as on
    a CPU, they take longer than runs made alone (``benchmarks/bench_class.py``).
    """
    times = crowded_run_s or recent_run_s
    wait = estimated_wait_s(position, workers, running_elapsed_s, times)
    if wait is None:
        return "No run has finished on this server yet, so there is no measured time to estimate the wait from."
    typical = float(sorted(times)[len(times) // 2])
    runs = _n(len(times), "run")
    busy = " with every worker busy" if crowded_run_s else ""
    when = "in a moment" if wait < 1 else f"in about {_seconds(wait)}"
    return f"Estimated start {when}: the last {runs} here{busy} took {_seconds(typical)} each (median)."


def full_line(waiting: int, workers: int, running_elapsed_s, recent_run_s, crowded_run_s=()) -> str:
    """Why a Run was refused when the line is full, and when a place should free up (the next
    run's estimated start, from the measured run times, as :func:`wait_words` takes them)."""
    wait = estimated_wait_s(1, workers, running_elapsed_s, crowded_run_s or recent_run_s)
    when = ("Try again once a run has finished." if wait is None else
            "Try again in a moment." if wait < 1 else
            f"Try again in about {_seconds(wait)}, when the next run should start.")
    return (f"The line is full: {_n(waiting, 'run')} already waiting for the model on this server, "
            f"the most it holds, so this one was not queued. {when}")


def _seconds(s: float) -> str:
    return f"{s:.0f} s" if s < 90 else f"{s / 60:.1f} min"


def status_line(status: str, position: int, c: Comparison | None, *, workers: int, running: int,
                model_loaded: bool, running_elapsed_s=(), recent_run_s=(), crowded_run_s=()) -> str:
    """What the visitor's run is doing, in one line (plain text)."""
    if status == "queued":
        # Free workers take the runs at the head of the line (in the moment before they do, the
        # line and a free worker are both seen); a run further back waits for a busy one.
        if position <= workers - running:
            return (f"Waiting in line: position {position}. A worker is free, so this run starts "
                    "in a moment.")
        busy = "busy" if running >= workers else "busy or about to be"
        return (f"Waiting in line: position {position}. All {workers} workers are {busy} (one run "
                f"per core). " + wait_words(position, workers, running_elapsed_s, recent_run_s,
                                            crowded_run_s))
    if status == "running":
        if c is None or c.spec is None:
            return ("Loading the model on the server (once per worker process)…" if not model_loaded
                    else "Starting…")
        n_plain = len(c.plain.tokens) if c.plain is not None else 0
        return (f"Racing, pass by pass: speculative {_n(len(c.spec.tokens), 'token')} "
                f"({_n(c.spec.passes, 'pass', 'passes')} after the prompt’s), plain "
                f"{_n(n_plain, 'token')} so far.")
    if status == "idle":
        return ("Press Run: the server writes the reply twice, speculatively and plainly, taking turns "
                "pass by pass so that both meet the same load.")
    return ""


def _n(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else (many or one + 's')}"


# --- runs recorded for pages without the model (static export) ------------------------------


def recorded_settings(s: Settings) -> Settings:
    """The settings the recorded runs were made with, for a task and draft."""
    meta = recorded_meta()
    return Settings(task=s.task, prompt=s.prompt, draft=s.draft, k=meta["k"], max_new=meta["max_new"],
                    temperature=0.0, seed=s.seed)


def no_model_line(s: Settings) -> str:
    """One line: the model is not on this server, and what that means for this Run."""
    meta = recorded_meta() if _has_recording() else None
    if s.task == CUSTOM or meta is None:
        return f"The model is not installed here, so nothing can run live; install it with: {lm.INSTALL_COMMAND}"
    return (f"The model is not installed here: this is a run recorded on {meta['date']} "
            f"(k = {meta['k']}, greedy, up to {meta['max_new']} tokens). Live runs need the server "
            f"with the model: {lm.INSTALL_COMMAND}")


def _has_recording() -> bool:
    try:
        asset_path(RECORDED)
    except FileNotFoundError:
        return False
    return True


@lru_cache(maxsize=1)
def _recording() -> dict:
    with gzip.open(asset_path(RECORDED), "rt", encoding="utf-8") as fh:
        return json.load(fh)


def recorded_meta() -> dict:
    """When, where and with which settings the recorded runs were made."""
    return _recording()["meta"]


@lru_cache(maxsize=1)
def recorded_runs() -> dict[tuple[str, str], Comparison]:
    """(task, draft) -> the recorded Comparison, the repeat with the median speedup (empty if no
    recording ships)."""
    if not _has_recording():
        return {}
    return {(r["task"], r["draft"]): comparison_from_json(r["run"]) for r in _recording()["runs"]
            if r["task"] in TASKS}


def recorded_repeats() -> dict[tuple[str, str], tuple[dict, ...]]:
    """(task, draft) -> every repeat's ``speedup, low, high, work_speedup, verdict, load_average``."""
    if not _has_recording():
        return {}
    return {(r["task"], r["draft"]): tuple(r.get("repeats", ())) for r in _recording()["runs"]}
