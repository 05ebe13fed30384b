"""The calibrate command: its JSON parses and holds the record, its table reads, and bad input is
one clear line (exit 2). The output tests run the command in this process with the measurement
replaced by a fixed record (the real one takes seconds and its numbers vary); one test runs the
real model when it is installed, with a small budget, and asserts only the record's form."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from specdec_playable import lm
from specdec_playable.app.cli import main
from specdec_playable.lm.calibrate import CALIBRATION_NS, PassTimes
from specdec_playable.runtime import calibration as records

TIMES = PassTimes((1, 2, 4), (20.0, 20.5, 30.0), repeats=6, seconds=3.0, threads=1, kernel="numba",
                  measured_at=1796415000.0, retimed=2, enforced=True, lowered=(2,))


@pytest.fixture
def fake_measure(monkeypatch):
    """``calibrate`` without the model: every format "measures" :data:`TIMES`."""
    asked = []

    def measure(model, *, budget_s):
        asked.append((model, budget_s))
        return records.stamped(TIMES, model)

    monkeypatch.setattr(lm, "get_model", lambda weights="f32": weights)  # the "model" is its format
    monkeypatch.setattr(records, "measure", measure)
    return asked


def test_json_parses_and_holds_each_format_asked_for(fake_measure, capsys):
    assert main(["calibrate", "--json", "--weights", "both", "--budget", "2.5"]) == 0
    out, err = capsys.readouterr()
    got = json.loads(out)
    assert list(got) == ["f32", "q4"] and fake_measure == [("f32", 2.5), ("q4", 2.5)]
    q4 = got["q4"]
    assert q4["weights"] == "q4" and q4["measured_utc"] == "2026-12-04T20:10:00Z"
    assert q4["times"]["ms"] == [20.0, 20.5, 30.0] and q4["times"]["lowered"] == [2]
    assert q4["stamp"].startswith("measured on a ") and "4-bit weights" in q4["stamp"]
    assert "timing passes (q4" in err  # progress on stderr, none on stdout


def test_the_table_has_the_stamp_a_row_per_size_and_how_it_was_measured(fake_measure, capsys):
    assert main(["calibrate"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("Measured on a ") and lines[0].endswith(
        "1 thread, float32 weights, levelled from the larger sizes")
    assert lines[2].split() == ["1", "20.00", "1.00x"] and lines[4].split() == ["4", "30.00", "1.50x"]
    assert "10% quantile" in lines[5] and "lowered 2" in lines[5]


@pytest.mark.parametrize("argv, needle", [
    (["--weights", "q8"], "invalid choice: 'q8' (choose from 'f32', 'q4', 'both')"),
    (["--budget", "0"], "--budget: must be in (0, 60]; got 0"),
    (["--budget", "soon"], "--budget: must be a number; got 'soon'"),
    (["--json", "extra"], "unrecognized arguments: extra"),
])
def test_bad_input_is_one_clear_line(argv, needle):
    proc = subprocess.run([sys.executable, "-m", "specdec_playable", "calibrate", *argv],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and proc.stdout == ""
    assert needle in proc.stderr and "Traceback" not in proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("specdec-playable") and ": error: " in last


@pytest.mark.skipif(not lm.is_installed(), reason="the model is not installed")
def test_the_real_model_gives_a_monotone_stamped_record(capsys):
    assert main(["calibrate", "--json", "--budget", "0.3"]) == 0
    rec = json.loads(capsys.readouterr().out)["f32"]
    times = rec["times"]
    assert times["n_positions"] == list(CALIBRATION_NS) and times["monotone"] is True
    assert all(ms > 0 for ms in times["ms"]) and times["repeats"] >= 5
    assert rec["weights"] == "f32" and rec["cores"] >= 1 and rec["measured_utc"].endswith("Z")
