"""Episode 7's recorded runs (``assets/lm/ep7_recorded.json.gz``): the races a page without the
model shows, and the table of every task and draft beside the live runs.

Each record is one task and one draft raced ``repeats`` times (``scripts/record_ep7_runs.py``); the
repeat with the median speedup ships whole, the others as their figures. Drafts are found by their
current keys (a recording made when the n-gram table was called ``learned`` reads as ``ngram``).
"""

from __future__ import annotations

import gzip
import json
from functools import lru_cache

from ..lm.compare import Comparison, comparison_from_json
from ..lm.prompts import TASKS
from ..lm.registry import draft_key
from ..shipped import asset_path

RECORDED = "lm/ep7_recorded.json.gz"


def has_recording() -> bool:
    """Whether the recording ships with this copy of the project."""
    try:
        asset_path(RECORDED)
    except FileNotFoundError:
        return False
    return True


@lru_cache(maxsize=1)
def _recording() -> dict:
    with gzip.open(asset_path(RECORDED), "rt", encoding="utf-8") as fh:
        return json.load(fh)


def recorded_meta() -> dict:
    """When, where and with which settings the recorded runs were made."""
    return _recording()["meta"]


@lru_cache(maxsize=1)
def recorded_runs() -> dict[tuple[str, str], Comparison]:
    """(task, draft) -> the recorded Comparison, the repeat with the median speedup (empty if no
    recording ships)."""
    if not has_recording():
        return {}
    return {(r["task"], draft_key(r["draft"])): comparison_from_json(r["run"])
            for r in _recording()["runs"] if r["task"] in TASKS}


def recorded_repeats() -> dict[tuple[str, str], tuple[dict, ...]]:
    """(task, draft) -> every repeat's ``speedup, low, high, work_speedup, verdict, load_average``."""
    if not has_recording():
        return {}
    return {(r["task"], draft_key(r["draft"])): tuple(r.get("repeats", ()))
            for r in _recording()["runs"]}


def median_draft_cost(draft: str) -> float | None:
    """The draft cost c of ``draft``'s recorded runs, the middle one over the tasks (the upper of
    the two middle ones for an even count, as Episode 7 quotes it), or None when none was
    recorded. It is measured inside real runs: each round's guesses, with the head catching up on
    the tokens the last pass accepted, after a pass of the big model."""
    costs = sorted(c.draft_cost for (_, d), c in recorded_runs().items() if d == draft_key(draft))
    return costs[len(costs) // 2] if costs else None
