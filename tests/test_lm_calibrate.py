"""lm.calibrate: the start-up measurement of this machine's pass times is bounded and well formed.

Timings are not asserted (they belong to benchmarks/bench_lm.py); what is asserted is the shape
of the result, its bounds in rounds and time, and its arithmetic.
"""

from __future__ import annotations

import pytest

from specdec_playable.lm import get_model
from specdec_playable.lm.calibrate import PassTimes, measure_pass_times


@pytest.fixture(scope="module")
def model():
    return get_model()


def test_sizes_sorted_medians_positive_and_rounds_bounded(model):
    t = measure_pass_times(model, (5, 1, 2, 5), budget_s=0.01, min_repeats=2, max_repeats=4)
    assert t.n_positions == (1, 2, 5)
    assert len(t.median_ms) == 3 and all(ms > 0 for ms in t.median_ms)
    assert t.repeats == 2  # the budget was spent after the first round, so min_repeats decides
    assert t.ratio(1) == 1.0 and t.at(5) == t.median_ms[2]


def test_max_repeats_caps_a_generous_budget(model):
    t = measure_pass_times(model, (1,), budget_s=60, min_repeats=1, max_repeats=3)
    assert t.repeats == 3 and t.seconds < 60


def test_stopped_ends_after_one_round(model):
    t = measure_pass_times(model, (1, 2), budget_s=60, min_repeats=5, max_repeats=9,
                           stopped=lambda: True)
    assert t.repeats == 1


@pytest.mark.parametrize("kwargs", [dict(ns=()), dict(ns=(0, 1)), dict(ns=(65,)),
                                    dict(min_repeats=0), dict(min_repeats=5, max_repeats=4),
                                    dict(budget_s=0)])
def test_rejects_bad_settings(model, kwargs):
    with pytest.raises(ValueError):
        measure_pass_times(model, **kwargs)


def test_at_names_the_sizes_it_has():
    t = PassTimes((1, 5), (20.0, 25.0), repeats=3, seconds=1.0, threads=1, kernel="numba")
    assert t.ratio(5) == 1.25
    with pytest.raises(ValueError, match=r"\(1, 5\)"):
        t.at(9)
