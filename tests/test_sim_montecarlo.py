"""Monte-Carlo rounds against the closed forms, seeded, with stated tolerances."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from specdec_playable.sim import montecarlo, theory
from specdec_playable.sim.montecarlo import accepted_per_round, simulate

SEED = 20230518  # every random test below derives its streams from this seed

POINTS = [  # (q, k, c)
    (0.8, 4, 0.1),
    (0.5, 2, 0.05),
    (0.9, 10, 0.0),
    (0.3, 6, 0.25),
    (0.99, 16, 0.02),
]


def theory_tokens_sd(q: float, k: int) -> float:
    """Standard deviation of tokens per round, from the exact pmf."""
    p = theory.accepted_pmf(q, k)
    a = np.arange(k + 1)
    mean = a @ p
    return float(np.sqrt(((a - mean) ** 2) @ p))


def reference_accepted(uniforms: np.ndarray, q: float) -> list[int]:
    """Plain Python: count leading draws below q in each row."""
    out = []
    for row in uniforms.tolist():
        n = 0
        for u in row:
            if u < q:
                n += 1
            else:
                break
        out.append(n)
    return out


# --- agreement with theory ----------------------------------------------------


@pytest.mark.parametrize(("q", "k", "c"), POINTS)
def test_speedup_within_four_standard_errors_of_theory(q, k, c):
    # Tolerance: 4 standard errors of the mean speedup, with the standard error
    # computed from the exact distribution (two-sided false alarm ~6e-5 per point).
    n_rounds = 200_000
    rng = np.random.default_rng([SEED, POINTS.index((q, k, c))])
    r = simulate(q, k, c, n_rounds, rng=rng)
    cost = 1.0 + k * c
    se = theory_tokens_sd(q, k) / math.sqrt(n_rounds) / cost
    assert abs(r.speedup - theory.expected_speedup(q, k, c)) < 4 * se + 1e-12
    assert abs(r.tokens_per_round - theory.expected_tokens_per_round(q, k)) < 4 * se * cost + 1e-12
    assert r.theory_speedup == theory.expected_speedup(q, k, c)


@pytest.mark.parametrize(("q", "k", "c"), POINTS[:3])
def test_accepted_histogram_matches_pmf(q, k, c):
    # Each bin within 5 binomial standard errors (plus one count) of n * P(a).
    n_rounds = 200_000
    r = simulate(q, k, c, n_rounds, rng=np.random.default_rng([SEED, 100 + k]))
    hist = r.accepted_histogram()
    p = theory.accepted_pmf(q, k)
    assert hist.shape == (k + 1,)
    assert hist.sum() == n_rounds
    se = np.sqrt(n_rounds * p * (1 - p))
    assert (np.abs(hist - n_rounds * p) <= 5 * se + 1).all()


def test_ci_covers_theory_about_95_percent_of_the_time():
    # 400 independent runs of 500 rounds each. If the 95% CI is right, the number
    # of runs covering the true speedup is Binomial(400, 0.95): mean 380, sd 4.36.
    # Accept 380 +- 4 sd, i.e. a coverage in [0.906, 0.994].
    q, k, c = 0.8, 4, 0.1
    truth = theory.expected_speedup(q, k, c)
    streams = np.random.default_rng(SEED).spawn(400)
    covered = sum(_covers(simulate(q, k, c, 500, rng=s), truth) for s in streams)
    sd = math.sqrt(400 * 0.95 * 0.05)
    assert abs(covered - 380) <= 4 * sd, covered


def _covers(r, truth: float) -> bool:
    assert r.ci_low <= r.speedup <= r.ci_high
    return r.ci_low <= truth <= r.ci_high


# --- determinism ----------------------------------------------------------------


def test_same_seed_same_result():
    a = simulate(0.7, 5, 0.1, 5000, rng=SEED)
    b = simulate(0.7, 5, 0.1, 5000, rng=np.random.default_rng(SEED))
    np.testing.assert_array_equal(a.accepted, b.accepted)
    assert (a.speedup, a.ci_low, a.ci_high, a.total_tokens) == (b.speedup, b.ci_low, b.ci_high, b.total_tokens)


def test_different_seeds_differ():
    a = simulate(0.7, 5, 0.1, 5000, rng=SEED)
    b = simulate(0.7, 5, 0.1, 5000, rng=SEED + 1)
    assert not np.array_equal(a.accepted, b.accepted)
    assert a.speedup != b.speedup


def test_generator_is_advanced_not_reseeded():
    rng = np.random.default_rng(SEED)
    a = simulate(0.7, 5, 0.1, 1000, rng=rng)
    b = simulate(0.7, 5, 0.1, 1000, rng=rng)
    assert not np.array_equal(a.accepted, b.accepted)


# --- accepted_per_round ---------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(
    uniforms=hnp.arrays(
        np.float64,
        hnp.array_shapes(min_dims=2, max_dims=2, min_side=1, max_side=20),
        elements=st.floats(0.0, 1.0, exclude_max=True),
    ),
    q=st.floats(0.0, 1.0),
)
def test_accepted_per_round_matches_python_reference(uniforms, q):
    got = accepted_per_round(uniforms, q)
    assert got.shape == (uniforms.shape[0],)
    assert got.tolist() == reference_accepted(uniforms, q)


@settings(max_examples=50, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), rows=st.integers(1, 300), k=st.integers(1, 64), q=st.floats(0.0, 1.0))
def test_accepted_per_round_on_random_draws(seed, rows, k, q):
    u = np.random.default_rng(seed).random((rows, k))
    assert accepted_per_round(u, q).tolist() == reference_accepted(u, q)


def test_accepted_per_round_edges():
    u = np.array([[0.0, 0.5, 0.999]])
    assert accepted_per_round(u, 0.0).tolist() == [0]  # u < 0 never holds
    assert accepted_per_round(u, 1.0).tolist() == [3]
    assert accepted_per_round(u, 0.5).tolist() == [1]  # u == q is a miss


# --- chunking -------------------------------------------------------------------


@pytest.mark.parametrize("chunk", [1, 7, 64, 1000])
def test_many_chunks_give_identical_rounds(monkeypatch, chunk):
    # Chunks draw consecutive blocks of the same stream, so a run split into
    # many chunks must reproduce the one-chunk run exactly.
    q, k, c, n = 0.75, 5, 0.1, 3001
    whole = simulate(q, k, c, n, rng=SEED)
    monkeypatch.setattr(montecarlo, "_CHUNK_ELEMENTS", chunk)
    assert max(1, chunk // k) < n  # really more than one chunk
    split = simulate(q, k, c, n, rng=SEED)
    assert split.accepted.shape == (n,)
    assert split.n_rounds == n
    np.testing.assert_array_equal(split.accepted, whole.accepted)
    assert (split.speedup, split.ci_low, split.ci_high) == (whole.speedup, whole.ci_low, whole.ci_high)


def test_chunked_run_still_matches_theory(monkeypatch):
    monkeypatch.setattr(montecarlo, "_CHUNK_ELEMENTS", 4096)
    q, k, c, n = 0.8, 4, 0.1, 200_000
    r = simulate(q, k, c, n, rng=np.random.default_rng([SEED, 7]))
    se = theory_tokens_sd(q, k) / math.sqrt(n) / (1 + k * c)
    assert abs(r.speedup - theory.expected_speedup(q, k, c)) < 4 * se


# --- endpoints and bookkeeping --------------------------------------------------


@pytest.mark.parametrize("k", [1, 4, 64])
def test_perfect_draft_accepts_everything(k):
    r = simulate(1.0, k, 0.1, 1000, rng=SEED)
    assert (r.accepted == k).all()
    assert r.total_tokens == 1000 * (k + 1)
    assert r.speedup == pytest.approx((k + 1) / (1 + 0.1 * k), rel=1e-15)
    assert r.ci_low == r.ci_high == r.speedup


@pytest.mark.parametrize("k", [1, 4, 64])
def test_useless_draft_accepts_nothing(k):
    r = simulate(0.0, k, 0.1, 1000, rng=SEED)
    assert (r.accepted == 0).all()
    assert r.total_tokens == 1000
    assert r.speedup == pytest.approx(1 / (1 + 0.1 * k), rel=1e-15)


def test_result_bookkeeping():
    q, k, c, n = 0.6, 3, 0.2, 777
    r = simulate(q, k, c, n, rng=SEED)
    assert (r.q, r.k, r.c, r.n_rounds) == (q, k, c, n)
    assert r.accepted.dtype.kind == "i"
    assert ((r.accepted >= 0) & (r.accepted <= k)).all()
    assert r.total_tokens == int(r.accepted.sum()) + n
    assert r.total_time == pytest.approx(n * (1 + k * c))
    assert r.cost_per_round == pytest.approx(1 + k * c)
    assert r.speedup == pytest.approx(r.total_tokens / r.total_time, rel=1e-14)
    assert r.mean_accepted == pytest.approx(r.tokens_per_round - 1, rel=1e-14)
    assert r.ci_low < r.speedup < r.ci_high


def test_single_round_has_a_degenerate_interval():
    r = simulate(0.5, 4, 0.1, 1, rng=SEED)
    assert r.n_rounds == 1
    assert r.ci_low == r.speedup == r.ci_high


def test_pooled_runs_read_as_one_run_of_all_their_rounds():
    """Twelve runs of 400 rounds pooled: the speedup over all 4,800 rounds exactly, and an
    interval as wide as one run of 4,800 rounds has (seeds 0..59, within 4% on average)."""
    from specdec_playable.sim.montecarlo import pool_runs, simulate

    ratios = []
    for seed in range(60):
        rs = [simulate(0.6, 4, 0.15, 400, rng=1000 * seed + i) for i in range(12)]
        sp, lo, hi = pool_runs([r.speedup for r in rs], [r.ci_low for r in rs],
                               [r.ci_high for r in rs], 400)
        assert sp == pytest.approx(sum(r.total_tokens for r in rs) / 4800 / 1.6, rel=1e-12)
        assert lo < sp < hi
        one = simulate(0.6, 4, 0.15, 4800, rng=seed)
        ratios.append((hi - lo) / (one.ci_high - one.ci_low))
    assert np.mean(ratios) == pytest.approx(1.0, abs=0.04)
    with pytest.raises(ValueError):
        pool_runs([], [], [], 400)
    with pytest.raises(ValueError):
        pool_runs([1.0], [0.9, 0.8], [1.1], 400)
