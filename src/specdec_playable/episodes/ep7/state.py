"""State of Episode 7: a real model speculates, live.

The visitor picks a task (or types a prompt), a draft, k, a token budget and greedy or sampling
decoding, and presses Run. The run goes to the server's queue through a :class:`.follow.RunFollower`:
a speculative run and a plain run of the same prompt, taking turns pass by pass in one loop so
that both meet the same load (:func:`lm.compare.compare`, :mod:`lm.race`), made in a worker's own
model process, off the server's event loop and out of its interpreter lock. A task's run with
given settings is computed once per process and shared (its job has a key); a typed prompt runs
for its visitor alone. Without the model, a task shows its recorded run (:mod:`data.recorded`).

This object holds the settings, the visitor's hold on the run, and what the page shows: the run
so far or finished, its place in line, and a message. What the page says of them is computed in
:mod:`episodes.ep7.words`. The view polls while :attr:`RealText.active` and calls :meth:`RealText.close`
when the tab is gone. No Panel or Bokeh.
"""

from __future__ import annotations

from dataclasses import dataclass

import param

from ...kit.params import K, control, seed_param, unlocked
from ...kit.follower import CANCELLED, DONE, QUEUED, RUNNING, Followed, FollowsRun, Refused, RunFollower
from ...data.recorded import recorded_meta, recorded_runs, recorded_weights
from ...lm.compare import Comparison, Live
from ...lm.prompts import TASKS
from ...lm.registry import DRAFTS, draft_key
from . import words
from .words import CUSTOM
from ...runtime import model_process, service as interface
from ...sim.relay import Guarantee, check_guarantee

DECODINGS = {"Greedy": "greedy", "Sampling": "sampling"}
PROMPT_MAX_CHARS = 500
#: The longest draft Episode 7 offers (the real decoders take up to lm.decode.LM_K_MAX).
REAL_K_SLIDER_MAX = 8
MAX_NEW_MAX = 128
MAX_NEW_DEFAULT = 64
#: A run (both decodings, and the model's first load) stops after this long.
JOB_BUDGET_S = 120.0
#: What a visitor's run is doing, as the page says it.
STATUSES = ("idle", "queued", "running", "done", "cancelled", "failed", "refused", "recorded")
#: Old draft names that links may still carry (the n-gram table was "learned").
DRAFT_ALIASES = {alias: spec.key for spec in DRAFTS.values() for alias in spec.aliases}


def default_draft(task: str) -> str:
    """The draft a task starts with: prompt lookup where the reply copies the prompt, else the
    draft head (it imitates the model, so it needs nothing to copy)."""
    return "lookup" if task in TASKS and TASKS[task].copy else "head"


#: The weight formats a visitor may pick (``lm.model``'s), as the menu names them.
WEIGHT_CHOICES = {"float32": "f32", "4-bit, as the file stores them": "q4"}


@dataclass(frozen=True)
class Settings:
    """What one Run asks for. ``task`` is a key of :data:`lm.prompts.TASKS` or ``"custom"``."""

    task: str
    prompt: str
    draft: str
    k: int
    max_new: int
    temperature: float
    seed: int
    weights: str = "f32"

    @property
    def greedy(self) -> bool:
        return self.temperature == 0.0

    @property
    def key(self) -> tuple | None:
        """The shared job's key: a task's run is computed once per process; a typed prompt never shared."""
        if self.task == CUSTOM:
            return None
        return ("ep7", self.task, self.draft, self.k, self.max_new, self.temperature,
                None if self.greedy else self.seed, self.weights)


def check_prompt(text: str | None) -> str:
    """A typed prompt as it will be sent, or ValueError saying why not."""
    text = "" if text is None else str(text)
    if len(text) > PROMPT_MAX_CHARS:
        raise ValueError(f"Your prompt has {len(text):,} characters; at most {PROMPT_MAX_CHARS} fit.")
    if not text.strip():
        raise ValueError(f"Type a prompt first (at most {PROMPT_MAX_CHARS} characters).")
    return text


def recorded_settings(s: Settings) -> Settings:
    """The settings the recorded runs were made with, for a task and draft."""
    meta = recorded_meta()
    return Settings(task=s.task, prompt=s.prompt, draft=s.draft, k=meta["k"], max_new=meta["max_new"],
                    temperature=0.0, seed=s.seed, weights=recorded_weights())


