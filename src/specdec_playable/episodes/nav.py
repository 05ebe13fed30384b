"""Where an episode sits in the series: the one before, the one after, and an episode's address by
its number, read from the registry when a page is built (so a page module imports no other
episode)."""

from __future__ import annotations

from ..kit.episode import Episode
from ..kit.site.course import SHORT_PATH


def _registry() -> tuple[Episode, ...]:
    from . import EPISODES  # the registry imports every episode, so it is read at call time

    return EPISODES


def by_number(number: int) -> Episode:
    """The registered episode ``number`` (``KeyError`` if there is none)."""
    for ep in _registry():
        if ep.number == number:
            return ep
    raise KeyError(f"no episode {number}; the episodes are {[e.number for e in _registry()]}")


def neighbours(number: int) -> tuple[Episode | None, Episode | None, Episode | None]:
    """For the navigation of episode ``number``: the episode before it and the one to go to next
    (None at either end), and, where the next one is the next on the short path
    (:data:`kit.site.course.SHORT_PATH`) but not the next in number, the next in number."""
    eps = _registry()
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
