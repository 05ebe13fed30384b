"""Core tier: adaptive draft-length policies on hand-made and bundled token streams."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hand_texts as texts
from specdec_playable.sim import adaptive, theory
from specdec_playable.sim.adaptive import (EstimateBestK, EstimateWithOffSwitch, FixedK,
                                           PlusTwoMinusOne, Stream, ema_update, plus_two_minus_one,
                                           race, run_policy)


def _stream(n):
    p = np.full(n, 0.5)
    p.setflags(write=False)
    return Stream(tuple(f"t{i}" for i in range(n)), p, (("test", 0, n),))


def _hits(pattern: str):
    """'1' = the draft guesses this token right, '0' = wrong."""
    return np.array([ch == "1" for ch in pattern])


# --- update rules --------------------------------------------------------------------------

def test_plus_two_minus_one_rule():
    seq = [(4, 4), (6, 6), (8, 3), (7, 0), (6, 6), (8, 8), (10, 10), (12, 12)]
    k, ks = 4, []
    for drafted, accepted in seq:
        k = plus_two_minus_one(k, drafted, accepted, k_max=12)
        ks.append(k)
    assert ks == [6, 8, 7, 6, 8, 10, 12, 12]
    k = 2
    for _ in range(5):
        k = plus_two_minus_one(k, k, 0)
    assert k == 1


def test_ema_update_by_hand():
    assert ema_update(0.5, 1, 1, 0.2) == pytest.approx(0.6)
    assert ema_update(0.5, 1, 0, 0.2) == pytest.approx(0.4)
    # Two hits then a miss: 0.5 -> 0.6 -> 0.68 -> 0.544.
    assert ema_update(0.5, 4, 2, 0.2) == pytest.approx(0.544)
    # Drafted 2, both kept: no miss judged.
    assert ema_update(0.5, 2, 2, 0.2) == pytest.approx(0.68)


# --- policies on hand-made streams ---------------------------------------------------------

def test_fixed_k_rounds_on_a_hand_made_stream():
    # 10 tokens; the draft misses token 2 and token 7.
    r = run_policy(FixedK(3), _stream(10), _hits("1101111011"), c=0.1)
    # Round 1 at 0: drafts 0..2, keeps 2, big model writes token 2 -> 3 tokens.
    # Round 2 at 3: drafts 3..5, keeps all 3, bonus token 6 -> 4 tokens.
    # Round 3 at 7: drafts 7..8 (capped: one token left for the big model), misses 7 -> 1 token.
    # Round 4 at 8: drafts 8 (cap), keeps it, bonus 9 -> 2 tokens.
    assert r.start.tolist() == [0, 3, 7, 8]
    assert r.k.tolist() == [3, 3, 3, 3]
    assert r.drafted.tolist() == [3, 3, 2, 1]
    assert r.accepted.tolist() == [2, 3, 0, 1]
    assert r.tokens.tolist() == [3, 4, 1, 2]
    np.testing.assert_allclose(r.cost, [1.3, 1.3, 1.2, 1.1])
    np.testing.assert_allclose(r.wall, np.cumsum([1.3, 1.3, 1.2, 1.1]))
    assert r.speedup == pytest.approx(10 / 4.9)
    assert r.output == tuple(f"t{i}" for i in range(10))


def test_plus_two_minus_one_policy_follows_its_rule():
    r = run_policy(PlusTwoMinusOne(k0=2, k_max=12), _stream(20), _hits("11" "111" "1" "0" + "1" * 13),
                   c=0.1)
    # k: 2 (all kept) -> 4; round at 3 drafts 3..6, misses 6 -> 3; round at 7 keeps all 3 -> 5.
    assert r.k.tolist()[:3] == [2, 4, 3]
    assert r.accepted.tolist()[:3] == [2, 3, 3]
    assert r.k.tolist()[3] == 5
    for k, nxt, d, a in zip(r.k, r.k[1:], r.drafted, r.accepted):
        assert nxt == plus_two_minus_one(int(k), int(d), int(a), 12)


def test_estimate_policy_picks_best_k_of_its_running_estimate():
    hits = _hits("1" * 30 + "0101001000" * 4)
    r = run_policy(EstimateBestK(alpha=0.2, start=0.6), _stream(len(hits)), hits, c=0.15)
    assert r.estimate[0] == 0.6 and r.k[0] == theory.best_k(0.6, 0.15, k_max=12)
    est = 0.6
    for k, e, d, a in zip(r.k, r.estimate, r.drafted, r.accepted):
        assert e == pytest.approx(est)
        assert k == theory.best_k(e, 0.15, k_max=12)
        est = ema_update(est, int(d), int(a), 0.2)
    # Long drafts while everything is accepted, short ones once the text turns hard.
    assert r.k[r.start < 30].max() >= 8 and r.k[-1] <= 3


def test_off_switch_turns_off_below_break_even_and_probes():
    hits = _hits("0" * 60 + "1" * 60)
    pol = EstimateWithOffSwitch(alpha=0.3, start=0.6, probe_every=4, probe_k=2)
    r = run_policy(pol, _stream(len(hits)), hits, c=0.3)
    off = r.k == 0
    assert off.any()
    # Off exactly when the estimate is below break-even for its best k (probes excepted).
    for k, e in zip(r.k, r.estimate):
        best = theory.best_k(e, 0.3, k_max=12)
        if k == 0:
            assert e < theory.break_even_q(best, 0.3)
        elif k != 2:
            assert e >= theory.break_even_q(best, 0.3)
    # While off: 4 plain rounds, then a probe of k = 2, again and again.
    ks = r.k[(r.start > 10) & (r.start < 55)].tolist()
    assert "0,0,0,0,2" in ",".join(map(str, ks))
    # When the text turns predictable a probe notices and speculation comes back.
    assert (r.k[r.start >= 70] > 2).any()


def test_off_switch_costs_one_pass_per_token_while_off():
    r = run_policy(EstimateWithOffSwitch(start=0.0), _stream(12), _hits("0" * 12), c=0.5)
    plain = r.k == 0
    assert (r.tokens[plain] == 1).all() and (r.cost[plain] == 1.0).all()


# --- the race on the bundled texts ---------------------------------------------------------

def test_stream_is_code_then_poem_then_json():
    s = texts.make_stream(repeats=2)
    assert [seg[0] for seg in s.segments] == ["code", "poem", "json"]
    assert s.segments[0][1] == 0 and s.segments[-1][2] == len(s) == len(s.q)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**32 - 1), st.floats(0.0, 1.0), st.integers(1, 12))
def test_every_policy_writes_exactly_the_stream(seed, c, k):
    stream = texts.make_stream()
    for r in race(stream, adaptive.default_policies(k), c, rng=seed):
        assert r.output == stream.tokens
        assert r.tokens.sum() == len(stream)
        assert (r.start == np.concatenate([[0], np.cumsum(r.tokens)[:-1]])).all()
        assert ((r.accepted <= r.drafted) & (r.drafted <= np.maximum(r.k, 0))).all()
        np.testing.assert_allclose(r.cost, 1 + r.drafted * c)


def test_policies_share_randomness():
    stream = texts.make_stream()
    a = race(stream, [FixedK(4), FixedK(4)], 0.15, rng=3)
    assert a[0].accepted.tolist() == a[1].accepted.tolist()
    b = race(stream, [FixedK(4)], 0.15, rng=3)
    assert b[0].accepted.tolist() == a[0].accepted.tolist()


@pytest.mark.slow
def test_adapting_beats_a_fixed_k_on_average_when_the_genre_changes():
    # 200 seeds of the default stream at c = 0.3: mean speedups (measured, not timed).
    stream = texts.make_stream(repeats=2)
    sp = np.array([[r.speedup for r in race(stream, adaptive.default_policies(4), 0.3, rng=s)]
                   for s in range(200)])
    mean = sp.mean(axis=0)
    assert mean[2] > mean[0] + 0.05 and mean[2] > mean[1] + 0.05
    assert mean[3] > mean[0]


def test_bad_inputs():
    with pytest.raises(ValueError, match="k must be an integer"):
        run_policy(FixedK(0), _stream(3), _hits("111"), c=0.1)
    with pytest.raises(ValueError, match="hits must have one entry"):
        run_policy(FixedK(2), _stream(3), _hits("11"), c=0.1)
    with pytest.raises(ValueError, match="c must be"):
        run_policy(FixedK(2), _stream(3), _hits("111"), c=-1)
    with pytest.raises(ValueError, match="repeats"):
        texts.make_stream(repeats=0)
