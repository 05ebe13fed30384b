"""The episodes, in order: one package each (``epN/``: state, view, words, page, practice and its
stylesheet) and this registry of their records.

Adding an episode is one folder and one line in :data:`EPISODES`. A page for one session or
notebook cell::

    import panel as pn
    pn.extension()
    from specdec_playable.episodes import ep1
    ep1.page()
"""

from __future__ import annotations

from ..kit.episode import Episode
from . import ep1, ep2, ep3, ep4, ep5, ep6, ep7, ep8
from .nav import by_number, neighbours

#: Every episode of the series, in order.
EPISODES: tuple[Episode, ...] = (
    ep1.EPISODE,
    ep2.EPISODE,
    ep3.EPISODE,
    ep4.EPISODE,
    ep5.EPISODE,
    ep6.EPISODE,
    ep7.EPISODE,
    ep8.EPISODE,
)

__all__ = ["EPISODES", "Episode", "by_number", "neighbours"]
