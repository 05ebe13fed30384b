"""Which CPU pass costs the pages state, and that they say where they were measured.

With no model process loaded (as in this test process) the pages use the shipped measurement and
say "measured on the machine that built this page"; once the server's first model process has
timed its passes, they use that record and say "measured on this server" with its stamp (CPU,
time, threads, weight format).
"""

from __future__ import annotations

import importlib

import numpy as np
import pytest

from specdec_playable.data import hardware
from specdec_playable.lm.calibrate import PassTimes
from specdec_playable.runtime import calibration as records
from specdec_playable.runtime import model_process
from specdec_playable.kit import cpu
from specdec_playable.episodes.ep8.state import BusyAndTrees
ep7_page = importlib.import_module("specdec_playable.episodes.ep7.page")

TIMES = PassTimes((1, 2, 4, 5, 8, 9, 16, 32), (20.0, 21.0, 22.5, 23.0, 25.0, 26.0, 33.0, 52.0),
                  repeats=5, seconds=4.0, threads=1, kernel="numba", measured_at=1.0)
STAMP = "a 2-core AMD EPYC 9B14 at 20:14 UTC on 2026-12-04, 1 thread, float32 weights"


def _record(times: PassTimes) -> records.Calibration:
    return records.Calibration(times, model_process.weights(), "AMD EPYC 9B14", 2, "2026-12-04T20:14:05Z")


SERVER = _record(TIMES)


def _serve(monkeypatch, record) -> None:
    """This process's server, with ``record`` as its calibration (none: None)."""
    monkeypatch.setattr(records, "STORE", records.CalibrationStore(*([record] if record else [])))


@pytest.fixture
def measured_here(monkeypatch):
    _serve(monkeypatch, SERVER)


@pytest.fixture
def model_absent(monkeypatch):
    _serve(monkeypatch, None)


def test_without_a_model_process_the_shipped_curve_is_used_and_said(model_absent):
    p = cpu.cpu_passes()
    assert not p.here
    shipped = hardware.cpu_curve().median_ms
    assert np.array_equal(p.curve.median_ms, np.maximum.accumulate(shipped))
    meta = hardware.load_cpu_meta()
    assert p.source.startswith(cpu.SHIPPED)
    assert f"{meta['cores']}-core {meta['cpu']} on {meta['date_utc']}" in p.source
    assert p.ratio(1) == 1.0


def test_a_server_measurement_replaces_it_and_says_so(measured_here):
    p = cpu.cpu_passes()
    assert p.here and p.source == f"{cpu.HERE}: {STAMP}" and p.record is SERVER
    assert p.ratio(5) == pytest.approx(23.0 / 20.0)
    assert p.curve.n_positions.tolist() == list(TIMES.n_positions)


def test_the_stamp_names_the_weight_format_and_a_forced_curve(monkeypatch):
    forced = PassTimes((1, 2), (30.0, 30.0), repeats=5, seconds=1.0, threads=2, kernel="numba",
                       enforced=True, lowered=(2,))
    rec = records.Calibration(forced, "q4", "", 16, "2026-12-04T09:05:00Z")
    assert rec.stamp() == ("measured on a 16-core CPU at 09:05 UTC on 2026-12-04, 2 threads, "
                           "4-bit weights, levelled from the larger sizes")
    monkeypatch.setattr(model_process, "_WEIGHTS", ["q4"])
    _serve(monkeypatch, rec)
    assert cpu.cpu_passes().details == rec.details() and "4-bit" in cpu.cpu_passes().curve.label


def test_episode8_keeps_one_curve_for_its_session(model_absent, monkeypatch):
    s = BusyAndTrees(rng=0)
    before = s.cpu_curve
    _serve(monkeypatch, SERVER)
    assert s.cpu_curve is before  # a page drawn with one curve is not priced with another
    assert BusyAndTrees(rng=0).cpu_curve.n_positions.tolist() == list(TIMES.n_positions)


