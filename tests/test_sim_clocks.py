"""Episode 1's clocks: N sequential passes against one parallel pass."""

from __future__ import annotations

import numpy as np
import pytest

from specdec_playable.sim.clocks import sequential_vs_parallel


def test_six_tokens_at_600_ms():
    c = sequential_vs_parallel(6, 600.0)
    assert c.n_tokens == 6
    assert c.sequential_ms == 3600.0
    assert c.parallel_ms == 600.0
    assert c.ratio == 6.0


@pytest.mark.parametrize("n", [1, 2, 6, 50])
def test_sequential_passes_are_back_to_back(n):
    c = sequential_vs_parallel(n, 250.0)
    seq = c.sequential
    assert len(seq) == n
    assert set(seq.kind.tolist()) == {"generate"}
    assert set(seq.lane.tolist()) == {"sequential"}
    assert seq.token.tolist() == list(range(n))
    assert seq.start_ms[0] == 0.0
    np.testing.assert_array_equal(seq.start_ms[1:], seq.end_ms[:-1])
    np.testing.assert_array_equal(seq.end_ms - seq.start_ms, 250.0)
    assert c.sequential_ms == seq.end_ms[-1] == n * 250.0


def test_parallel_lane_is_one_pass_scoring_every_position():
    c = sequential_vs_parallel(6, 600.0)
    par = c.parallel
    assert set(par.lane.tolist()) == {"parallel"}
    assert par.of_kind("verify").token.tolist() == [-1]
    score = par.of_kind("score")
    assert score.token.tolist() == list(range(6))
    np.testing.assert_array_equal(par.start_ms, 0.0)
    np.testing.assert_array_equal(par.end_ms, 600.0)


def test_verify_pass_ms_is_honoured():
    c = sequential_vs_parallel(6, 600.0, verify_pass_ms=640.0)
    assert c.sequential_ms == 3600.0
    assert c.parallel_ms == 640.0
    np.testing.assert_array_equal(c.parallel.end_ms, 640.0)
    assert c.ratio == pytest.approx(3600.0 / 640.0)


def test_token_labels():
    words = ["The", " cat", " sat"]
    c = sequential_vs_parallel(3, tokens=words)
    assert c.sequential.text.tolist() == words
    assert c.parallel.of_kind("score").text.tolist() == words
    default = sequential_vs_parallel(3)
    assert default.sequential.text.tolist() == ["t1", "t2", "t3"]


def test_token_labels_must_match_count():
    with pytest.raises(ValueError, match=r"tokens must have n_tokens=3 entries; got 2"):
        sequential_vs_parallel(3, tokens=["a", "b"])
