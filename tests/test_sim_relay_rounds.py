"""The relay's clock arithmetic round by round, in mixed runs (Episode 2 shows these clocks).

tests/test_sim_relay.py covers the extremes (every draft wrong, every draft
right); here good and bad rounds alternate within one run, worked out by hand,
and a property checks every round of random runs.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from specdec_playable.sim import relay

BIG, STEP = 600.0, 60.0


def test_a_worked_run_round_by_round():
    # k = 3 over 10 tokens; the draft misses positions 0 and 5 and nothing else.
    #   round 0: drafts 0-2, 0 wrong            -> 0 accepted + correction = 1 token   (3*60+600 = 780 ms)
    #   round 1: drafts 1-3, all right          -> 3 accepted + bonus 4   = 4 tokens  (780 ms)
    #   round 2: drafts 5-7, 5 wrong            -> 1 token                             (780 ms)
    #   round 3: drafts 6-8, all right          -> 3 + bonus 9            = 4 tokens  (780 ms)
    g = np.ones(10)
    g[[0, 5]] = 0.0
    r = relay.run([f"t{i}" for i in range(10)], g, 3, rng=0, decoys=[f"x{i}" for i in range(10)])
    rounds = r.rounds
    assert rounds["accepted"].tolist() == [0, 3, 0, 3]
    assert rounds["tokens"].tolist() == [1, 4, 1, 4]
    assert rounds["first_token"].tolist() == [0, 1, 5, 6]
    assert rounds["start_ms"].tolist() == [0.0, 780.0, 1560.0, 2340.0]
    assert rounds["end_ms"].tolist() == [780.0, 1560.0, 2340.0, 3120.0]
    assert r.wall_ms == 3120.0 and r.baseline_ms == 6000.0
    assert r.speedup == 6000.0 / 3120.0
    # The verdicts are stamped at the end of their pass; drafts at 60 ms steps.
    ev = r.events
    corr = ev.of_kind("correction")
    assert corr.token.tolist() == [0, 5] and corr.start_ms.tolist() == [780.0, 2340.0]
    bonus = ev.of_kind("bonus")
    assert bonus.token.tolist() == [4, 9] and bonus.start_ms.tolist() == [1560.0, 3120.0]
    assert ev.of_kind("rejected").text.tolist() == ["x0", "x5"]
    assert ev.of_kind("discarded").token.tolist() == [1, 2, 6, 7]
    d1 = ev.where((ev.kind == "draft") & (ev.round == 1))
    assert d1.start_ms.tolist() == [780.0, 840.0, 900.0]
    assert d1.text.tolist() == ["t1", "t2", "t3"]
    v = ev.of_kind("verify")
    assert v.start_ms.tolist() == [180.0, 960.0, 1740.0, 2520.0]


def test_a_bad_round_costs_more_than_plain_decoding_a_good_one_less():
    for k in (1, 4, 12):
        bad = relay.run(["a"] * 20, 0.0, k, rng=0).rounds
        assert bad["end_ms"][0] - bad["start_ms"][0] == k * STEP + BIG > BIG * bad["tokens"][0]
        good = relay.run(["a"] * 20, 1.0, k, rng=0).rounds
        assert good["tokens"][0] == k + 1
        assert good["end_ms"][0] - good["start_ms"][0] == k * STEP + BIG < BIG * (k + 1)


@st.composite
def runs(draw):
    n = draw(st.integers(0, 120))
    g = draw(st.floats(0.0, 1.0))
    k = draw(st.integers(1, 12))
    seed = draw(st.integers(0, 2**32 - 1))
    return n, g, k, seed


@settings(max_examples=200, deadline=None)
@given(runs())
def test_every_round_follows_the_rule(args):
    n, g, k, seed = args
    r = relay.run([f"w{i}" for i in range(n)], g, k, rng=seed)
    rd = r.rounds
    left = n - rd["first_token"]
    cost = rd["end_ms"] - rd["start_ms"]
    for i in range(r.n_rounds):
        d, a, made = int(rd["drafted"][i]), int(rd["accepted"][i]), int(rd["tokens"][i])
        assert d == min(k, left[i])
        assert cost[i] == d * STEP + BIG
        if a == 0:                       # first draft rejected: one token for the round
            assert made == 1
        elif a == d and d < left[i]:     # all accepted, text left: the bonus token
            assert made == d + 1
        elif a == d:                     # all accepted at the end of the text: no bonus
            assert made == d
        else:                            # accepted prefix plus the correction
            assert made == a + 1
    # The running clocks Episode 2 shows: wall clock at each round end, big model alone.
    alone = np.cumsum(rd["tokens"]) * BIG
    if r.n_rounds:
        np.testing.assert_array_equal(rd["end_ms"], np.cumsum(cost))
        assert alone[-1] == r.baseline_ms and rd["end_ms"][-1] == r.wall_ms
