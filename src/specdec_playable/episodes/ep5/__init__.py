"""Episode 5: the break-even map, where speculation backfires.

A package of its own: ``state.py`` (the page's ``param`` class), ``view.py`` (its views and
figures), ``words.py`` (sentences computed from its numbers), ``page.py`` (the layout),
``practice.py`` (try-this steps and questions) and its stylesheet. :data:`EPISODE` is its record
in the registry (``episodes/__init__.py``).
"""

from __future__ import annotations

from ...kit.episode import Episode
from . import page as _page, practice, words
from .page import NUMBER, SLUG, URL_PARAMS, page
from .state import BreakEvenMap

EPISODE = Episode(
    number=NUMBER, slug=SLUG, make_page=page, state=BreakEvenMap, objectives=_page.OBJECTIVES,
    url_params=URL_PARAMS, exercises=practice.EXERCISES, misconception=practice.MISCONCEPTION,
    discuss=practice.DISCUSS, title_=_page.TITLE, summary_=_page.SUMMARY,
    try_this_=practice.TRY_THIS, steps_=practice.TRY_STEPS, summary_sentence=words.summary_sentence,
    summary_link=words.SUMMARY_LINK)

__all__ = ["EPISODE", "page"]
