"""Closed-form theory against published numbers, direct sums and brute force."""

from __future__ import annotations

import math

import numpy as np
import pytest

from specdec_playable.sim import theory

Q_GRID = np.linspace(0.0, 1.0, 41)
K_GRID = np.arange(1, 17)


def direct_tokens(q: float, k: int) -> float:
    """sum_{i=0..k} q**i, summed term by term (math.fsum: correctly rounded)."""
    return math.fsum(q**i for i in range(k + 1))


# --- expected_tokens_per_round / expected_speedup ------------------------------


@pytest.mark.parametrize(
    ("q", "k", "expected"),
    [(0.8, 5, 3.69), (0.9, 10, 6.86)],
    ids=["q0.8-k5", "q0.9-k10"],
)
def test_leviathan_table1_speedup_at_free_draft(q, k, expected):
    # Leviathan, Kalman & Matias (2023), Table 1: expected tokens per round,
    # which is the speedup when drafting costs nothing (c = 0).
    assert round(theory.expected_speedup(q, k, 0.0), 2) == expected
    assert round(theory.expected_tokens_per_round(q, k), 2) == expected


@pytest.mark.parametrize("k", [1, 2, 5, 16, 64])
def test_perfect_draft_yields_k_plus_one_exactly(k):
    assert theory.expected_tokens_per_round(1.0, k) == k + 1
    assert theory.expected_speedup(1.0, k, 0.0) == k + 1


@pytest.mark.parametrize("k", [1, 2, 5, 16, 64])
def test_useless_draft_yields_one_token(k):
    assert theory.expected_tokens_per_round(0.0, k) == 1.0
    assert theory.expected_speedup(0.0, k, 0.25) == pytest.approx(1.0 / (1.0 + 0.25 * k), rel=1e-15)


def test_matches_direct_sum_on_grid():
    got = theory.expected_tokens_per_round(Q_GRID[:, None], K_GRID[None, :])
    want = np.array([[direct_tokens(q, k) for k in K_GRID] for q in Q_GRID])
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=0.0)


@pytest.mark.parametrize("eps", [1e-6, 1e-9, 1e-12, 1e-15])
@pytest.mark.parametrize("k", [1, 5, 64])
def test_no_cancellation_near_one(eps, k):
    # The naive (1 - q**(k+1)) / (1 - q) loses most digits here.
    q = 1.0 - eps
    got = theory.expected_tokens_per_round(q, k)
    assert got == pytest.approx(direct_tokens(q, k), rel=1e-12)
    assert got <= k + 1


def test_broadcasting_equals_scalar_calls():
    q = np.array([0.0, 0.3, 0.8, 0.99, 1.0])[:, None, None]
    k = np.array([1, 4, 10])[None, :, None]
    c = np.array([0.0, 0.05, 1.5])[None, None, :]
    arr = theory.expected_speedup(q, k, c)
    assert arr.shape == (5, 3, 3)
    for i, j, m in np.ndindex(arr.shape):
        scalar = theory.expected_speedup(float(q[i, 0, 0]), int(k[0, j, 0]), float(c[0, 0, m]))
        assert isinstance(scalar, float)
        assert arr[i, j, m] == scalar
    tokens = theory.expected_tokens_per_round(q[:, :, 0], k[:, :, 0])
    np.testing.assert_array_equal(tokens, arr[:, :, 0])


def test_scalar_in_scalar_out_and_lists_accepted():
    assert isinstance(theory.expected_tokens_per_round(0.5, 3), float)
    out = theory.expected_tokens_per_round([0.5, 0.5], [3, 3])
    assert isinstance(out, np.ndarray)
    np.testing.assert_array_equal(out, [1.875, 1.875])


def test_speedup_is_tokens_over_round_cost():
    q, k, c = 0.7, 6, 0.2
    assert theory.expected_speedup(q, k, c) == pytest.approx(direct_tokens(q, k) / (1 + k * c), rel=1e-14)


# --- break_even_q ---------------------------------------------------------------


