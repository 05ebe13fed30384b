"""State of Episode 4: one speculative decoder over two texts of different predictability.

Each side of the page shows one text (a bundled one, or the visitor's own pasted text), cut into
the real model's tokens. Each token's acceptance probability ``q`` is measured: the real model's p
against the draft head's q there, ``sum(min(p, q))`` (``data.measured`` reads the bundled texts'
numbers from the shipped asset; a pasted text is scored by the model live, on a queued worker).
Every run samples acceptance per token from those probabilities with ``sim.relay.run``; the run's
randomness comes from ``seed``, one independent stream per side, so a seed reproduces a run
exactly. "Run again" draws a new seed from the session's own generator.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import param

from ...kit.params import C, K, control, fill_choices, seed_param, unlocked
from ...kit.follower import CANCELLED, DONE, QUEUED, RUNNING, Followed, FollowsRun, Refused, RunFollower
from ... import lm
from ...data import measured, texts
from ...runtime import service as interface
from ...sim import relay
from ...sim.seeds import draw_seed
from ...data.texts import Text

#: The label of the button that sends a pasted text to be scored (the page's words name it).
PASTE_LABEL = "Score and run my text"

#: Simulated time of one big-model pass, as in the rest of the series.
BIG_PASS_MS = 600.0

#: The two sides of the page, in order.
SIDES = ("left", "right")

#: Choice value that stands for the visitor's pasted text.
PASTED = "pasted"
#: Seconds a worker may spend scoring one pasted text (then it keeps the tokens scored so far).
PASTE_BUDGET_S = 240.0
#: What the paste's scoring is doing.
SCORING = ("idle", "queued", "running", "done", "cancelled", "failed")


def _text_choices() -> dict[str, str]:
    """Select label -> text id: the measured texts, then the paste."""
    choices = {t.title: t.id for t in measured.measured_texts()}
    choices["Your own text (paste it below)"] = PASTED
    return choices


def pasted_text(result) -> Text:
    """A scored paste (a :class:`lm.measure.TextMeasurement`) as the page's text."""
    how = "scored by the real model just now" if result.complete else (
        f"only its first {len(result):,} tokens were scored in the time a visitor may use")
    return measured.as_text(result, id=PASTED, title="Your text", kind="pasted",
                            description=f"Text you pasted, {how}.{kept_words(result)}")


def kept_words(result) -> str:
    """How often the head's and the memory draft's first guesses were the model's own top token
    on a scored paste, as the table's "first guess kept" columns say it for the six texts (empty
    when the memory was not measured beside the head)."""
    memory = result.kept_beside("memory")
    if memory is None or not len(result):
        return ""
    return (f" First guess kept: the head {float(np.mean(result.greedy)):.0%} of its tokens, the "
            f"memory draft {float(np.mean(memory)):.0%}.")


