"""What a visitor answered to the "Check yourself" questions, and the score it makes.

Each question keeps the first choice the visitor pressed and the right one at the question's
setting: the first try counts, and once the answer is shown the question is locked (pressing
another choice changes nothing). A page's :class:`AnswerSheet` holds its episode's records;
:func:`series_score` counts them over the whole series.

The records live in the visitor's own browser (``kit/exercises.py`` keeps them in its
local storage as :func:`dumps` writes them) and come back to the server on every page it opens,
so they are untrusted text: :func:`loads` keeps only what matches a question of the series (its
key, whole numbers within its choices) and drops everything else.

A question is named by :func:`question_key`, a hash of its words, so an answer kept in a
browser never lands on a question that was reworded or moved.

Examples
--------
>>> sheet = AnswerSheet(keys=(question_key("Q1?", ("a", "b")), question_key("Q2?", ("a", "b"))),
...                     sizes=(2, 2))
>>> sheet.record(1, picked=0, right=0), sheet.record(1, picked=1, right=0)
(True, False)
>>> sheet.score
Score(right=1, answered=1, total=2)
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import param

from .params import unlocked

#: The stored records' format (a browser holding another one starts afresh).
VERSION = 1
#: The most characters of stored records the server reads (the whole series needs under 2,000).
MAX_STORED_CHARS = 8_000
#: The most questions one page asks and the most choices one question offers (bounds on
#: what a stored record may name).
MAX_QUESTIONS, MAX_CHOICES = 9, 9


def question_key(question: str, choices: Iterable[str]) -> str:
    """A short name for a question made from its words and its choices (12 hex digits)."""
    text = "\x1f".join([question, *choices])
    return hashlib.blake2s(text.encode("utf-8"), digest_size=6).hexdigest()


@dataclass(frozen=True)
class Answer:
    """One question's record: the choice first pressed and the right one (0-based)."""

    picked: int
    right: int

    @property
    def correct(self) -> bool:
        return self.picked == self.right


@dataclass(frozen=True)
class Score:
    """Questions answered right at the first try, answered at all, and asked."""

    right: int
    answered: int
    total: int

    def __add__(self, other: Score) -> Score:
        return Score(self.right + other.right, self.answered + other.answered,
                     self.total + other.total)


def _record(raw, size: int) -> Answer | None:
    """``[picked, right]`` as stored, if both are whole numbers among ``size`` choices."""
    if not (isinstance(raw, list) and len(raw) == 2):
        return None
    if not all(type(v) is int and 0 <= v < size for v in raw):  # bool is not a choice
        return None
    return Answer(raw[0], raw[1])


def loads(text: object, questions: Mapping[str, Sequence[tuple[str, int]]]) -> dict[str, dict[str, Answer]]:
    """The records in ``text`` (as :func:`dumps` wrote them) that fit ``questions``.

    ``questions`` maps a page's name (``"ep3"``) to its questions in order, each as
    ``(key, number of choices)``. Anything else in ``text`` (another format, unknown pages or
    keys, numbers out of range, text too long to be records) is dropped; never raises.
    """
    if not isinstance(text, str) or not text or len(text) > MAX_STORED_CHARS:
        return {}
    try:
        data = json.loads(text)
    except ValueError:
        return {}
    if not isinstance(data, dict) or data.get("v") != VERSION or not isinstance(data.get("pages"), dict):
        return {}
    out: dict[str, dict[str, Answer]] = {}
    for page, asked in questions.items():
        stored = data["pages"].get(page)
        if not isinstance(stored, dict):
            continue
        kept = {key: a for key, size in asked
                if (a := _record(stored.get(key), min(size, MAX_CHOICES))) is not None}
        if kept:
            out[page] = kept
    return out


def dumps(page: str, answers: Mapping[str, Answer]) -> str:
    """One page's records as the browser stores them (JSON; the browser merges the pages)."""
    records = {key: [a.picked, a.right] for key, a in answers.items()}
    return json.dumps({"v": VERSION, "pages": {page: records}}, separators=(",", ":"))


class AnswerSheet(param.Parameterized):
    """One page's questions and what the visitor answered (question ``i`` counted from 1)."""

    keys = param.List(default=[], item_type=str, constant=True,
                      doc="Each question's key (question_key), in the order the page asks them.")
    sizes = param.List(default=[], item_type=int, constant=True,
                       doc="Each question's number of choices.")
    answers = param.Dict(default={}, constant=True,
                         doc="Question key -> its Answer: the first try and the right choice.")

    def __init__(self, **params):
        for name in ("keys", "sizes"):
            params[name] = list(params.get(name, ()))
        super().__init__(**params)
        if len(self.keys) != len(self.sizes) or len(self.keys) > MAX_QUESTIONS:
            raise ValueError(f"keys and sizes must match, at most {MAX_QUESTIONS} questions; "
                             f"got {len(self.keys)} keys and {len(self.sizes)} sizes")

    def _key(self, i: int) -> str:
        if not 1 <= i <= len(self.keys):
            raise ValueError(f"question must be 1 to {len(self.keys)}; got {i!r}")
        return self.keys[i - 1]

    def answer(self, i: int) -> Answer | None:
        """Question ``i``'s record, or None while it is open."""
        return self.answers.get(self._key(i))

    def locked(self, i: int) -> bool:
        """Whether question ``i`` has been answered (its answer shown, its choices closed)."""
        return self.answer(i) is not None

    def record(self, i: int, *, picked: int, right: int) -> bool:
        """Keep the first try at question ``i``; False (and nothing changes) if it was answered."""
        key = self._key(i)
        size = self.sizes[i - 1]
        if not (0 <= picked < size and 0 <= right < size):
            raise ValueError(f"choices of question {i} are 0 to {size - 1}; got {picked!r}, {right!r}")
        if key in self.answers:
            return False
        with unlocked(self):
            self.answers = {**self.answers, key: Answer(picked, right)}
        return True

    def restore(self, answers: Mapping[str, Answer]) -> list[int]:
        """Take the records a browser kept (from :func:`loads`) for questions still open here;
        returns the questions restored (counted from 1)."""
        new = {k: a for k, a in answers.items()
               if k in self.keys and k not in self.answers
               and max(a.picked, a.right) < self.sizes[self.keys.index(k)]}
        if new:
            with unlocked(self):
                self.answers = {**self.answers, **new}
        return [self.keys.index(k) + 1 for k in new]

    @property
    def score(self) -> Score:
        kept = [self.answers[k] for k in self.keys if k in self.answers]
        return Score(sum(a.correct for a in kept), len(kept), len(self.keys))


def series_score(records: Mapping[str, Mapping[str, Answer]],
                 questions: Mapping[str, Sequence[tuple[str, int]]]) -> tuple[dict[str, Score], Score]:
    """Each page's score and the series' (the sum), from :func:`loads`' records."""
    per = {}
    for page, asked in questions.items():
        sheet = AnswerSheet(keys=tuple(k for k, _ in asked), sizes=tuple(n for _, n in asked))
        sheet.restore(records.get(page, {}))
        per[page] = sheet.score
    total = sum(per.values(), Score(0, 0, 0))
    return per, total
