"""The batch cost model: hand-computed values, the batch-1 reduction and the roofline fit."""

from __future__ import annotations

import doctest

import numpy as np
import pytest

from specdec_playable.sim import batching, theory
from specdec_playable.data import hardware

FLAT = batching.fit_roofline([1, 100_000], [2.0, 2.0])


def test_doctests():
    assert doctest.testmod(batching).failed == 0
    assert doctest.testmod(hardware).failed == 0


@pytest.mark.parametrize("q", [0.0, 0.3, 0.8, 1.0])
@pytest.mark.parametrize("k", [1, 4, 12])
@pytest.mark.parametrize("c", [0.0, 0.1, 0.6])
def test_flat_curve_reduces_to_episode_5(q, k, c):
    # When a pass costs the same whatever it scores, every batch size gets E / (1 + k c).
    r = batching.batch_costs(q, k, c, [1, 7, 256], FLAT)
    np.testing.assert_allclose(r.speedup, theory.expected_speedup(q, k, c), rtol=1e-12)


def test_batch_one_on_the_h200_by_hand():
    # Typed from assets/pass_cost_h200.csv (8B shape): T(1) = 4.8036 ms, T(5) = 4.8390 ms.
    # q = 0.8, k = 4: E = (1 - 0.8^5) / 0.2 = 3.3616; c = 0.1: draft 4 * 0.1 * 4.8036 ms.
    r = batching.batch_costs(0.8, 4, 0.1, 1, hardware.measured_curve())
    want = 3.3616 * 4.8036 / (0.4 * 4.8036 + 4.8390)
    assert float(r.speedup[()]) == pytest.approx(want, rel=1e-12)
    # ... within 1% of Episode 5's E / (1 + k c): at batch 1 verifying 5 positions is nearly free.
    assert float(r.speedup[()]) == pytest.approx(theory.expected_speedup(0.8, 4, 0.1), rel=0.01)


def test_batch_64_on_the_h200_by_hand():
    # B = 64, k = 3: plain step T(64) = 4.9647 ms; the verify pass scores 256 positions,
    # T(256) = 6.7690 ms. q = 0.7: E = 1 + 0.7 + 0.49 + 0.343 = 2.533. c = 0.05.
    r = batching.batch_costs(0.7, 3, 0.05, 64, hardware.measured_curve())
    want = 2.533 * 4.9647 / (3 * 0.05 * 4.9647 + 6.7690)
    assert float(r.speedup[()]) == pytest.approx(want, rel=1e-12)
    assert not bool(r.verify_fitted[()])


def test_fit_reproduces_measurements_and_extends_them():
    series = hardware.load_pass_costs()[("llama-8b-shape", "gemm-cudagraph")]
    curve = hardware.measured_curve()
    np.testing.assert_allclose(curve.time_ms(series.n_positions), series.median_ms, rtol=1e-12)
    # Compute-bound points of the 8B shape (>= 1.2x the fastest pass): 256 and 512 only,
    # so the line passes through both and the curve is continuous where the fit takes over.
    assert curve.slope_ms == pytest.approx((11.143 - 6.769) / 256, rel=1e-12)
    assert curve.fit_ms(512) == pytest.approx(11.143, rel=1e-12)
    # The floor is the median of the flat start (n <= 128).
    flat = series.median_ms[series.n_positions <= 128]
    assert curve.floor_ms == pytest.approx(float(np.median(flat)), rel=1e-12)
    assert curve.is_fit(513) and not curve.is_fit(512)
    # Beyond the data the fit grows linearly: 4x the positions of 1024 is about 4x the time.
    assert curve.time_ms(4096) / curve.time_ms(1024) == pytest.approx(
        (2.394 + 4096 * curve.slope_ms) / (2.394 + 1024 * curve.slope_ms), rel=1e-3)


def test_every_measured_series_fits():
    for (model, impl) in hardware.load_pass_costs():
        curve = hardware.measured_curve(model, impl)
        assert curve.slope_ms >= 0
        assert curve.floor_ms > 0
        big = curve.time_ms(np.array([1024, 2048, 4096]))
        assert np.all(np.diff(big) >= 0)