@pytest.mark.parametrize(("k", "expected"), [(1, 0.15), (2, 0.24), (4, 0.38), (6, 0.48)])
def test_break_even_published_values(k, expected):
    assert round(theory.break_even_q(k, 0.15), 2) == expected


@pytest.mark.parametrize("k", [1, 2, 4, 6, 16, 64])
@pytest.mark.parametrize("c", [0.01, 0.15, 0.5, 0.99, 1.0])
def test_speedup_at_break_even_is_one(k, c):
    q = theory.break_even_q(k, c)
    assert 0.0 <= q <= 1.0
    assert abs(theory.expected_speedup(q, k, c) - 1.0) < 1e-9


@pytest.mark.parametrize("c", [1.0 + 1e-9, 1.5, 10.0])
def test_break_even_is_nan_when_draft_costs_more_than_a_pass(c):
    assert math.isnan(theory.break_even_q(4, c))


@pytest.mark.parametrize("k", [1, 4, 64])
def test_break_even_is_zero_for_free_draft(k):
    assert theory.break_even_q(k, 0.0) == 0.0


def test_break_even_broadcasts():
    k = np.array([1, 2, 4, 6])
    c = np.array([0.0, 0.15, 1.5])[:, None]
    got = theory.break_even_q(k, c)
    assert got.shape == (3, 4)
    np.testing.assert_array_equal(got[0], 0.0)
    np.testing.assert_allclose(got[1], [0.15, 0.2416198487, 0.3799488670, 0.4766251429], atol=1e-9)
    assert np.isnan(got[2]).all()
    for i, j in np.ndindex(got.shape):
        scalar = theory.break_even_q(int(k[j]), float(c[i, 0]))
        assert scalar == got[i, j] or (math.isnan(scalar) and math.isnan(got[i, j]))


# --- best_k ---------------------------------------------------------------------


@pytest.mark.parametrize("q", [0.0, 0.2, 0.5, 0.8, 0.9, 0.95, 1.0])
@pytest.mark.parametrize("c", [0.0, 0.01, 0.05, 0.1, 0.3, 1.0, 3.0])
@pytest.mark.parametrize("k_max", [1, 8, 16])
def test_best_k_is_brute_force_argmax(q, c, k_max):
    speedups = [direct_tokens(q, k) / (1 + k * c) for k in range(1, k_max + 1)]
    best = max(speedups)
    # Ties (within rounding) go to the shorter draft.
    want = 1 + next(i for i, s in enumerate(speedups) if s >= best * (1 - 1e-12))
    got = theory.best_k(q, c, k_max)
    assert isinstance(got, int)
    assert got == want


def test_best_k_broadcasts_like_scalar_calls():
    q = np.array([0.3, 0.8, 0.95])[:, None]
    c = np.array([0.02, 0.1, 0.5])
    got = theory.best_k(q, c)
    assert got.shape == (3, 3)
    for i, j in np.ndindex(got.shape):
        assert got[i, j] == theory.best_k(float(q[i, 0]), float(c[j]))


def test_best_k_free_perfect_draft_is_longest():
    assert theory.best_k(1.0, 0.0, 12) == 12


# --- accepted_pmf ---------------------------------------------------------------


@pytest.mark.parametrize("q", [0.0, 0.1, 0.5, 0.8, 0.999, 1.0])
@pytest.mark.parametrize("k", [1, 3, 10, 64])
def test_accepted_pmf_sums_to_one_with_theory_mean(q, k):
    p = theory.accepted_pmf(q, k)
    assert p.shape == (k + 1,)
    assert (p >= 0).all()
    assert p.sum() == pytest.approx(1.0, abs=1e-12)
    mean = float(np.arange(k + 1) @ p)
    assert mean == pytest.approx(theory.expected_tokens_per_round(q, k) - 1.0, rel=1e-12, abs=1e-12)


def test_accepted_pmf_endpoints():
    np.testing.assert_array_equal(theory.accepted_pmf(0.0, 4), [1, 0, 0, 0, 0])
    np.testing.assert_array_equal(theory.accepted_pmf(1.0, 4), [0, 0, 0, 0, 1])
