"""Token trees: closed form against brute force, the chain formula and Monte-Carlo."""

from __future__ import annotations

import doctest
import itertools
import math

import numpy as np
import pytest

from specdec_playable.sim import theory, trees

SHAPES = {
    "chain5": trees.chain(5),
    "spine2x3": trees.spine_tree(2, 3),
    "spine3x2": trees.spine_tree(3, 2),
    "full2x3": trees.full_tree(2, 3),
    "lopsided": np.array([-1, 0, 0, 1, -1, 4, 3]),
}


def brute_force_tokens(parents: np.ndarray, q: float) -> float:
    """Exact mean over all 2^n accept/reject patterns of the n candidates."""
    n = len(parents)
    depth = trees.depths(parents)
    total = 0.0
    for pattern in itertools.product((False, True), repeat=n):
        weight = math.prod(q if hit else 1.0 - q for hit in pattern)
        ok = [False] * n
        for v in range(n):
            ok[v] = pattern[v] and (parents[v] < 0 or ok[parents[v]])
        total += weight * (1 + max((depth[v] for v in range(n) if ok[v]), default=0))
    return total


def test_doctests():
    assert doctest.testmod(trees).failed == 0


@pytest.mark.parametrize("name", sorted(SHAPES))
@pytest.mark.parametrize("q", [0.0, 0.1, 0.35, 0.5, 0.8, 1.0])
def test_closed_form_equals_brute_force(name, q):
    parents = SHAPES[name]
    assert trees.expected_tokens(parents, q) == pytest.approx(brute_force_tokens(parents, q),
                                                               rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("k", [1, 2, 3, 5, 8, 16])
def test_chain_is_leviathan(k):
    for q in np.linspace(0, 1, 21):
        assert trees.expected_tokens(trees.chain(k), q) == pytest.approx(
            theory.expected_tokens_per_round(q, k), rel=1e-12)


@pytest.mark.parametrize("depth", [1, 3, 7])
def test_width_one_is_the_chain(depth):
    np.testing.assert_array_equal(trees.spine_tree(1, depth), trees.chain(depth))
    np.testing.assert_array_equal(trees.full_tree(1, depth), trees.chain(depth))


def test_hand_computed_spine():
    # Two candidates at each of two levels, q = 1/2. Level 1 is passed on the top guess
    # (1/2, go on) or on the alternative (1/4, stop there): P(L >= 1) = 3/4. Level 2 needs
    # the top guess of level 1, then either candidate: P(L >= 2) = 1/2 * 3/4. E = 1 + 3/4 + 3/8.
    assert trees.expected_tokens(trees.spine_tree(2, 2), 0.5) == pytest.approx(2.125, abs=1e-15)


def test_one_wide_level():
    # w candidates under the root and nothing deeper: 1 + P(any of w accepted).
    for w in (1, 2, 5):
        for q in (0.2, 0.7):
            assert trees.expected_tokens(trees.spine_tree(w, 1), q) == pytest.approx(
                2.0 - (1.0 - q) ** w, rel=1e-14)


def test_trees_win_at_low_q_and_chains_at_high_q():
    # The same 8 scored positions: a chain, or 2 candidates at 4 levels.
    chain, tree = trees.chain(8), trees.spine_tree(2, 4)
    assert trees.expected_tokens(tree, 0.3) > trees.expected_tokens(chain, 0.3)
    assert trees.expected_tokens(tree, 0.9) < trees.expected_tokens(chain, 0.9)


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_monte_carlo_matches_closed_form(name):
    # Seed 2026, 40,000 rounds: the closed form must lie within 4 standard errors.
    parents = SHAPES[name]
    for i, q in enumerate((0.3, 0.6, 0.9)):
        sim = trees.simulate(parents, q, 40_000, rng=np.random.default_rng([2026, i]))
        half = sim.ci_high - sim.tokens_per_round          # 1.96 standard errors
        se = half / 1.959963984540054
        assert abs(sim.tokens_per_round - trees.expected_tokens(parents, q)) <= 4 * se + 1e-12


def test_simulate_is_seeded():
    a = trees.simulate(trees.full_tree(2, 2), 0.5, 1000, rng=7)
    b = trees.simulate(trees.full_tree(2, 2), 0.5, 1000, rng=7)
    np.testing.assert_array_equal(a.accepted, b.accepted)


def test_shapes_and_sizes():
    assert trees.spine_tree(3, 4).size == 12
    assert trees.full_tree(2, 3).size == 2 + 4 + 8
    assert trees.depths(trees.full_tree(3, 2)).tolist() == [1, 1, 1] + [2] * 9


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_ancestor_mask(name):
    parents = SHAPES[name]
    mask = trees.ancestor_mask(parents)
    for i in range(len(parents)):
        ancestors, v = {i}, i
        while parents[v] >= 0:
            v = parents[v]
            ancestors.add(v)
        assert set(np.flatnonzero(mask[i])) == ancestors
    if name == "chain5":
        np.testing.assert_array_equal(mask, np.tril(np.ones((5, 5), dtype=bool)))


@pytest.mark.parametrize("bad", [[], [0], [-1, 1], [-2], [-1, 0, 3], [[-1, 0]], [0.5], "ab"])
def test_bad_parents_raise(bad):
    with pytest.raises(ValueError, match="parents"):
        trees.expected_tokens(bad, 0.5)


def test_bad_arguments_raise():
    with pytest.raises(ValueError, match="q must be"):
        trees.expected_tokens(trees.chain(2), 1.5)
    with pytest.raises(ValueError, match="width"):
        trees.spine_tree(0, 2)
    with pytest.raises(ValueError, match="nodes"):
        trees.full_tree(4, 6)
    with pytest.raises(ValueError, match="n_rounds"):
        trees.simulate(trees.chain(2), 0.5, 0, rng=1)
