"""Core tier: speculative sampling keeps the big model's distribution exactly.

Chi-square tests use 100,000 seeded draws and reject at p-value < 0.001 (seeded, so
they are repeatable; with a true null a fresh seed would fail one time in 1,000).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specdec_playable.sim import sampling
from specdec_playable.sim.sampling import (acceptance_theory, chi_square, chi_square_sf,
                                           speculative_sample)

N = 100_000
ALPHA = 1e-3


def _random_pair(rng, v, zeros_in_q=False):
    p = rng.dirichlet(np.ones(v))
    q = rng.dirichlet(np.full(v, 0.5))
    if zeros_in_q:
        q[: v // 2] = 0.0  # the draft never proposes half the words the big model can say
        q /= q.sum()
    return p, q


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("zeros_in_q", [False, True], ids=["q-full", "q-with-zeros"])
def test_outputs_follow_p_not_q(seed, zeros_in_q):
    rng = np.random.default_rng(seed)
    p, q = _random_pair(rng, 6 + seed, zeros_in_q)
    r = speculative_sample(p, q, N, rng=rng)
    fit_p = chi_square(r.counts(), p)
    assert fit_p.p_value > ALPHA, fit_p
    # The same draws are wildly inconsistent with q: the test can tell the difference.
    fit_q = chi_square(r.counts(), q)
    assert fit_q.p_value < 1e-12
    # Proposals do come from q.
    assert chi_square(r.proposal_counts(), q).p_value > ALPHA


@pytest.mark.parametrize("seed", range(6))
def test_acceptance_rate_matches_sum_of_min(seed):
    rng = np.random.default_rng(100 + seed)
    p, q = _random_pair(rng, 8, zeros_in_q=seed % 2 == 1)
    r = speculative_sample(p, q, N, rng=rng)
    a = acceptance_theory(p, q)
    assert a == pytest.approx(np.minimum(p, q).sum())
    sd = math.sqrt(a * (1 - a) / N)
    assert abs(r.acceptance_rate - a) < 5 * sd + 1e-12  # 5 standard errors


def test_identical_models_accept_everything_and_disjoint_ones_nothing():
    p = [0.2, 0.3, 0.5, 0.0]
    r = speculative_sample(p, p, 1000, rng=0)
    assert r.accepted.all() and (r.samples == r.proposals).all()
    r = speculative_sample([0.5, 0.5, 0, 0], [0, 0, 0.25, 0.75], 1000, rng=0)
    assert not r.accepted.any() and set(r.samples.tolist()) <= {0, 1}


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 12), st.integers(0, 2**32 - 1))
def test_samples_never_land_where_p_is_zero(v, seed):
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.ones(v))
    p[rng.random(v) < 0.4] = 0.0
    if p.sum() == 0:
        p[0] = 1.0
    p /= p.sum()
    q = rng.dirichlet(np.ones(v))
    r = speculative_sample(p, q, 2000, rng=rng)
    assert (p[r.samples] > 0).all()
    assert (r.samples[r.accepted] == r.proposals[r.accepted]).all()


def test_same_seed_same_draws():
    a = speculative_sample([0.1, 0.9], [0.6, 0.4], 50, rng=7)
    b = speculative_sample([0.1, 0.9], [0.6, 0.4], 50, rng=7)
    assert (a.samples == b.samples).all() and (a.accepted == b.accepted).all()


@pytest.mark.parametrize("bad, match", [
    (dict(p=[0.5, 0.6]), "p_big must sum to 1"),
    (dict(q=[0.5, 0.5, 0.0]), "same length"),
    (dict(p=[1.5, -0.5]), r"p_big\[1\] must be a finite number >= 0"),
    (dict(q=[float("nan"), 1.0]), r"p_draft\[0\]"),
    (dict(p=[[0.5, 0.5]]), "1-D"),
    (dict(p="ab"), "1-D array"),
    (dict(n=0), r"n must be an integer in \[1, 10000000\]"),
    (dict(n=10**7 + 1), "n must be"),
    (dict(n=2.5), "n must be"),
])
def test_bad_input_is_refused_with_the_value_and_range(bad, match):
    args = dict(p=[0.5, 0.5], q=[0.3, 0.7], n=10) | bad
    with pytest.raises(ValueError, match=match):
        speculative_sample(args["p"], args["q"], args["n"], rng=0)


def test_sums_off_by_less_than_tolerance_are_renormalised():
    r = speculative_sample([0.5, 0.5 + 5e-10], [0.3, 0.7], 10, rng=0)
    assert r.p_big.sum() == pytest.approx(1.0, abs=1e-15)


# --- the chi-square p-value, without scipy ----------------------------------------------

# Critical values from standard chi-square tables (e.g. NIST/SEMATECH e-Handbook 1.3.6.7.4).
@pytest.mark.parametrize("x, df, sf", [
    (3.841458820694124, 1, 0.05), (6.634896601021214, 1, 0.01), (5.991464547107979, 2, 0.05),
    (11.070497693516351, 5, 0.05), (15.08627246938899, 5, 0.01), (18.307038053275146, 10, 0.05),
    (43.77297182574219, 30, 0.05), (124.34211340400407, 100, 0.05), (0.10153104426762156, 1, 0.75),
])
def test_chi_square_sf_matches_tables(x, df, sf):
    assert chi_square_sf(x, df) == pytest.approx(sf, rel=1e-9)


@pytest.mark.parametrize("x", [0.0, 0.3, 1.0, 2.5, 7.0, 30.0, 200.0])
def test_chi_square_sf_matches_closed_forms(x):
    assert chi_square_sf(x, 2) == pytest.approx(math.exp(-x / 2), rel=1e-12, abs=1e-300)
    assert chi_square_sf(x, 4) == pytest.approx(math.exp(-x / 2) * (1 + x / 2), rel=1e-12,
                                                abs=1e-300)
    assert chi_square_sf(x, 1) == pytest.approx(math.erfc(math.sqrt(x / 2)), rel=1e-10,
                                                abs=1e-300)


def test_chi_square_sf_edges_and_errors():
    assert chi_square_sf(0.0, 3) == 1.0
    assert chi_square_sf(float("inf"), 3) == 0.0
    with pytest.raises(ValueError, match="x must be"):
        chi_square_sf(-1.0, 3)
    with pytest.raises(ValueError, match="df must be"):
        chi_square_sf(1.0, 0)


def test_chi_square_statistic_by_hand():
    t = chi_square([30, 70], [0.5, 0.5])
    assert t.statistic == pytest.approx(16.0) and t.df == 1
    assert t.p_value == pytest.approx(math.erfc(math.sqrt(8.0)))
    # A count where the distribution says 0 can never come from it.
    t = chi_square([5, 5, 1], [0.5, 0.5, 0.0])
    assert t.statistic == math.inf and t.p_value == 0.0


def test_residual_is_the_normalised_excess():
    r = sampling.residual([0.5, 0.3, 0.2], [0.2, 0.3, 0.5])
    np.testing.assert_allclose(r, [1.0, 0.0, 0.0])
