"""Episode 8 without a browser: the state's numbers, and every sentence checked against them."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from specdec_playable.data import hardware
from specdec_playable.sim import batching, theory, trees
from specdec_playable.episodes.ep8.state import ANCHORS, BATCH_MAX, K_SLIDER_MAX, Q_GRID, BusyAndTrees
from specdec_playable.episodes.ep8 import state as st8
from specdec_playable.episodes.ep8 import view as v
from specdec_playable.kit.cpu import shipped_passes

KNOBS = dict(
    q=st.one_of(st.sampled_from([0.0, 1.0, 0.5]), st.floats(0, 1)),
    k=st.integers(1, K_SLIDER_MAX),
    c=st.one_of(st.sampled_from([0.0, 1.0]), st.floats(0, 1)),
    batch=st.one_of(st.sampled_from([1, BATCH_MAX]), st.integers(1, BATCH_MAX)),
)


def numbers(html: str) -> list[str]:
    return re.findall(r"\d[\d,]*\.?\d*", html)


def test_defaults_and_derived_values():
    s = BusyAndTrees(rng=1)
    h = s.here
    assert float(h.speedup) == pytest.approx(
        float(batching.batch_costs(0.8, 4, 0.05, 1, hardware.measured_curve()).speedup[()]))
    assert s.costs.speedup.shape == (BATCH_MAX,)
    assert s.positions == s.width * s.depth == 6
    np.testing.assert_array_equal(s.chain, trees.chain(6))
    np.testing.assert_array_equal(s.tree, trees.spine_tree(2, 3))


@settings(max_examples=120, deadline=None)
@given(**KNOBS)
@example(q=0.0, k=1, c=0.0, batch=5)  # a verify pass over 10 positions timed under a plain step
def test_busy_sentences_follow_the_numbers(q, k, c, batch):
    s = BusyAndTrees(rng=0, q=q, k=k, c=c, batch=batch)
    html = v.busy_html(s)
    speed = float(s.here.speedup)
    assert f"<strong>{speed:.2f}×</strong>" in html
    shown = round(speed, 2)
    if shown > 1:
        assert "speculation is faster:" in html
    elif shown < 1:
        assert "speculation is slower:" in html
    else:
        assert "are level" in html
    # Where the chosen k stops paying.
    edge = s.break_even_batch
    full = batching.batch_costs(q, k, c, np.arange(1, BATCH_MAX + 1), s.curve).speedup
    if edge is None:
        assert f"still pays at every batch size up to {BATCH_MAX}" in html
        assert np.all(full >= 1.0)
    elif edge == 1:
        assert "does not pay even for a single user" in html
        assert full[0] < 1.0
    else:
        assert f"stops paying at batch {edge:,}" in html
        assert full[edge - 1] < 1.0 and np.all(full[: edge - 1] >= 1.0)
    # The best k at this batch, or that not speculating is best.
    all_k = batching.batch_costs(q, np.arange(1, K_SLIDER_MAX + 1), c, batch, s.curve).speedup
    if all_k.max() <= 1.0:
        assert "the best choice here is not to speculate" in html
    else:
        best_k = int(np.argmax(all_k)) + 1
        assert (f"k = {best_k} is also the best" in html if best_k == k
                else f"the best draft length is k = {best_k}" in html)
    # The effective cost, and the link to Episode 5 only where its map has that c.
    # Where the measured curve dips (a verify pass timed a hair under a plain step, by noise) the
    # exact cost falls below 0 and the page shows 0: the speedup then differs from Episode 5's
    # formula by that dip alone, k x |c_eff| of it (under 0.4% of a step).
    c_eff = s.effective_cost
    shown = max(c_eff, 0.0)
    assert c_eff > -0.004
    assert f"c = {shown:.3f} instead of {c:.3f}" in html
    assert ("Open Episode 5" in html) == (c_eff <= 1.0)
    assert theory.expected_speedup(q, k, shown) == pytest.approx(speed, rel=1e-9 + k * (shown - c_eff), abs=1e-12)


@settings(max_examples=60, deadline=None)
@given(**KNOBS)
def test_anchor_comparison_follows_the_numbers(q, k, c, batch):
    s = BusyAndTrees(rng=0, q=q, k=k, c=c, batch=batch)
    html = v.anchors_html(s)
    model = st8.batching_speedups(s, [a.batch for a in ANCHORS])
    for a, m in zip(ANCHORS, model):
        assert f"<td>{a.batch}</td><td>{a.speedup:.1f}×</td><td>{m:.2f}×</td>" in html
    pub_fall = 1 - ANCHORS[-1].speedup / ANCHORS[0].speedup
    model_fall = 1 - model[-1] / model[0]
    assert ("explains only part" in html) == (model_fall < pub_fall)


@settings(max_examples=60, deadline=None)
@given(**KNOBS)
def test_split_adds_up_to_a_round(q, k, c, batch):
    s = BusyAndTrees(rng=0, q=q, k=k, c=c, batch=batch)
    rows = st8.split_rows(s)
    h = s.here
    spec = rows["draft"][1] + rows["verify"][1]
    assert spec == pytest.approx(float(h.round_ms) / float(h.tokens_per_round))
    assert rows["plain"][0] == pytest.approx(float(h.plain_step_ms))
    # Per-token time ratio is the speedup.
    assert rows["plain"][0] / spec == pytest.approx(float(h.speedup))


@settings(max_examples=60, deadline=None)
@given(q=st.one_of(st.sampled_from([0.0, 1.0]), st.floats(0, 1)), width=st.integers(1, 4),
       depth=st.integers(1, 8))
def test_tree_sentences_follow_the_numbers(q, width, depth):
    s = BusyAndTrees(rng=3, tree_q=q, width=width, depth=depth)
    html = v.tree_html(s)
    assert f"{s.chain_sim.tokens_per_round:.2f}" in html and f"{s.tree_sim.tokens_per_round:.2f}" in html
    assert f"score {s.positions:,} position" in html
    if width == 1:
        assert "the tree is the chain" in html
        assert s.tree_theory == pytest.approx(s.chain_theory)
        return
    gap = s.tree_theory - s.chain_theory
    if abs(gap) >= 0.005:
        assert f"the {'tree' if gap > 0 else 'chain'} yields {abs(gap):.2f} more" in html
    chain, tree = s.tree_curves()
    xs = trees.crossings(chain, tree, Q_GRID)
    if len(xs) == 1:
        x = xs[0]
        assert f"The tree wins below q ≈ {x:.2f}, the chain above" in html
        below, above = Q_GRID[(Q_GRID > 0) & (Q_GRID < x - 0.01)], Q_GRID[Q_GRID > x + 0.01]
        assert np.all(tree[np.isin(Q_GRID, below)] >= chain[np.isin(Q_GRID, below)] - 1e-12)
        assert np.all(tree[np.isin(Q_GRID, above)] <= chain[np.isin(Q_GRID, above)] + 1e-12)


def test_crossings():
    qs = np.linspace(0, 1, 11)
    assert trees.crossings(qs, 1 - qs, qs) == [pytest.approx(0.5)]
    assert trees.crossings(qs, qs + 1, qs) == []


def test_monte_carlo_agrees_with_theory():
    # Seeded: 2,000 rounds each; the theory lies within 4 standard errors (1.96 SE = CI half-width).
    for q in (0.2, 0.6, 0.9):
        s = BusyAndTrees(rng=11, tree_q=q, width=3, depth=2)
        for sim, want in ((s.chain_sim, s.chain_theory), (s.tree_sim, s.tree_theory)):
            se = (sim.ci_high - sim.tokens_per_round) / 1.959963984540054
            assert abs(sim.tokens_per_round - want) <= 4 * se + 1e-12


def test_resimulate_draws_fresh_rounds():
    s = BusyAndTrees(rng=5, tree_q=0.5)
    before = s.tree_sim.accepted.copy()
    s.param.trigger("resimulate")
    assert not np.array_equal(before, s.tree_sim.accepted)


def test_tree_picture_layout():
    depths = trees.depths(trees.spine_tree(3, 2))
    assert depths.tolist() == [1, 1, 1, 2, 2, 2]
    assert sorted(trees.places(depths)[:3].tolist()) == [-1, 0, 1]


@settings(max_examples=60, deadline=None)
@given(**KNOBS)
def test_cpu_sentences_follow_the_numbers(q, k, c, batch):
    s = BusyAndTrees(rng=0, q=q, k=k, c=c, batch=batch)
    html = v.cpu_html(s)
    cpu = s.cpu_curve  # this server's measurement once a model process made one, else the shipped
    assert s.cpu_passes.where in html and s.cpu_passes.details in html
    ratio = float(cpu.time_ms(k + 1) / cpu.time_ms(1))
    assert f"<strong>{ratio:.2f}×</strong>" in html
    assert ("not free even for a single user" in html) == (ratio >= 1.1)
    speed = theory.expected_tokens_per_round(q, k) / (k * c + ratio)
    assert f"give {speed:.2f}× here" in html
    assert ("interpolated" in html) == (k + 1 not in cpu.n_positions.tolist())
    q_star = s.cpu_break_even_q
    if np.isfinite(q_star) and q_star <= 0.0:  # a measured curve can dip below one step
        assert "even a draft that is never right breaks even" in html
        assert float(batching.batch_costs(0.0, k, c, 1, cpu).speedup[()]) >= 1.0 - 1e-9
    elif np.isfinite(q_star):
        assert f"at least q = {q_star:.2f}" in html
        assert float(batching.batch_costs(q_star, k, c, 1, cpu).speedup[()]) == pytest.approx(1.0, abs=1e-9)
    else:
        assert "no acceptance rate makes" in html
        assert float(batching.batch_costs(1.0, k, c, 1, cpu).speedup[()]) < 1.0


@pytest.mark.parametrize("own, here", [("f32", True), ("q4", True), ("f32", False)])
@pytest.mark.parametrize("other_measured", [False, True])
def test_the_two_cpu_curves_put_the_servers_own_in_its_format(monkeypatch, own, here, other_measured):
    """Episode 8's float32 and 4-bit curves: the page's curve stands in the format it was measured
    in (float32 when shipped); the other format is this server's record of it once a model
    process of that format has measured, else the shipped one."""
    from types import SimpleNamespace

    from specdec_playable.episodes.ep8.state import format_curves
    from specdec_playable.kit import cpu as kit_cpu

    other = {"f32": "q4", "q4": "f32"}[own]
    theirs = SimpleNamespace(curve=object())
    monkeypatch.setattr(kit_cpu, "server_passes",
                        lambda fmt: theirs if (other_measured and fmt == other) else None)
    mine = object()
    record = SimpleNamespace(weights=own) if here else None
    got = format_curves(SimpleNamespace(curve=mine, here=here, record=record, weights=own))
    assert got[own] is mine
    if other_measured:
        assert got[other] is theirs.curve
    else:
        # the one shipped curve of that format every page draws (levelled as a record is)
        shipped = shipped_passes(other).curve
        assert np.allclose(got[other].median_ms, shipped.median_ms, rtol=0, atol=1e-9)
        assert np.all(np.diff(got[other].median_ms) >= 0)
