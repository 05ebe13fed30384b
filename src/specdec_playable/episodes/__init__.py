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
import pkgutil
import re
from dataclasses import dataclass
from functools import lru_cache
from types import ModuleType


@dataclass(frozen=True)
class EpisodeInfo:
    number: int
    slug: str
    title: str
    summary: str
    module: ModuleType

    def page(self):
        return self.module.page()


def neighbours(number: int) -> tuple[EpisodeInfo | None, EpisodeInfo | None]:
    """The built episodes just before and just after episode ``number`` (None at either end)."""
    eps = available()
    numbers = [e.number for e in eps]
    if number not in numbers:
        return None, None
    i = numbers.index(number)
    return (eps[i - 1] if i > 0 else None), (eps[i + 1] if i + 1 < len(eps) else None)


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
