"""State tier, Episode 5: curves, break-even points, simulated points and presets."""

from __future__ import annotations

import numpy as np
import pytest

from specdec_playable.data import hardware
from specdec_playable.sim import theory
from specdec_playable.kit import presets
from specdec_playable.episodes.ep5.state import (CURVE_KS, MAX_POINTS, N_ROUNDS, Q_GRID, BreakEvenMap,
                                        SimPoint)


def test_defaults_match_the_issue():
    s = BreakEvenMap(rng=1)
    assert (s.q, s.k, s.c) == (0.60, 4, 0.15)
    assert s.points == [] and s.preset is None
    assert s.curve_ks == CURVE_KS == (1, 2, 3, 4, 6, 8, 12)
    assert N_ROUNDS == 400


@pytest.mark.parametrize("c", [0.0, 0.02, 0.15, 0.236, 1.0])
def test_every_curve_equals_the_core_theory(c):
    s = BreakEvenMap(rng=1, c=c)
    for k in s.curve_ks:
        np.testing.assert_array_equal(s.curve(k), theory.expected_speedup(Q_GRID, k, c))


def test_break_even_points_match_the_issue_at_c_015():
    s = BreakEvenMap(rng=1)
    got = {k: round(s.break_even(k), 2) for k in (1, 2, 4, 6)}
    assert got == {1: 0.15, 2: 0.24, 4: 0.38, 6: 0.48}


@pytest.mark.parametrize("c", [0.01, 0.15, 0.5, 1.0])
def test_break_even_is_the_core_value_and_lies_on_the_1x_line(c):
    s = BreakEvenMap(rng=1, c=c)
    for k in s.curve_ks:
        q_star = s.break_even(k)
        assert q_star == theory.break_even_q(k, c)
        assert theory.expected_speedup(q_star, k, c) == pytest.approx(1.0, abs=1e-9)


def test_break_even_follows_c_after_it_moves():
    # The break-even values are solved once per value of c: moving c must re-solve them.
    s = BreakEvenMap(rng=1, c=0.15)
    before = s.break_even(4)
    s.c = 0.3
    assert s.break_even(4) == theory.break_even_q(4, 0.3)
    assert s.break_even(4) > before
    s.c = 0.15
    assert s.break_even(4) == before


def test_the_visitors_k_gets_a_curve_even_off_the_fixed_set():
    s = BreakEvenMap(rng=1, k=5)
    assert 5 in s.curve_ks
    s.add_point()
    s.k = 9
    assert {5, 9} <= set(s.curve_ks)  # the point simulated at k = 5 keeps its curve


def test_simulate_adds_one_point_per_press_and_clear_removes_them():
    s = BreakEvenMap(rng=2)
    for n in (1, 2, 3):
        s.simulate = True
        assert len(s.points) == n
    assert all((p.q, p.k, p.c) == (0.6, 4, 0.15) for p in s.points)
    s.clear = True
    assert s.points == []


def test_changing_c_clears_points_but_changing_q_or_k_keeps_them():
    s = BreakEvenMap(rng=3)
    s.add_point()
    s.q = 0.7
    s.k = 6
    assert len(s.points) == 1
    s.c = 0.2
    assert s.points == []


@pytest.mark.parametrize(("q", "k", "c"), [(0.6, 4, 0.15), (0.3, 8, 0.15), (0.9, 12, 0.02),
                                           (0.75, 3, 0.236), (0.5, 1, 0.095)])
def test_a_seeded_point_lies_within_its_ci_of_the_theory(q, k, c):
    s = BreakEvenMap(rng=7, q=q, k=k, c=c)
    p = s.add_point()
    assert p.theory == theory.expected_speedup(q, k, c)
    assert p.ci_low <= p.theory <= p.ci_high
    assert not p.misses


def test_about_five_percent_of_intervals_miss_the_curve():
    # 800 seeded points at a mix of settings; a 95% interval should miss ~5% of the time.
    # Binomial sd at n = 800 is ~0.8 percentage points: allow 2.5%..8%.
    s = BreakEvenMap(rng=12345)
    settings = [(0.6, 4), (0.3, 2), (0.85, 8), (0.5, 12)]
    missed = 0
    for i in range(800):
        s.q, s.k = settings[i % len(settings)]
        missed += s.add_point().misses
    assert 0.025 <= missed / 800 <= 0.08
    assert len(s.points) == MAX_POINTS  # only the newest points are kept
    assert s.misses == sum(p.misses for p in s.points)


