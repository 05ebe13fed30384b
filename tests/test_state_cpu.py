"""Which CPU pass costs the pages state, and that they say where they were measured.

With no model process loaded (as in this test process) the pages use the shipped measurement and
say "measured on the machine that built this page"; once a model process has timed its passes,
they use that and say "measured on this server at start-up".
"""

from __future__ import annotations

import importlib

import numpy as np
import pytest

from specdec_playable.data import hardware
from specdec_playable.data.machine import this_machine
from specdec_playable.lm.calibrate import PassTimes
from specdec_playable.runtime import model_process
from specdec_playable.kit import cpu
from specdec_playable.episodes.ep8.state import BusyAndTrees
ep7_page = importlib.import_module("specdec_playable.episodes.ep7.page")

SERVER = PassTimes((1, 2, 4, 5, 8, 9, 16, 32), (20.0, 21.0, 22.5, 23.0, 25.0, 26.0, 33.0, 52.0),
                   repeats=5, seconds=4.0, threads=1, kernel="numba", measured_at=1.0)


@pytest.fixture
def measured_here(monkeypatch):
    monkeypatch.setattr(model_process, "_calibration", [SERVER])


@pytest.fixture
def model_absent(monkeypatch):
    monkeypatch.setattr(model_process, "_calibration", [None])


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
    assert p.here and p.source.startswith(cpu.HERE)
    assert this_machine().describe() in p.source and "1 thread per run" in p.source
    assert p.ratio(5) == pytest.approx(23.0 / 20.0)
    assert p.curve.n_positions.tolist() == list(SERVER.n_positions)


def test_episode8_keeps_one_curve_for_its_session(model_absent, monkeypatch):
    s = BusyAndTrees(rng=0)
    before = s.cpu_curve
    monkeypatch.setattr(model_process, "_calibration", [SERVER])
    assert s.cpu_curve is before  # a page drawn with one curve is not priced with another
    assert BusyAndTrees(rng=0).cpu_curve.n_positions.tolist() == list(SERVER.n_positions)


def test_episode7_lesson_says_where_its_ratio_was_measured(model_absent, monkeypatch):
    from specdec_playable.episodes import ep7
    from specdec_playable.sim import theory

    html = ep7_page.lesson_html()
    r5 = cpu.cpu_passes().ratio(5)
    assert f"takes {r5:.2f}× a single decode step" in html and cpu.SHIPPED in html
    monkeypatch.setattr(model_process, "_calibration", [SERVER])
    html = ep7_page.lesson_html()
    assert "takes 1.15× a single decode step" in html and cpu.HERE in html
    q = float(theory.break_even_q(4, 0.15 / 4))
    assert f"at least q = {q:.2f}" in html
    # the break-even claim holds: a free draft at that q writes 1.15 tokens per pass of 5
    assert float(theory.expected_tokens_per_round(q, 4)) == pytest.approx(1.15, abs=1e-6)


def test_a_dip_in_a_measured_curve_is_taken_as_noise(monkeypatch):
    dipping = PassTimes((1, 2, 4), (30.0, 21.0, 33.0), repeats=3, seconds=1.0, threads=1, kernel="numba")
    monkeypatch.setattr(model_process, "_calibration", [dipping])
    p = cpu.cpu_passes()
    assert p.curve.median_ms.tolist() == [30.0, 30.0, 33.0] and p.ratio(2) == 1.0


@pytest.mark.parametrize("times", [SERVER, PassTimes((1, 5, 9), (20.0, 40.0, 60.0), repeats=3,
                                                     seconds=1.0, threads=2, kernel="numpy")])
def test_episode7_outro_follows_the_pass_costs(monkeypatch, times):
    from specdec_playable.episodes import ep7
    from specdec_playable.sim import theory

    monkeypatch.setattr(model_process, "_calibration", [times])
    html = ep7_page.outro_html()
    r5, r9 = times.ratio(5), times.ratio(9)
    assert f"({r5:.2f}× a step for 5 positions, {r9:.2f}× for 9)" in html
    assert ("is nearly one step too" in html) == (r5 < 1.3)
    assert f"at least q = {float(theory.break_even_q(4, (r5 - 1) / 4)):.2f}" in html
