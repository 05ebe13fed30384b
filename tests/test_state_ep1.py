"""State tier: Episode 1's parameters drive sim.clocks."""

from __future__ import annotations

import pytest

from specdec_playable.sim import clocks
from specdec_playable.episodes.ep1.state import SENTENCE, WritingVsChecking


def test_defaults_match_the_episode_spec():
    s = WritingVsChecking()
    assert (s.n_tokens, s.big_pass_ms) == (6, 600)
    assert s.comparison.sequential_ms == 3600.0 and s.comparison.parallel_ms == 600.0


@pytest.mark.parametrize("n, ms", [(1, 600), (6, 250), (16, 2000)])
def test_changing_params_recomputes_from_core(n, ms):
    s = WritingVsChecking()
    s.param.update(n_tokens=n, big_pass_ms=ms)
    expected = clocks.sequential_vs_parallel(n, float(ms))
    assert s.comparison.sequential_ms == expected.sequential_ms == n * ms
    assert s.comparison.parallel_ms == expected.parallel_ms == ms
    assert list(s.comparison.sequential.text) == list(SENTENCE[:n])


def test_bounds_are_enforced():
    s = WritingVsChecking()
    with pytest.raises(ValueError):
        s.n_tokens = 17
    with pytest.raises(ValueError):
        s.big_pass_ms = 0
    assert s.n_tokens == 6


def test_each_state_is_independent():
    a, b = WritingVsChecking(), WritingVsChecking()
    a.n_tokens = 3
    assert b.n_tokens == 6 and b.comparison.n_tokens == 6
