"""The measured H200 pass costs load, and the numbers the episodes quote hold."""

from __future__ import annotations

import numpy as np
import pytest

from specdec_playable.data import hardware

MODELS = ("llama-8b-shape", "llama-1b-shape", "tiny-160m-shape")
IMPLS = ("gemm-cudagraph", "hf-eager-kvcache512")


def test_csv_loads_every_series():
    costs = hardware.load_pass_costs()
    assert set(costs) == {(m, i) for m in MODELS for i in IMPLS}
    for (model, impl), s in costs.items():
        assert (s.model, s.impl) == (model, impl)
        n = s.n_positions
        assert n.dtype.kind == "i" and n[0] == 1 and (np.diff(n) > 0).all()
        assert s.median_ms.shape == s.p10_ms.shape == s.p90_ms.shape == n.shape
        assert (s.median_ms > 0).all()
        assert (s.p10_ms <= s.median_ms).all() and (s.median_ms <= s.p90_ms).all()
        assert s.weight_bytes > 0


def test_loaded_arrays_are_read_only_and_shared():
    costs = hardware.load_pass_costs()
    assert hardware.load_pass_costs() is costs
    with pytest.raises(ValueError):
        costs[("llama-8b-shape", "gemm-cudagraph")].median_ms[0] = 0.0


@pytest.mark.parametrize(("positions", "ms"), [(1, 4.80), (6, 4.84), (512, 11.1)])
def test_8b_gemm_pass_times(positions, ms):
    series = hardware.load_pass_costs()[("llama-8b-shape", "gemm-cudagraph")]
    got = series.at(positions)
    assert round(got, 2 if positions < 512 else 1) == ms


def test_scoring_six_positions_costs_about_one_pass():
    # The premise of episode 1: checking a few tokens costs what writing one does.
    series = hardware.load_pass_costs()[("llama-8b-shape", "gemm-cudagraph")]
    assert series.at(6) / series.at(1) < 1.02


def test_unmeasured_position_count_is_refused():
    series = hardware.load_pass_costs()[("llama-8b-shape", "gemm-cudagraph")]
    with pytest.raises(ValueError, match=r"n_positions=9 was not measured for llama-8b-shape/gemm-cudagraph"):
        series.at(9)


@pytest.mark.parametrize(("draft", "ratio"), [("llama-1b-shape", 0.236), ("tiny-160m-shape", 0.095)])
def test_draft_cost_ratio(draft, ratio):
    assert round(hardware.draft_cost_ratio(draft), 3) == ratio
    assert hardware.draft_cost_ratio(draft, "llama-8b-shape") == hardware.draft_cost_ratio(draft)


def test_draft_cost_ratio_of_a_model_with_itself_is_one():
    assert hardware.draft_cost_ratio("llama-8b-shape") == 1.0


def test_meta_describes_the_measurement():
    meta = hardware.load_meta()
    assert isinstance(meta, dict) and meta
    assert "H200" in str(meta)
