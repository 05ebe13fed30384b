"""How long each episode takes, measured from its own page, and the short path through the series.

An episode's time is its reading time plus its hands-on time: the words of its prose (every
HTML block the page shows, its navigation left out) at :data:`WORDS_PER_MINUTE`, and
:data:`MINUTES_PER_STEP` for each step of its "Try this" (:func:`try_steps`). The short path is
the longest run of :data:`SHORT_PATH` that fits a :data:`CLASS_MINUTES`-minute class; the
other episodes go deeper. The index states both (``app/site.py``), and
``tests/test_course.py`` checks them against the pages.

No page is built here: the site measures its pages once per process and passes the words in.
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import panel as pn

#: A reading pace for explanatory prose with numbers in it (words per minute).
WORDS_PER_MINUTE = 200
#: Time for one "Try this" step: move the control, watch the page answer, think (minutes).
MINUTES_PER_STEP = 2
#: The class the short path is sized for (minutes).
CLASS_MINUTES = 45
#: The episodes a short course takes, in order, if they fit: the core idea (1, 2), the three
#: numbers that decide it (3) and where it backfires (5). The others go deeper: real text (4),
#: sampling (6), a real model (7), busy servers and trees (8).
SHORT_PATH = (1, 2, 3, 5)

_TAG = re.compile(r"<[^>]+>")
#: Blocks that are not read: the navigation and the line under each figure.
_NOT_PROSE = ("<nav", '<p class="sdp-figline"')
_WORD = re.compile(r"[^\W\d_][\w’'-]*")
#: Where a "Try this" moves on to its next step.
_NEXT_STEP = re.compile(r";\s*then\b|\.\s+Then\b|\bthen,\s|\.\s+In part \d\b", re.IGNORECASE)


def plain_text(markup: str) -> str:
    """What a visitor reads in ``markup``: tags dropped, entities decoded, spaces collapsed."""
    return re.sub(r"\s+", " ", html.unescape(_TAG.sub(" ", markup))).strip()


def count_words(text: str) -> int:
    """Words in ``text`` (runs of letters; numbers and symbols are not counted)."""
    return len(_WORD.findall(text))


def page_markup(root: pn.viewable.Viewable) -> list[str]:
    """The HTML of every block ``root`` shows (built outside a session, so every part is there),
    the navigation and the figures' link lines left out."""
    out = []
    for pane in root.select(pn.pane.HTML):
        obj = pane.object
        if isinstance(obj, str) and obj and not obj.lstrip().startswith(_NOT_PROSE):
            out.append(obj)
    return out


def try_steps(try_this: str) -> int:
    """The number of steps in a "Try this" text: one, plus one per "then" that moves on (or, when
    an episode lists its steps, their number)."""
    if '<ol class="sdp-steps">' in try_this:
        return try_this.count("<li>")
    return 1 + len(_NEXT_STEP.findall(plain_text(try_this)))


@dataclass(frozen=True)
class EpisodeTime:
    """The measured time of one episode: ``words`` of prose and ``steps`` of "Try this"."""

    number: int
    words: int
    steps: int

    @property
    def reading_min(self) -> float:
        return self.words / WORDS_PER_MINUTE

    @property
    def minutes(self) -> int:
        """Reading plus hands-on time, rounded up to a whole minute."""
        return math.ceil(self.reading_min + MINUTES_PER_STEP * self.steps)


def episode_time(number: int, markup: Iterable[str], try_this: str | Sequence[str]) -> EpisodeTime:
    """The time of episode ``number`` from its page's HTML blocks and its "Try this" (a text, or
    a list of steps)."""
    words = sum(count_words(plain_text(m)) for m in markup)
    steps = len(try_this) if not isinstance(try_this, str) else try_steps(try_this)
    return EpisodeTime(number, words, steps)


def short_path(times: Sequence[EpisodeTime], *, minutes: int = CLASS_MINUTES,
               order: Sequence[int] = SHORT_PATH) -> tuple[int, ...]:
    """The longest run of ``order`` (episode numbers) whose times add up to at most ``minutes``."""
    by = {t.number: t.minutes for t in times}
    path: list[int] = []
    total = 0
    for n in order:
        if n not in by or total + by[n] > minutes:
            break
        path.append(n)
        total += by[n]
    return tuple(path)


