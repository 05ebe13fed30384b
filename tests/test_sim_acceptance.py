"""Core tier: one acceptance rate (judged vs accepted drafts) and one seed range for the whole project."""

from __future__ import annotations

import math

import numpy as np
import pytest

import hand_texts as texts
from specdec_playable.sim import adaptive, relay, sampling
from specdec_playable.sim.acceptance import Acceptance
from specdec_playable.sim.seeds import SEED_MAX, draw_seed


def test_a_round_judges_its_drafts_up_to_the_first_miss():
    # Rounds: all 4 kept (4 judged); 1 kept then a miss (2 judged); a miss at once (1 judged).
    a = Acceptance.of_rounds(drafted=[4, 4, 2], accepted=[4, 1, 0])
    assert (a.judged, a.accepted) == (7, 5)
    assert a.rate == pytest.approx(5 / 7)


def test_nothing_judged_has_no_rate():
    assert math.isnan(Acceptance(0, 0).rate)
    assert math.isnan(Acceptance.of_rounds([], []).rate)
    assert math.isnan(relay.run([], 0.5, 4, rng=0).acceptance_rate)


@pytest.mark.parametrize("judged, accepted", [(2, 3), (1, -1)])
def test_impossible_counts_are_refused(judged, accepted):
    with pytest.raises(ValueError, match="accepted <= judged"):
        Acceptance(judged, accepted)


def test_relay_race_and_sampling_count_the_same_way():
    r = relay.run(list("abcdefghij") * 20, 0.6, 4, rng=3)
    assert r.acceptance == Acceptance.of_rounds(r.rounds["drafted"], r.rounds["accepted"])
    stream = texts.make_stream(("js-loop",))
    run = adaptive.race(stream, [adaptive.FixedK(3)], 0.1, rng=1)[0]
    assert run.acceptance == Acceptance.of_rounds(run.drafted, run.accepted)
    s = sampling.speculative_sample([0.5, 0.5], [0.9, 0.1], 1000, rng=2)
    assert s.acceptance == Acceptance(1000, int(s.accepted.sum()))
    assert s.acceptance_rate == float(s.accepted.mean())


def test_seeds_are_in_range_reproducible_and_avoid_the_current_one():
    seeds = [draw_seed(np.random.default_rng(7)) for _ in range(3)]
    assert len(set(seeds)) == 1 and 0 <= seeds[0] <= SEED_MAX
    rng = np.random.default_rng(0)
    first = draw_seed(np.random.default_rng(0))
    assert draw_seed(rng, avoid=first) != first  # the first draw equals `first`; it is skipped