def test_episode7_lesson_says_where_its_ratio_was_measured(model_absent, monkeypatch):
    from specdec_playable.episodes import ep7
    from specdec_playable.sim import theory

    html = ep7_page.lesson_html()
    r5 = cpu.cpu_passes().ratio(5)
    assert f"takes {r5:.2f}× a single decode step" in html and cpu.SHIPPED in html
    _serve(monkeypatch, SERVER)
    html = ep7_page.lesson_html()
    assert "takes 1.15× a single decode step" in html and f"{cpu.HERE}: {STAMP}" in html
    q = float(theory.break_even_q(4, 0.15 / 4))
    assert f"at least q = {q:.2f}" in html
    # the break-even claim holds: a free draft at that q writes 1.15 tokens per pass of 5
    assert float(theory.expected_tokens_per_round(q, 4)) == pytest.approx(1.15, abs=1e-6)


def test_a_dip_in_a_measured_curve_is_taken_as_noise(monkeypatch):
    dipping = PassTimes((1, 2, 4), (30.0, 21.0, 33.0), repeats=3, seconds=1.0, threads=1, kernel="numba")
    _serve(monkeypatch, _record(dipping))
    p = cpu.cpu_passes()
    assert p.curve.median_ms.tolist() == [30.0, 30.0, 33.0] and p.ratio(2) == 1.0


@pytest.mark.parametrize("times", [TIMES, PassTimes((1, 5, 9), (20.0, 40.0, 60.0), repeats=3,
                                                    seconds=1.0, threads=2, kernel="numpy")])
def test_episode7_outro_follows_the_pass_costs(monkeypatch, times):
    from specdec_playable.episodes import ep7
    from specdec_playable.sim import theory

    _serve(monkeypatch, _record(times))
    html = ep7_page.outro_html()
    r5, r9 = times.ratio(5), times.ratio(9)
    assert f"({r5:.2f}× a step for 5 positions, {r9:.2f}× for 9)" in html
    assert ("is nearly one step too" in html) == (r5 < 1.3)
    assert f"at least q = {float(theory.break_even_q(4, (r5 - 1) / 4)):.2f}" in html
    # the 4-bit weights' own record, with its machine: the shipped one until a 4-bit process measured
    q4 = cpu.shipped_passes("q4")
    assert (f"a check costs {q4.ratio(5):.2f}× a step for 5 positions and {q4.ratio(9):.2f}× for 9 "
            f"({q4.source})") in html
    assert cpu.SHIPPED in html and "the machine that built this page" in q4.source


def test_episode7_outro_reads_a_4_bit_record_once_a_4_bit_process_measured_it(monkeypatch):
    q4_times = PassTimes((1, 5, 9), (10.0, 15.0, 21.0), repeats=3, seconds=1.0, threads=1, kernel="numba")
    both = [SERVER, records.Calibration(q4_times, "q4", "AMD EPYC 9B14", 2, "2026-12-04T20:20:05Z")]
    monkeypatch.setattr(records, "STORE", records.CalibrationStore(*both))
    html = ep7_page.outro_html()
    assert "a check costs 1.50× a step for 5 positions and 2.10× for 9 (measured on this server" in html
    assert "4-bit weights)" in html


def test_the_summary_says_what_the_episodes_say_from_the_same_record(model_absent, monkeypatch):
    from specdec_playable.episodes import EPISODES
    from specdec_playable.kit.site import summary

    shipped = summary.sentences(EPISODES)[7]
    assert cpu.SHIPPED in shipped and cpu.HERE not in shipped
    _serve(monkeypatch, SERVER)
    measured = summary.sentences(EPISODES)[7]  # the record changed: so does the sentence
    assert f"{cpu.HERE}: {STAMP}" in measured and "costs 1.15× a one-position step" in measured
    assert f"{cpu.HERE}: {STAMP}" in ep7_page.lesson_html()