def test_busy_gpu_erodes_the_speedup():
    curve = hardware.measured_curve()
    b = np.arange(1, 257)
    s = batching.batch_costs(0.8, 4, 0.05, b, curve).speedup
    assert s[0] > 2.0                     # one user: well above 2x
    assert s[-1] < 1.0                    # 256 users x 5 positions: compute-bound, slower
    edge = batching.break_even_batch(0.8, 4, 0.05, curve)
    assert edge is not None and s[edge - 1] < 1.0 and np.all(s[: edge - 1] >= 1.0)


def test_break_even_edges():
    curve = hardware.measured_curve()
    assert batching.break_even_batch(0.0, 4, 0.1, curve) == 1     # never pays
    assert batching.break_even_batch(1.0, 1, 0.0, FLAT) is None    # always pays


def test_best_k_shrinks_as_the_batch_grows():
    best = batching.best_k_per_batch(0.8, 0.05, [1, 32, 128, 256], hardware.measured_curve())
    assert np.all(np.diff(best.k) <= 0)
    s = batching.batch_costs(0.8, np.arange(1, 17)[:, None], 0.05, best.batch[None, :],
                             hardware.measured_curve()).speedup
    np.testing.assert_allclose(best.speedup, s.max(axis=0))
    np.testing.assert_array_equal(best.speculate, best.speedup > 1.0)


def test_time_split_and_throughput():
    r = batching.batch_costs(0.6, 4, 0.1, [1, 128], hardware.measured_curve())
    np.testing.assert_allclose(r.draft_ms, 4 * 0.1 * r.plain_step_ms)
    np.testing.assert_allclose(r.round_ms, r.draft_ms + r.verify_ms)
    np.testing.assert_allclose(r.speculative_tokens_per_s / r.plain_tokens_per_s, r.speedup)


@pytest.mark.parametrize(("kwargs", "match"), [
    (dict(q=1.2, k=4, c=0.1, batch=1), "q must be"),
    (dict(q=0.5, k=0, c=0.1, batch=1), "k must be"),
    (dict(q=0.5, k=4, c=-1, batch=1), "c must be"),
    (dict(q=0.5, k=4, c=0.1, batch=0), "batch must be"),
    (dict(q=0.5, k=4, c=0.1, batch=10**6), "batch must be"),
])
def test_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        batching.batch_costs(curve=FLAT, **kwargs)


def test_bad_fit_inputs():
    with pytest.raises(ValueError, match="equal length"):
        batching.fit_roofline([1], [1.0])
    with pytest.raises(ValueError, match="repeat"):
        batching.fit_roofline([1, 1], [1.0, 2.0])
    with pytest.raises(ValueError, match="median_ms"):
        batching.fit_roofline([1, 2], [1.0, -2.0])
    with pytest.raises(ValueError, match="model, impl"):
        hardware.measured_curve("gpt-9")


@pytest.mark.parametrize("batch", [1, 16, 64, 128, 200])
@pytest.mark.parametrize("k", [1, 4, 9])
def test_effective_cost_gives_the_same_speedup(batch, k):
    # E T(B) / (k c T(B) + T(B(k+1))) == E / (1 + k c_eff) for every q.
    curve = hardware.measured_curve()
    c_eff = batching.effective_cost(k, 0.07, batch, curve)
    for q in (0.0, 0.5, 0.9):
        direct = float(batching.batch_costs(q, k, 0.07, batch, curve).speedup[()])
        assert direct == pytest.approx(theory.expected_speedup(q, k, c_eff), rel=1e-12)


def test_break_even_q_on_the_curve():
    curve = hardware.measured_curve()
    for batch in (1, 64, 128):
        q_star = batching.break_even_q(4, 0.05, batch, curve)
        s = batching.batch_costs(q_star, 4, 0.05, batch, curve).speedup
        assert float(s[()]) == pytest.approx(1.0, abs=1e-9)
    # Far past the roofline's knee, no acceptance rate pays (the effective cost is above 1).
    assert np.isnan(batching.break_even_q(8, 0.05, 4096, curve))