# --- class plans (the teacher's guide) -----------------------------------------------------------

#: The long class the teacher's guide plans beside the short one (minutes).
LONG_CLASS_MINUTES = 90
#: Opening a class (the question of the day, the index page) and closing it (the summary, the
#: series score), in minutes.
OPEN_MINUTES, CLOSE_MINUTES = 2, 3
#: The least discussion a long class gives each episode (minutes); a plan spreads what is left
#: of its time over the episodes' discussions.
DISCUSS_MINUTES = 3
#: The least time a plan keeps free (minutes), and the share of a class it keeps free when that
#: is more: for a slow start, a page that loads slowly, a question that runs long.
SLACK_MINUTES, SLACK_SHARE = 3, 0.1


def slack_minutes(minutes: int) -> int:
    """The free time a class of ``minutes`` keeps: a tenth of it, at least :data:`SLACK_MINUTES`
    (4 minutes of a 45-minute class, 9 of a 90-minute one)."""
    return max(SLACK_MINUTES, int(minutes * SLACK_SHARE))


@dataclass(frozen=True)
class PlanStep:
    """One step of a class: ``kind`` is "open", "episode", "discuss", "slack" or "close"."""

    kind: str
    minutes: int
    episode: int | None = None


@dataclass(frozen=True)
class ClassPlan:
    """A class of ``minutes``: open, then each episode at its measured time followed by its
    discussion, then the slack, then close."""

    minutes: int
    episodes: tuple[int, ...]
    steps: tuple[PlanStep, ...]

    @property
    def total(self) -> int:
        return sum(s.minutes for s in self.steps)

    @property
    def slack(self) -> int:
        """The minutes the plan keeps free."""
        return sum(s.minutes for s in self.steps if s.kind == "slack")


def class_plan(times: Sequence[EpisodeTime], episodes: Sequence[int], minutes: int) -> ClassPlan:
    """``episodes`` in a class of ``minutes``: each at its measured time; of the rest of the class
    (after opening and closing) first the slack (:func:`slack_minutes`, or what is left if less),
    kept free before the close, and then discussion: after each episode if that gives each at
    least :data:`DISCUSS_MINUTES` (the minutes that do not divide evenly go to the first ones),
    else in one block before the slack. If the episodes alone overrun, the total says so."""
    by = {t.number: t.minutes for t in times}
    eps = tuple(n for n in episodes if n in by)
    left = max(minutes - OPEN_MINUTES - CLOSE_MINUTES - sum(by[n] for n in eps), 0)
    slack = min(left, slack_minutes(minutes))
    left -= slack
    each, extra = divmod(left, len(eps)) if eps else (0, left)
    steps = [PlanStep("open", OPEN_MINUTES)]
    for i, n in enumerate(eps):
        steps.append(PlanStep("episode", by[n], n))
        if each >= DISCUSS_MINUTES:
            steps.append(PlanStep("discuss", each + (i < extra), n))
    if each < DISCUSS_MINUTES and left:
        steps.append(PlanStep("discuss", left))
    if slack:
        steps.append(PlanStep("slack", slack))
    steps.append(PlanStep("close", CLOSE_MINUTES))
    return ClassPlan(minutes, eps, tuple(steps))


def short_class(times: Sequence[EpisodeTime]) -> ClassPlan:
    """The :data:`CLASS_MINUTES` class: the short path the index states."""
    return class_plan(times, short_path(times), CLASS_MINUTES)


def long_class(times: Sequence[EpisodeTime], minutes: int = LONG_CLASS_MINUTES) -> ClassPlan:
    """The longest run of episodes in order (from Episode 1) that fits ``minutes`` with at least
    :data:`DISCUSS_MINUTES` of discussion after each and the slack kept free."""
    chosen: list[int] = []
    used = OPEN_MINUTES + CLOSE_MINUTES + slack_minutes(minutes)
    for t in sorted(times, key=lambda t: t.number):
        if used + t.minutes + DISCUSS_MINUTES > minutes:
            break
        chosen.append(t.number)
        used += t.minutes + DISCUSS_MINUTES
    return class_plan(times, chosen, minutes)