class RealText(FollowsRun, param.Parameterized):
    """A real model's speculative run against its plain run, for one visitor.

    ``service`` is what runs it (a :class:`runtime.Service`: the app hands in the process's shared
    queue and model processes; tests pass their own queue, work that needs no model, and whether
    the model counts as installed). Without one nothing runs and the page shows recorded runs.
    """

    task = param.Selector(
        default="repeat", objects={**{t.label: k for k, t in TASKS.items()}, "Your own prompt": CUSTOM},
        label="Task", doc="A prepared task (each one computed once on this server and shared), "
                          "or your own prompt (run live, for you alone).")
    prompt = param.String(
        default="", label=f"Your own prompt (at most {PROMPT_MAX_CHARS} characters)",
        doc="What the model is asked when the task is your own prompt; shown as plain text.")
    draft = param.Selector(
        default="lookup", objects={d.menu_label: k for k, d in DRAFTS.items()}, label="Draft",
        doc="Who guesses the next tokens for the model to check.")
    k = control(K, bounds=(1, REAL_K_SLIDER_MAX), why="a run of the real model takes seconds, and its "
                "drafts were raced at k up to 8",
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
    weight_format = param.Selector(
        default="f32", objects=WEIGHT_CHOICES, label="Weights",
        doc="How the model's weights are stored while both runs use them: float32 (every weight "
            "4 bytes, 538 MB read a step) or the model file's own 4-bit blocks (97 MB a step, "
            "but each weight multiplied again for every position checked). The page opens at the "
            "server's format.")

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
    weights = param.String(default="", constant=True,
                           doc="The weight format the run shown was made with (\"f32\" or \"q4\"; "
                               "empty before a run): the server's for a live run, the recording's "
                               "for a recorded one.")
    message = param.String(default="", constant=True,
                           doc="A one-line message: why a run was refused, failed or stopped early.")
    interim = param.Boolean(default=False, constant=True,
                            doc="True while the visitor's run waits for the model to load and the "
                                "run shown meanwhile is the one recorded for its task and draft.")

    def __init__(self, *, service: interface.Service | None = None, **params):
        if "draft" in params:
            params["draft"] = DRAFT_ALIASES.get(params["draft"], params["draft"])
        else:
            params["draft"] = default_draft(params.get("task", self.param.task.default))
        params.setdefault("weight_format", model_process.weights())
        super().__init__(**params)
        self.param.watch(self._task_sets_its_draft, ["task", "draft"], onlychanged=False)
        self.follower = RunFollower(service)
        self.refusal: Refused | None = None  # the queue as it was when the line turned a Run away
        self.line: interface.Place | None = None  # the queue as the last poll of a queued run saw it

    def _task_sets_its_draft(self, *events) -> None:
        """A new task brings its default draft, unless the same change also set the draft (a
        link restoring both)."""
        names = {e.name for e in events}
        if "task" in names and "draft" not in names:
            self.draft = default_draft(self.task)

    # -- settings ----------------------------------------------------------------------------
    def settings(self) -> Settings:
        """The current controls as one run's settings (ValueError for a bad typed prompt)."""
        text = check_prompt(self.prompt) if self.task == CUSTOM else TASKS[self.task].message
        greedy = self.decoding == "greedy"
        return Settings(task=self.task, prompt=text, draft=draft_key(self.draft), k=int(self.k),
                        max_new=int(self.max_new),
                        temperature=0.0 if greedy else round(float(self.temperature), 4),
                        seed=int(self.seed), weights=self.weight_format)

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
        if not self.follower.installed:
            self._show_recorded(settings)
            return
        service = self.follower.service
        try:
            seen = self.follower.submit(
                service.generation(settings), key=settings.key, budget_s=JOB_BUDGET_S,
                label=f"ep7 {settings.task} {settings.draft} k={settings.k} {settings.weights}")
        except Refused as refused:
            self.refusal = refused
            self._set(status="refused", position=0, message=words.full_line(
                refused.waiting, refused.workers, refused.running_elapsed_s, refused.recent_run_s,
                refused.crowded_run_s))
            return
        self._set(shown=settings, comparison=None, message="", shared=seen.shared,
                  weights=settings.weights, interim=False)
        self._show(seen)

    def _show_recorded(self, settings: Settings) -> None:
        recorded = recorded_runs().get((settings.task, settings.draft))
        line = words.no_model_line(settings.task, settings.draft)
        if recorded is None:
            self._set(status="refused", message=line)
        else:
            self._set(status="recorded", comparison=recorded, shown=recorded_settings(settings),
                      shared=False, position=0, message=line, weights=recorded_weights(),
                      interim=False)

    def _show(self, seen: Followed) -> None:
        # the format of the visitor's own run (the run shown meanwhile has the recording's)
        own = self.shown.weights if self.shown is not None else self.weights
        if seen.state == QUEUED:
            self.line = seen.place
            self._set(status="queued", position=seen.position)
        elif seen.state == RUNNING:
            live = _snapshot(seen.progress)
            meanwhile = self._meanwhile() if live is None else None
            if meanwhile is not None:
                self._set(status="running", position=0, comparison=meanwhile, interim=True,
                          weights=recorded_weights())
            else:
                self._set(status="running", position=0, comparison=live, interim=False, weights=own)
        elif seen.state == DONE:
            self._set(status="done", position=0, comparison=seen.result, interim=False, weights=own,
                      message=words.stopped_line(seen.result, JOB_BUDGET_S))
        elif seen.state == CANCELLED:
            self._set(status="cancelled", position=0, comparison=_latest(seen), interim=False,
                      message=words.CANCELLED_LINE)
        else:  # a run that failed while the model loaded keeps the recorded run it showed
            self._set(status="failed", position=0,
                      message=f"{seen.error or 'The run failed.'} {words.RUN_AGAIN}")

    def _meanwhile(self) -> Comparison | None:
        """While the server's first model process loads (a server started without the model,
        minutes on a busy machine), the run recorded for the task and draft shown, if any."""
        if self.shown is None or self.follower.service.model_ready():
            return None
        return recorded_runs().get((self.shown.task, self.shown.draft))

    # -- what the runs show ------------------------------------------------------------------
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
    return progress.snapshot() if isinstance(progress, Live) else None


def _latest(seen: Followed) -> Comparison | None:
    """The job's result, or else what it had written when last reported."""
    return seen.result if isinstance(seen.result, Comparison) else _snapshot(seen.progress)