def test_a_point_misses_exactly_when_its_interval_excludes_theory():
    assert SimPoint(0.5, 2, 0.1, 1.2, 1.1, 1.3, 1.35).misses
    assert not SimPoint(0.5, 2, 0.1, 1.2, 1.1, 1.3, 1.3).misses


def test_points_never_share_the_global_numpy_stream():
    before = np.random.get_state()[1].copy()
    a, b = BreakEvenMap(rng=5), BreakEvenMap(rng=5)
    assert a.add_point() == b.add_point()
    np.testing.assert_array_equal(np.random.get_state()[1], before)
    fresh_a, fresh_b = BreakEvenMap(), BreakEvenMap()
    assert [fresh_a.add_point() for _ in range(5)] != [fresh_b.add_point() for _ in range(5)]


# --- presets --------------------------------------------------------------------------


def test_t5_preset_sets_q_and_c_and_keeps_the_visitors_k():
    s = BreakEvenMap(rng=1, k=7)
    p = s.apply_preset("t5")
    assert (s.q, s.k, s.c) == (0.75, 7, 0.02)
    assert p.kept == ("k",) and "Leviathan" in p.source
    assert s.preset == "t5" and s.preset_still_applies


def test_chinchilla_preset_sets_k_and_c_and_keeps_the_visitors_q():
    s = BreakEvenMap(rng=1, q=0.42)
    p = s.apply_preset("chinchilla")
    assert (s.q, s.k, s.c) == (0.42, 4, 0.13)
    assert p.kept == ("q",) and "Chen" in p.source
    s.q = 0.9  # q is not part of this preset: it still applies
    assert s.preset_still_applies
    s.k = 5
    assert not s.preset_still_applies


@pytest.mark.parametrize(("key", "shape", "c"), [("h200-1b", "llama-1b-shape", 0.236),
                                                 ("h200-160m", "tiny-160m-shape", 0.095)])
def test_h200_presets_take_c_from_the_measured_data_and_keep_q_and_k(key, shape, c):
    s = BreakEvenMap(rng=1, q=0.55, k=6)
    p = s.apply_preset(key)
    assert p.c == round(hardware.draft_cost_ratio(shape), 3) == c
    assert (s.q, s.k, s.c) == (0.55, 6, c)
    assert p.kept == ("q", "k") and "H200" in p.source


def test_every_preset_has_a_source_and_fits_the_sliders():
    keys = [p.key for p in presets.all_presets()]
    assert keys == ["t5", "chinchilla", "h200-1b", "h200-160m"]
    for p in presets.all_presets():
        assert p.source and p.note and p.label
        assert 0 <= p.c <= 1
        BreakEvenMap(rng=1).apply_preset(p.key)  # every value is inside the bounds


def test_applying_a_preset_clears_points_made_at_another_c():
    s = BreakEvenMap(rng=1)
    s.add_point()
    s.apply_preset("h200-160m")
    assert s.points == []


def test_points_at_one_setting_are_pooled_and_spread_side_by_side():
    from specdec_playable.episodes.ep5 import view as v5

    s = BreakEvenMap(rng=2)
    for _ in range(12):
        s.add_point()
    s.q = 0.75
    s.add_point()
    (g,) = s.pooled  # the single point at q = 0.75 is not pooled
    assert g.runs == 12 and g.q == pytest.approx(0.6)
    clear = 0.05
    offsets = v5.sideways(s.points, clear=clear)
    group = offsets[:12]
    # Six runs either side of the square, clear of it, within the comb's width.
    assert len(set(group)) == 12 and sum(x > 0 for x in group) == 6
    assert min(abs(x) for x in group) == pytest.approx(clear)
    assert max(abs(x) for x in group) <= clear + v5.SPREAD_HALF + 1e-12
    assert sum(group) == pytest.approx(0.0, abs=1e-12) and offsets[12] == 0.0
    chart = v5.BreakEvenChart()
    chart.update_curves(s)
    chart.update_points(s)
    assert list(chart.points.data["alpha"]) == [v5.POOLED_ALPHA] * 12 + [0.8]
    assert chart.pooled.data["runs"] == [12]
    words = v5.summary_html(s)
    assert "Pooled" not in words  # the latest point (q = 0.75) has no pool
    s.q = 0.6
    s.add_point()
    assert f"Pooled, the 13 runs at that setting ({13 * 400:,} rounds" in v5.summary_html(s)