@dataclass(frozen=True, eq=False)
class TextRun:
    """One speculative run over one text, with what the page shows about it.

    Attributes
    ----------
    text : Text
        The text run over (its tokens are what the big model writes).
    result : RelayResult
        The run itself, from :func:`sim.relay.run`.
    seed : int
        The seed the page shows; with ``side`` it reproduces the run.
    status : tuple of str
        Per token: ``"accepted"`` (drafted and kept), ``"correction"`` (the
        big model's own token after a miss) or ``"bonus"`` (the big model's
        extra token after a round with no miss).
    round : numpy.ndarray of int
        Per token: the round (0-based) that produced it.
    missed_guess : tuple of str
        Per token: for a correction, the draft's rejected guess; else ``""``.

    Examples
    --------
    >>> r = BoilerplateVsPoetry(seed=7).runs[0]
    >>> "".join(r.result.output) == r.text.source
    True
    """

    text: Text
    result: relay.RelayResult
    seed: int
    status: tuple[str, ...]
    round: np.ndarray
    missed_guess: tuple[str, ...]

    @classmethod
    def measure(cls, text: Text, result: relay.RelayResult, seed: int) -> "TextRun":
        n = len(text)
        status = [""] * n
        rounds = np.full(n, -1, dtype=np.int64)
        missed = [""] * n
        ev = result.events
        for kind, tok, rnd in zip(ev.kind, ev.token, ev.round):
            if kind in ("accepted", "correction", "bonus"):
                status[tok] = str(kind)
                rounds[tok] = rnd
        rejected = ev.of_kind("rejected")
        for tok, guess in zip(rejected.token, rejected.text):
            missed[tok] = str(guess)
        return cls(text, result, seed, tuple(status), rounds, tuple(missed))

    @property
    def n_tokens(self) -> int:
        return len(self.text)

    @property
    def n_rounds(self) -> int:
        return self.result.n_rounds

    @property
    def accepted(self) -> int:
        """Drafts the big model kept."""
        return self.result.acceptance.accepted

    @property
    def judged(self) -> int:
        """Drafts the big model judged: the accepted ones plus each round's first miss."""
        return self.result.acceptance.judged

    @property
    def acceptance_rate(self) -> float:
        return self.result.acceptance.rate

    @property
    def tokens_per_round(self) -> float:
        """Tokens each round delivered, on average (accepted drafts + the big model's one)."""
        return float(self.result.rounds["tokens"].mean()) if self.n_rounds else 0.0

    @property
    def big_model_tokens(self) -> int:
        """Tokens the big model wrote itself (corrections and bonus tokens)."""
        return sum(s != "accepted" for s in self.status)

    def _lane_ms(self, kind: str) -> float:
        ev = self.result.events.of_kind(kind)
        return float((ev.end_ms - ev.start_ms).sum())

    @property
    def verify_ms(self) -> float:
        """Time spent in big-model verify passes, from the run's events."""
        return self._lane_ms("verify")

    @property
    def draft_ms(self) -> float:
        """Time spent in draft steps, from the run's events."""
        return self._lane_ms("draft")

    @property
    def draft_steps(self) -> int:
        return int(self.result.rounds["drafted"].sum())

    @property
    def wall_ms(self) -> float:
        """Wall clock of the speculative run."""
        return self.result.wall_ms

    @property
    def baseline_ms(self) -> float:
        """Wall clock of plain decoding: the big model alone, one pass per token."""
        return self.result.baseline_ms

    @property
    def speedup(self) -> float:
        return self.result.speedup

    @property
    def output_matches(self) -> bool:
        """Whether the run's output is the text, token for token (it always should be)."""
        return self.result.output == self.text.tokens


