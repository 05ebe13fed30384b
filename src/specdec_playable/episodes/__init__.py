"""Episode pages, one module per episode (``ep1``, ``ep2``, ...).

Each module holds an episode's metadata (``NUMBER``, ``SLUG``: the URL path and the
name of its file in the repository's ``episodes/`` folder, ``TITLE``, ``SUMMARY``),
the controls its links keep (``URL_PARAMS``, and ``URL_ALIASES`` for renamed keys),
its prose (``LEDE``, ``TRY_THIS``, ``OUTRO``, ...) and ``page()``, which wires a fresh
state to the episode's view (``views/epN_*.py``) inside the page shell, for one
session or notebook cell::

    import panel as pn
    pn.extension()
    from specdec_playable.episodes import ep1
    ep1.page()
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from types import MappingProxyType, ModuleType


@dataclass(frozen=True)
class EpisodeInfo:
    number: int
    slug: str
    title: str
    summary: str
    module: ModuleType

    def page(self, seed: int | None = None):
        """The page for one session; with ``seed``, on a fresh state whose randomness is drawn
        from it (where its state draws any), so two builds show the same words and numbers (the
        site measures an episode's reading time on such a page)."""
        if seed is None:
            return self.module.page()
        cls = self.state_class()
        takes_rng = "rng" in inspect.signature(cls.__init__).parameters
        return self.module.page(cls(rng=seed) if takes_rng else cls())

    def state_class(self) -> type:
        """The class of the state ``page`` wires to its view (from ``page``'s annotation)."""
        hint = typing.get_type_hints(self.module.page)["state"]
        (cls,) = [a for a in typing.get_args(hint) if a is not type(None)] or [hint]
        return cls


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
    """A predict-then-check question at the end of an episode (``views/kit/exercises.py``).

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


def neighbours(number: int) -> tuple[EpisodeInfo | None, EpisodeInfo | None, EpisodeInfo | None]:
    """For the navigation of episode ``number``: the built episode before it and the one to go to
    next (None at either end), and, where the next one is the next on the short path
    (:data:`views.site.course.SHORT_PATH`) but not the next in number, the next in number."""
    from ..views.site.course import SHORT_PATH

    eps = available()
    numbers = [e.number for e in eps]
    if number not in numbers:
        return None, None, None
    i = numbers.index(number)
    previous = eps[i - 1] if i > 0 else None
    following = eps[i + 1] if i + 1 < len(eps) else None
    path = [n for n in SHORT_PATH if n in numbers]
    if number in path and path.index(number) + 1 < len(path):
        on_path = eps[numbers.index(path[path.index(number) + 1])]
        if on_path is not following:
            return previous, on_path, following
    return previous, following, None


@lru_cache(maxsize=1)
def available() -> tuple[EpisodeInfo, ...]:
    """Every built episode, in order."""
    found = []
    for mod in pkgutil.iter_modules(__path__):
        if not re.fullmatch(r"ep\d+", mod.name):
            continue
        m = importlib.import_module(f"{__name__}.{mod.name}")
        found.append(EpisodeInfo(m.NUMBER, m.SLUG, m.TITLE, m.SUMMARY, m))
    return tuple(sorted(found, key=lambda e: e.number))


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
    """What the teacher's guide says of one episode (``views/site/guide.py``): its objectives
    (``OBJECTIVES`` of the page module), the misconception it targets and the discussion prompts
    (``MISCONCEPTION`` and ``DISCUSS`` of its practice module), and its questions answered."""

    number: int
    slug: str
    title: str
    objectives: tuple[str, ...]
    misconception: tuple[str, str]
    discuss: tuple[str, ...]
    answers: tuple[KeyedAnswer, ...]


#: The seed of the fresh state the answer key is computed on (the same key on every server).
KEY_SEED = 0


def answer_key(ep: EpisodeInfo) -> tuple[KeyedAnswer, ...]:
    """Each question of ``ep`` answered on a fresh state of its page (``STATE``, seeded with
    :data:`KEY_SEED` where it takes one) moved to the question's setting, as *Check* does."""
    cls = ep.module.STATE
    kw = {"rng": KEY_SEED} if "rng" in cls.__init__.__code__.co_varnames else {}
    out = []
    for ex in ep.module.EXERCISES:
        state = cls(**kw)
        if ex.settings:
            state.param.update(**ex.settings)
        right, why = ex.answer(state)
        out.append(KeyedAnswer(ex.question, ex.choices, right, why))
    return tuple(out)


@lru_cache(maxsize=1)
def teaching() -> tuple[Teaching, ...]:
    """The teacher's guide's material for every built episode, computed once per process."""
    out = []
    for ep in available():
        practice = importlib.import_module(f"{__name__}.practice.ep{ep.number}")
        out.append(Teaching(ep.number, ep.slug, ep.title, tuple(ep.module.OBJECTIVES),
                            tuple(practice.MISCONCEPTION), tuple(practice.DISCUSS), answer_key(ep)))
    return tuple(out)
