"""The relay: its guarantee as a property, and its clock arithmetic exactly."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specdec_playable.sim import relay

SEED = 20230518
BIG, STEP = 600.0, 60.0  # the defaults of relay.run

token_lists = st.lists(st.text(min_size=0, max_size=4), min_size=0, max_size=200)


@st.composite
def relay_inputs(draw):
    tokens = draw(token_lists)
    per_token = draw(st.booleans())
    probability = st.floats(0.0, 1.0)
    if per_token:
        g = np.array(draw(st.lists(probability, min_size=len(tokens), max_size=len(tokens))), dtype=float)
    else:
        g = draw(probability)
    k = draw(st.integers(1, 12))
    seed = draw(st.integers(0, 2**63 - 1))
    return tokens, g, k, seed


def text(n: int) -> list[str]:
    return [f"w{i}" for i in range(n)]


def judged_tokens(result) -> list[int]:
    """Positions written by the big model: accepted drafts, corrections, bonuses."""
    return result.events.of_kind("accepted", "correction", "bonus").token.tolist()


# --- the guarantee ----------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(relay_inputs())
def test_output_is_always_the_big_models_text(inputs):
    tokens, g, k, seed = inputs
    r = relay.run(tokens, g, k, rng=seed)
    assert r.output == tuple(tokens)


@settings(max_examples=150, deadline=None)
@given(relay_inputs())
def test_invariants_of_every_run(inputs):
    tokens, g, k, seed = inputs
    n = len(tokens)
    r = relay.run(tokens, g, k, rng=seed)
    ev, rounds = r.events, r.rounds

    # Every position is written exactly once, by an accepted draft, a correction or a bonus.
    assert sorted(judged_tokens(r)) == list(range(n))
    # Events come sorted by start, and none ends before it starts.
    assert (np.diff(ev.start_ms) >= 0).all()
    assert (ev.end_ms >= ev.start_ms).all()
    # Rounds tile the wall clock back to back; each costs its drafts plus one pass.
    durations = rounds["end_ms"] - rounds["start_ms"]
    np.testing.assert_allclose(durations, rounds["drafted"] * STEP + BIG)
    if r.n_rounds:
        assert rounds["start_ms"][0] == 0.0
        np.testing.assert_array_equal(rounds["start_ms"][1:], rounds["end_ms"][:-1])
        assert r.wall_ms == rounds["end_ms"][-1]
    assert r.wall_ms == pytest.approx(durations.sum())
    assert r.baseline_ms == n * BIG
    assert rounds["tokens"].sum() == n
    np.testing.assert_array_equal(rounds["first_token"], np.cumsum(rounds["tokens"]) - rounds["tokens"])
    assert ((rounds["drafted"] >= 1) & (rounds["drafted"] <= k)).all()
    assert ((rounds["accepted"] >= 0) & (rounds["accepted"] <= rounds["drafted"])).all()
    # One verify pass and `drafted` draft steps per round.
    assert len(ev.of_kind("verify")) == r.n_rounds
    assert len(ev.of_kind("draft")) == rounds["drafted"].sum()
    assert len(ev.of_kind("accepted")) == rounds["accepted"].sum()


# --- clock arithmetic -------------------------------------------------------------


@pytest.mark.parametrize("k", [1, 3, 5, 12])
def test_q_zero_costs_a_full_round_per_token(k):
    n = 20
    r = relay.run(text(n), 0.0, k, rng=SEED)
    rounds = r.rounds
    assert r.n_rounds == n
    np.testing.assert_array_equal(rounds["tokens"], 1)
    np.testing.assert_array_equal(rounds["accepted"], 0)
    # The draft never runs past the end of the text: d = min(k, tokens left).
    drafted = np.minimum(k, n - np.arange(n))
    np.testing.assert_array_equal(rounds["drafted"], drafted)
    durations = rounds["end_ms"] - rounds["start_ms"]
    full = drafted == k
    np.testing.assert_array_equal(durations[full], k * STEP + BIG)
    np.testing.assert_array_equal(durations, drafted * STEP + BIG)
    # Events agree with the rounds table.
    ev = r.events
    assert len(ev.of_kind("accepted")) == len(ev.of_kind("bonus")) == 0
    corr = ev.of_kind("correction")
    assert corr.token.tolist() == list(range(n))
    np.testing.assert_array_equal(corr.start_ms, rounds["end_ms"])
    rej = ev.of_kind("rejected")
    assert rej.token.tolist() == list(range(n))
    assert len(ev.of_kind("discarded")) == (drafted - 1).sum()
    verify = ev.of_kind("verify")
    np.testing.assert_array_equal(verify.end_ms - verify.start_ms, BIG)
    np.testing.assert_array_equal(verify.start_ms, rounds["start_ms"] + drafted * STEP)
    assert r.wall_ms == (drafted * STEP + BIG).sum()
    assert r.baseline_ms == n * BIG


@pytest.mark.parametrize("k", [1, 3, 5, 12])
def test_q_one_yields_k_plus_one_per_round(k):
    m = 4
    n = m * (k + 1)
    r = relay.run(text(n), 1.0, k, rng=SEED)
    assert r.n_rounds == m
    np.testing.assert_array_equal(r.rounds["tokens"], k + 1)
    np.testing.assert_array_equal(r.rounds["accepted"], k)
    bonus = r.events.of_kind("bonus")
    assert bonus.token.tolist() == [(j + 1) * (k + 1) - 1 for j in range(m)]
    assert len(r.events.of_kind("rejected", "discarded", "correction")) == 0
    assert r.wall_ms == m * (k * STEP + BIG)
    assert r.speedup == pytest.approx(n * BIG / (m * (k * STEP + BIG)))
    assert r.acceptance_rate == 1.0


def test_no_bonus_past_the_end_of_the_text():
    # 3 tokens, k = 2, all guessed: round 0 writes 2 + bonus, nothing left over.
    r = relay.run(["a", "b", "c"], 1.0, 2, rng=SEED)
    assert r.wall_ms == 2 * STEP + BIG
    r = relay.run(["a", "b"], 1.0, 2, rng=SEED)
    assert r.n_rounds == 1
    assert r.rounds["tokens"].tolist() == [2]
    assert len(r.events.of_kind("bonus")) == 0


def test_per_token_q_controls_each_position():
    n, k = 12, 4
    g = np.ones(n)
    g[[2, 8]] = 0.0  # round 0 misses 2; round 1 drafts 3..6, all hit, bonus 7; round 2 misses 8
    r = relay.run(text(n), g, k, rng=SEED)
    assert r.events.of_kind("rejected").token.tolist() == [2, 8]
    assert r.events.of_kind("correction").token.tolist() == [2, 8]
    assert r.output == tuple(text(n))


def test_custom_pass_times_and_decoys():
    n = 5
    decoys = [f"x{i}" for i in range(n)]
    r = relay.run(text(n), 0.0, 2, rng=SEED, big_pass_ms=100.0, draft_step_ms=7.0, decoys=decoys)
    assert r.baseline_ms == 500.0
    np.testing.assert_allclose(r.rounds["end_ms"] - r.rounds["start_ms"], r.rounds["drafted"] * 7.0 + 100.0)
    drafts = r.events.of_kind("draft")
    assert set(drafts.text.tolist()) <= set(decoys)
    np.testing.assert_allclose(drafts.end_ms - drafts.start_ms, 7.0)


def test_empty_text():
    for g in (0.5, [], np.array([])):
        r = relay.run([], g, 4, rng=SEED)
        assert r.output == ()
        assert r.n_rounds == 0 and len(r.events) == 0
        assert r.wall_ms == r.baseline_ms == 0.0
        assert r.speedup == 1.0


# --- determinism ------------------------------------------------------------------


def test_same_seed_same_events():
    tokens = text(80)
    a = relay.run(tokens, 0.7, 5, rng=SEED)
    b = relay.run(tokens, 0.7, 5, rng=np.random.default_rng(SEED))
    assert a.events.to_dict() == b.events.to_dict()
    for key in a.rounds:
        np.testing.assert_array_equal(a.rounds[key], b.rounds[key])


def test_different_seeds_give_different_events():
    tokens = text(80)
    a = relay.run(tokens, 0.7, 5, rng=SEED)
    b = relay.run(tokens, 0.7, 5, rng=SEED + 1)
    assert a.events.to_dict() != b.events.to_dict()
    assert a.output == b.output


def test_acceptance_rate_is_near_q():
    # 20,000 judged-or-not positions at g = 0.7: the rate of accepted among
    # judged drafts is within 0.02 of 0.7 (about 5 standard errors).
    r = relay.run(text(20_000), 0.7, 4, rng=SEED)
    assert abs(r.acceptance_rate - 0.7) < 0.02