class BoilerplateVsPoetry(FollowsRun, param.Parameterized):
    """Two texts side by side, each run through the same speculative decoder."""

    # The choices are the bundled texts, read by the first instance (see fill_choices).
    left = param.Selector(
        default="py-account", objects=[], label="Left text",
        doc="The text on the left: a bundled text, or your own pasted text.")
    right = param.Selector(
        default="poem-kettle", objects=[], label="Right text",
        doc="The text on the right: a bundled text, or your own pasted text.")
    k = control(K, default=6, bounds=(1, 12), why="a text's rounds are drawn as lanes too (up to 12 "
                "guesses a round stay readable); it opens at 6, where the code's long accepted "
                "runs show",
                doc="How many tokens the small model drafts each round before the big model checks "
                "them (a count of tokens).")
    c = control(C, default=0.02, bounds=(0.01, 1.0),
                why="it opens at the draft head's measured cost (0.016 of a pass, rounded); no "
                "draft is free",
                doc=f"Time of one draft step, in big-model passes of {BIG_PASS_MS:,.0f} ms: 0.15 "
                f"means {0.15 * BIG_PASS_MS:,.0f} ms.")
    seed = seed_param(0, doc="Fixes the run's random draws: the same seed and settings give the same run.")
    paste = param.String(
        default="", label="Your own text",
        doc=f"Text to run, at most {texts.PASTE_MAX_CHARS:,} characters; used by use_paste().")

    pasted = param.ClassSelector(
        class_=Text, allow_None=True, default=None, constant=True,
        doc="The last pasted text scored by the real model, cut into its tokens.")
    message = param.String(
        default="", constant=True,
        doc="Why the last paste was refused, failed or stopped (shown to the visitor), or empty.")
    scoring = param.Selector(
        default="idle", objects=list(SCORING), constant=True,
        doc="What the scoring of the last paste is doing.")
    progress = param.Tuple(
        default=(0, 0), length=2, constant=True,
        doc="Tokens of the paste scored so far, and in all (0, 0 before the first report).")
    position = param.Integer(
        default=0, bounds=(0, None), constant=True,
        doc="The paste's place in line while it waits for a worker (1 = next), else 0.")
    runs = param.Tuple(
        default=(None, None), length=2, constant=True,
        doc="The current run on each side (TextRun), or None for an empty paste slot.")

    def __init__(self, *, rng=None, service: interface.Service | None = None, **params):
        fill_choices(BoilerplateVsPoetry, _text_choices, *SIDES)
        # The paste's scoring waits its turn in the server's one queue (Episode 7's runs too).
        self.follower = RunFollower(service)
        # The session's own generator: only "Run again" (and the first seed) draw from it.
        self._rng = np.random.default_rng(rng)
        if "seed" not in params:
            params["seed"] = draw_seed(self._rng)
        super().__init__(**params)
        self._rerun()

    @property
    def draft_step_ms(self) -> float:
        return self.c * BIG_PASS_MS

    @property
    def break_even_tokens(self) -> float:
        """Tokens a full round must deliver to match plain decoding: 1 + k·c (arithmetic)."""
        return 1.0 + self.k * self.c

    def text_for(self, choice: str) -> Text | None:
        """The Text a side's choice stands for (None: the paste slot, nothing pasted yet)."""
        return self.pasted if choice == PASTED else measured.measured_text(choice)

    def run_text(self, text: Text, side: int, seed: int | None = None) -> TextRun:
        """Run the decoder over ``text`` with this side's stream of ``seed`` (default: ``self.seed``)."""
        seed = self.seed if seed is None else seed
        rng = np.random.default_rng(seed).spawn(len(SIDES))[side]
        result = relay.run(
            text.tokens, text.q, self.k, rng=rng, big_pass_ms=BIG_PASS_MS,
            draft_step_ms=self.draft_step_ms, decoys=text.decoys)
        return TextRun.measure(text, result, seed)

    @param.depends("left", "right", "k", "c", "seed", watch=True)
    def _rerun(self) -> None:
        runs = []
        for i, choice in enumerate((self.left, self.right)):
            text = self.text_for(choice)
            runs.append(None if text is None else self.run_text(text, i))
        with unlocked(self):
            self.runs = tuple(runs)

    def run_again(self) -> None:
        """Fresh randomness: a new seed from the session's generator, and a new run."""
        new = draw_seed(self._rng)
        if new == self.seed:
            self._rerun()
        else:
            self.seed = new

    # -- the pasted text, scored live --------------------------------------------------------

    def _set(self, **values) -> None:
        with unlocked(self):
            self.param.update(**values)

    def use_paste(self, text: str | None = None) -> bool:
        """Send the pasted text (``text``, or the ``paste`` parameter) to be scored by the model.

        If the text is refused (too long, or empty), or no worker can take it, ``message`` says
        why and the current runs stay as they were. Otherwise the scoring is queued (a paste
        still being scored is cancelled first) and :meth:`poll` follows it; when it is done the
        paste replaces the previous one, and if neither side shows it yet it goes on the right.
        Returns whether the text was sent.
        """
        if text is not None:
            self.paste = text
        try:
            source = texts.check_paste(self.paste)
        except ValueError as exc:
            self._set(message=str(exc))
            return False
        if not self.follower.installed:
            self._set(message="Pasted text is scored by the real model, which is not installed "
                              f"on this server ({lm.INSTALL_COMMAND}).")
            return False
        try:
            seen = self.follower.submit(self.follower.service.scoring(source),
                                        key=("ep4-paste", source), budget_s=PASTE_BUDGET_S,
                                        label="ep4 paste")
        except Refused as exc:
            self._set(message=f"The model is busy: {exc}.")
            return False
        self._set(message="", scoring="queued", progress=(0, 0), position=0)
        self._show(seen)
        return True

    def _show(self, seen: Followed) -> None:
        if seen.state == QUEUED:
            self._set(scoring="queued", position=seen.position)
        elif seen.state == RUNNING:
            self._set(scoring="running", position=0, progress=tuple(seen.progress or (0, 0)))
        elif seen.state == DONE and seen.result is not None and len(seen.result):
            result = seen.result
            note = "" if result.complete else (
                f"Scoring ran out of time: the page shows the first {len(result):,} tokens.")
            self._set(scoring="done", position=0, message=note,
                      progress=(len(result), len(result)), pasted=pasted_text(result))
            if PASTED in (self.left, self.right):
                self._rerun()
            else:
                self.right = PASTED
        elif seen.state == CANCELLED:
            self._set(scoring="cancelled", position=0, message="Scoring cancelled.")
        else:
            self._set(scoring="failed", position=0,
                      message=f"{seen.error or 'Scoring your text failed on the server.'} "
                              f"Press “{PASTE_LABEL}” to try again.")
