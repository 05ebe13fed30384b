"""Episode 7's recorded runs (``assets/lm/ep7_recorded.json.gz``): the races a page without the
model shows, and the table of every task and draft beside the live runs.

Each record is one task and one draft raced ``repeats`` times (``scripts/record_ep7_runs.py``); the
repeat with the median speedup ships whole, the others as their figures. Drafts are found by their
current keys (a recording made when the n-gram table was called ``learned`` reads as ``ngram``).
"""

from __future__ import annotations

import gzip
import json
import math
from functools import lru_cache

from ..lm.compare import Comparison, comparison_from_json
from ..lm.prompts import TASKS
from ..lm.race import speedup_verdict
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


#: The weight format the recorded runs were made with when the recording does not say: every
#: recording before the 4-bit option (``lm.model.WEIGHT_FORMATS``) loaded the model as
#: ``get_model()`` does by default, in float32.
RECORDED_WEIGHTS_DEFAULT = "f32"


def recorded_weights() -> str:
    """The weight format of the recorded runs (``"f32"`` or ``"q4"``): the recording's own
    ``meta["weights"]`` where it has one, else :data:`RECORDED_WEIGHTS_DEFAULT`."""
    return recorded_meta().get("weights", RECORDED_WEIGHTS_DEFAULT)


@lru_cache(maxsize=1)
def recorded_runs() -> dict[tuple[str, str], Comparison]:
    """(task, draft) -> the recorded Comparison, the repeat with the median speedup (empty if no
    recording ships)."""
    if not has_recording():
        return {}
    return {(r["task"], draft_key(r["draft"])): comparison_from_json(r["run"])
            for r in _recording()["runs"] if r["task"] in TASKS}


def recorded_repeats() -> dict[tuple[str, str], tuple[dict, ...]]:
    """(task, draft) -> every repeat's ``speedup, low, high, work_speedup, verdict, load_average``.

    The verdict is judged again from ``low`` and ``high`` by the one rule
    (:func:`..lm.race.speedup_verdict`), not read from the file, which holds the words of
    whatever rule the recording script had."""
    if not has_recording():
        return {}
    return {(r["task"], draft_key(r["draft"])): tuple(_judged(rep) for rep in r.get("repeats", ()))
            for r in _recording()["runs"]}


def median_draft_cost(draft: str) -> float | None:
    """The draft cost c of ``draft``'s recorded runs, the middle one over the tasks (the upper of
    the two middle ones for an even count, as Episode 7 quotes it), or None when none was
    recorded. It is measured inside real runs: each round's guesses, with the head catching up on
    the tokens the last pass accepted, after a pass of the big model."""
    costs = sorted(c.draft_cost for (_, d), c in recorded_runs().items() if d == draft_key(draft))
    return costs[len(costs) // 2] if costs else None


def _judged(rep: dict) -> dict:
    if "low" not in rep or "high" not in rep:
        return dict(rep)
    low, high = (math.nan if rep[e] is None else rep[e] for e in ("low", "high"))
    return {**rep, "verdict": speedup_verdict(low, high)}
