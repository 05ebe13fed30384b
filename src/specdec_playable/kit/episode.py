"""What an episode is to the site: one frozen :class:`Episode` record, and the steps and questions
it carries.

Each episode package (``episodes/epN/``) builds its record in its ``__init__.py``; the registry
(``episodes/__init__.py``) lists them in order, and everything that lists episodes (the index, the
summary, the glossary, the teacher's guide, the site, the export) reads the records it is handed.
Nothing is found by scanning modules, and nothing is read off a module by name.

Some of an episode's words are computed from shipped measurements (Episode 4's title, Episode 7's
try-this steps): a record holds those as functions of no argument, called on first use and kept,
so importing an episode reads no file.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from types import MappingProxyType
from typing import Any

#: A word or a tuple of steps, given as it is or as a function computing it on first use.
Lazy = Any


def _resolve(value: Lazy):
    return value() if callable(value) else value


@dataclass(frozen=True)
class TryStep:
    """One step of an episode's "Try this": what to do (trusted HTML, a phrase that reads on
    from the one before) and the controls it leaves set (``settings``: state parameter values).

    The steps are done in order, each from where the one before left the page, so a step's
    words may speak only of that state: ``tests/test_try_this.py`` walks them on a state
    object and checks what each promises.
    """

    html: str
    settings: Mapping[str, object] = field(default_factory=dict)

    def __post_init__(self):
        object.__setattr__(self, "settings", MappingProxyType(dict(self.settings)))


@dataclass(frozen=True)
class Exercise:
    """A predict-then-check question at the end of an episode (``kit/exercises.py``).

    ``question`` is trusted HTML, ``choices`` plain text. On *Check* the page applies
    ``settings`` to its state, then ``answer(state)`` returns the index of the right choice
    and an explanation (trusted HTML), both computed from the state's own numbers at that
    setting, never typed: ``tests/test_exercises.py`` checks them like every other sentence.
    """

    question: str
    choices: tuple[str, ...]
    settings: Mapping[str, object]
    answer: Callable

    def __post_init__(self):
        object.__setattr__(self, "choices", tuple(self.choices))
        object.__setattr__(self, "settings", MappingProxyType(dict(self.settings)))


@dataclass(frozen=True)
class KeyedAnswer:
    """One question with its answer for the instructor: the right choice and the explanation the
    page gives at the question's setting (computed there, as on the page)."""

    question: str
    choices: tuple[str, ...]
    right: int
    explanation: str


@dataclass(frozen=True)
class Teaching:
    """What the teacher's guide says of one episode (``kit/site/guide.py``): its objectives, the
    misconception it targets, the discussion prompts and its questions answered."""

    number: int
    slug: str
    title: str
    objectives: tuple[str, ...]
    misconception: tuple[str, str]
    discuss: tuple[str, ...]
    answers: tuple[KeyedAnswer, ...]


#: The seed of the fresh state the answer key is computed on (the same key on every server).
KEY_SEED = 0


@dataclass(frozen=True, eq=False)
class Episode:
    """One episode, as the site and the registry know it.

    Attributes
    ----------
    number, slug : int, str
        Its place in the series and its address (``/<slug>``; also the name of its ``panel
        serve`` file in the repository's ``episodes/`` folder).
    make_page : callable
        ``make_page(state=None, *, service=None)``: a fresh page for one session or notebook cell.
    state : type
        The ``param.Parameterized`` class the page wires (the guide answers questions on a fresh one).
    objectives : tuple of str
        What a student can do after it, each completing "After this episode you can".
    url_params : tuple of str
        The controls its links keep.
    exercises : tuple of Exercise
        Its "Check yourself" questions.
    misconception, discuss
        The belief it sets out to correct (belief, correction) and prompts to discuss (the guide).
    title, summary, try_this, steps : str / tuple, or a function of no argument
        Its title, one-paragraph summary (the index), "Try this" as HTML, and the steps.
    summary_sentence : function of no argument
        Its sentence on ``/summary`` (trusted HTML, every number computed).
    summary_link : mapping
        The setting that sentence describes, which the summary's link opens.
    terms : tuple of str
        Glossary keys (``kit/terms.py``) it shows, beyond those whose entry names it: the
        glossary links each to it ("See it in Episode N").
    """

    number: int
    slug: str
    make_page: Callable[..., Any]
    state: type
    objectives: tuple[str, ...]
    url_params: tuple[str, ...]
    exercises: Lazy
    misconception: tuple[str, str]
    discuss: tuple[str, ...]
    title_: Lazy
    summary_: Lazy
    try_this_: Lazy
    steps_: Lazy = ()
    summary_sentence: Callable[[], str] | None = None
    summary_link: Mapping[str, object] = field(default_factory=dict)
    terms: tuple[str, ...] = ()

    def __post_init__(self):
        object.__setattr__(self, "objectives", tuple(self.objectives))
        object.__setattr__(self, "url_params", tuple(self.url_params))
        object.__setattr__(self, "discuss", tuple(self.discuss))
        object.__setattr__(self, "summary_link", MappingProxyType(dict(self.summary_link)))

    @cached_property
    def title(self) -> str:
        return _resolve(self.title_)

    @cached_property
    def summary(self) -> str:
        return _resolve(self.summary_)

    @cached_property
    def try_this(self) -> str:
        return _resolve(self.try_this_)

    @cached_property
    def steps(self) -> tuple[TryStep, ...]:
        return tuple(_resolve(self.steps_))

    @cached_property
    def questions(self) -> tuple[Exercise, ...]:
        return tuple(_resolve(self.exercises))

    def fresh_state(self, seed: int | None = None, *, service=None):
        """A fresh state; with ``seed``, its randomness drawn from it where it draws any; with
        ``service``, running the model through it where the state runs one."""
        takes = inspect.signature(self.state.__init__).parameters
        kw = {"rng": seed} if "rng" in takes and seed is not None else {}
        if "service" in takes and service is not None:
            kw["service"] = service
        return self.state(**kw)

    def page(self, seed: int | None = None, *, service=None):
        """The page for one session; with ``seed``, on a fresh state whose randomness is drawn
        from it (where its state draws any), so two builds show the same words and numbers (the
        site measures an episode's reading time on such a page)."""
        state = None if seed is None else self.fresh_state(seed, service=service)
        return self.make_page(state, service=service)

    def answer_key(self) -> tuple[KeyedAnswer, ...]:
        """Each question answered on a fresh state (seeded with :data:`KEY_SEED` where it takes
        one) moved to the question's setting, as *Check* does."""
        out = []
        for ex in self.questions:
            state = self.fresh_state(KEY_SEED)
            if ex.settings:
                state.param.update(**ex.settings)
            right, why = ex.answer(state)
            out.append(KeyedAnswer(ex.question, ex.choices, right, why))
        return tuple(out)

    def teaching(self) -> Teaching:
        """The teacher's guide's material for this episode (its questions answered now)."""
        return Teaching(self.number, self.slug, self.title, self.objectives, tuple(self.misconception),
                        self.discuss, self.answer_key())
