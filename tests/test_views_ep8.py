"""Episode 8's batch slider: it steps by powers of two and stays bound to the state both ways."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from specdec_playable.episodes.ep8.state import BATCH_MAX, BusyAndTrees
from specdec_playable.episodes.ep8.view import BATCH_STEPS, BatchSlider, BusyTreesView, batch_steps


def test_the_stops_are_the_powers_of_two_up_to_the_largest_batch():
    assert BATCH_STEPS[0] == 1 and BATCH_STEPS[-1] == BATCH_MAX
    assert all(b == 2 * a for a, b in zip(BATCH_STEPS, BATCH_STEPS[1:]))


@given(st.integers(1, BATCH_MAX))
def test_a_batch_between_powers_is_one_more_stop_in_its_place(batch):
    stops = batch_steps(batch)
    assert batch in stops and list(stops) == sorted(stops)
    assert set(stops) - {batch} == set(BATCH_STEPS) - {batch}


def test_moving_the_slider_sets_the_state_and_a_link_value_moves_the_slider():
    s = BusyAndTrees(rng=0)
    b = BatchSlider(s)
    assert (b.widget.start, b.widget.end, b.widget.value) == (0, len(BATCH_STEPS) - 1, 0)
    for i, want in enumerate(BATCH_STEPS):
        b.widget.value = i
        assert s.batch == want
    s.batch = 199  # from a link or the API: shown as it is, one more stop between 128 and 256
    assert b.stops[b.widget.value] == 199 and b.widget.end == len(BATCH_STEPS)
    assert b.format.args["stops"] == list(b.stops)
    b.widget.value -= 1  # one step down is the power of two below it, and the extra stop goes
    assert s.batch == 128 and b.stops == BATCH_STEPS and b.widget.end == len(BATCH_STEPS) - 1
    s.batch = 32
    assert BATCH_STEPS[b.widget.value] == 32


@pytest.mark.parametrize("batch", [1, 8, 100, BATCH_MAX])
def test_the_view_opens_with_the_slider_at_the_states_batch(batch):
    view = BusyTreesView(state=BusyAndTrees(rng=0, batch=batch))
    w = view.batch_slider.widget
    assert view.batch_slider.stops[w.value] == batch and w.label == "Batch size B"
