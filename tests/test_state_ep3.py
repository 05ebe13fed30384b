"""State tier, Episode 3: set the knobs, check what the state derives from the core."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specdec_playable.sim import theory
from specdec_playable.episodes.ep3.state import K_SLIDER_MAX, N_ROUNDS, QualityDial


def test_defaults_match_the_issue_and_simulate_once():
    s = QualityDial(rng=1)
    assert (s.q, s.k, s.c) == (0.80, 4, 0.10)
    assert s.runs == 1
    assert s.result.n_rounds == N_ROUNDS == 2000
    assert (s.result.q, s.result.k, s.result.c) == (0.80, 4, 0.10)


@pytest.mark.parametrize(("name", "bad"), [("q", 1.01), ("q", -0.1), ("k", 0), ("k", 17), ("c", 1.5)])
def test_knobs_refuse_values_outside_their_bounds(name, bad):
    s = QualityDial(rng=1)
    with pytest.raises(ValueError):
        setattr(s, name, bad)


def test_every_knob_is_documented():
    for name in ("q", "k", "c", "run_again"):
        p = QualityDial.param[name]
        assert p.label and p.doc


def test_changing_several_knobs_at_once_runs_one_fresh_batch():
    s = QualityDial(rng=2)
    s.param.update(q=0.5, k=8, c=0.2)
    assert s.runs == 2
    r = s.result
    assert (r.q, r.k, r.c) == (0.5, 8, 0.2)
    assert r.accepted.max() <= 8


def test_run_again_draws_new_rounds_at_the_same_knobs():
    s = QualityDial(rng=3)
    first = s.result
    s.run_again = True
    assert s.runs == 2
    assert (s.result.q, s.result.k, s.result.c) == (first.q, first.k, first.c)
    assert not np.array_equal(s.result.accepted, first.accepted)


def test_a_seeded_state_is_reproducible_and_leaves_global_numpy_alone():
    before = np.random.get_state()[1].copy()
    a, b = QualityDial(rng=11), QualityDial(rng=11)
    for s in (a, b):
        s.k = 7
        s.q = 0.6
    np.testing.assert_array_equal(a.result.accepted, b.result.accepted)
    np.testing.assert_array_equal(np.random.get_state()[1], before)


def test_unseeded_states_do_not_share_a_random_stream():
    a, b = QualityDial(), QualityDial()
    assert not np.array_equal(a.result.accepted, b.result.accepted)


def test_theory_values_come_from_the_core():
    s = QualityDial(rng=4, q=0.7, k=5, c=0.12)
    assert s.theory_speedup == theory.expected_speedup(0.7, 5, 0.12)
    assert s.theory_tokens_per_round == theory.expected_tokens_per_round(0.7, 5)
    assert s.best_k == theory.best_k(0.7, 0.12, k_max=K_SLIDER_MAX)
    np.testing.assert_array_equal(s.speedup_by_k,
                                  theory.expected_speedup(0.7, np.arange(1, K_SLIDER_MAX + 1), 0.12))
    np.testing.assert_array_equal(s.theory_pmf, theory.accepted_pmf(0.7, 5))
    assert s.best_speedup == s.speedup_by_k.max()


def test_best_k_at_the_defaults_is_six():
    # Theory at q = 0.8, c = 0.1: k = 6 gives 2.47x, k = 4 (the default) 2.40x.
    s = QualityDial(rng=5)
    assert s.best_k == 6
    assert round(s.best_speedup, 2) == 2.47
    assert round(s.theory_speedup, 2) == 2.40


def test_economics_are_tokens_per_round_over_cost_per_round():
    s = QualityDial(rng=6, q=0.65, k=6, c=0.2)
    r = s.result
    assert r.tokens_per_round == pytest.approx(r.accepted.mean() + 1)
    assert s.cost_per_round == pytest.approx(1 + 6 * 0.2) == r.cost_per_round
    assert r.speedup == pytest.approx(r.tokens_per_round / s.cost_per_round)


def test_measured_histogram_is_a_distribution_over_0_to_k():
    s = QualityDial(rng=7, k=9)
    pmf = s.measured_pmf
    assert pmf.shape == (10,)
    assert pmf.sum() == pytest.approx(1.0)
    assert (pmf * N_ROUNDS).round().astype(int).tolist() == s.result.accepted_histogram().tolist()


@pytest.mark.parametrize(("q", "k", "c"), [(0.8, 4, 0.1), (0.3, 16, 0.1), (0.95, 12, 0.05),
                                           (0.5, 1, 0.0), (0.1, 3, 0.9)])
def test_seeded_measurement_covers_the_theory(q, k, c):
    s = QualityDial(rng=20240, q=q, k=k, c=c)
    r = s.result
    assert r.ci_low <= s.theory_speedup <= r.ci_high


def test_measured_histogram_matches_the_theory_pmf():
    # 2,000 rounds: each share within 4 standard errors of its theory probability.
    s = QualityDial(rng=8, q=0.7, k=6)
    p = s.theory_pmf
    se = np.sqrt(p * (1 - p) / N_ROUNDS)
    assert np.all(np.abs(s.measured_pmf - p) <= 4 * se + 1e-12)


def test_slower_flags_follow_the_measurement_and_the_theory():
    slow = QualityDial(rng=9, q=0.1, k=16, c=0.5)
    assert slow.slower and slow.theory_slower
    fast = QualityDial(rng=9, q=0.9, k=4, c=0.05)
    assert not fast.slower and not fast.theory_slower


@settings(max_examples=40, deadline=None)
@given(q=st.floats(0, 1), k=st.integers(1, K_SLIDER_MAX), c=st.floats(0, 1), seed=st.integers(0, 2**32 - 1))
def test_best_k_is_never_beaten_and_the_result_matches_the_knobs(q, k, c, seed):
    s = QualityDial(rng=seed, q=q, k=k, c=c)
    assert s.best_speedup >= s.theory_speedup - 1e-12
    assert s.result.accepted_histogram().shape == (k + 1,)
    assert s.result.k == k
    assert s.slower == (s.result.speedup < 1.0)
