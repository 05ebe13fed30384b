"""The command line: simulate's output and its refusals."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from specdec_playable.app.cli import main
from specdec_playable.sim import theory

KEYS = {"q", "k", "c", "rounds", "seed", "speedup", "ci_low", "ci_high", "theory_speedup",
        "mean_accepted", "tokens_per_round"}


def _json(capsys, *argv):
    assert main(["simulate", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_simulate_json_has_the_documented_keys_and_theory(capsys):
    out = _json(capsys, "--q", "0.8", "--k", "4", "--c", "0.1", "--seed", "3")
    assert set(out) == KEYS
    assert out["rounds"] == 2000 and out["seed"] == 3
    assert out["theory_speedup"] == pytest.approx(theory.expected_speedup(0.8, 4, 0.1))
    assert out["ci_low"] < out["speedup"] < out["ci_high"]
    assert out["tokens_per_round"] == pytest.approx(out["mean_accepted"] + 1)


def test_same_seed_same_output_and_other_seed_differs(capsys):
    a = _json(capsys, "--q", "0.6", "--k", "5", "--c", "0.2", "--seed", "11", "--rounds", "500")
    b = _json(capsys, "--q", "0.6", "--k", "5", "--c", "0.2", "--seed", "11", "--rounds", "500")
    c = _json(capsys, "--q", "0.6", "--k", "5", "--c", "0.2", "--seed", "12", "--rounds", "500")
    assert a == b
    assert a["speedup"] != c["speedup"]


def test_text_output_shows_measured_ci_and_theory(capsys):
    assert main(["simulate", "--q", "0.8", "--k", "4", "--c", "0.1", "--seed", "1"]) == 0
    text = capsys.readouterr().out
    assert "measured speedup" in text and "95% CI" in text and "theory speedup" in text


@pytest.mark.parametrize("argv, needle", [
    (["--q", "1.5", "--k", "4", "--c", "0.1"], "q must be"),
    (["--q", "nan", "--k", "4", "--c", "0.1"], "q must be"),
    (["--q", "0.5", "--k", "0", "--c", "0.1"], "k must be"),
    (["--q", "0.5", "--k", "65", "--c", "0.1"], "k must be"),
    (["--q", "0.5", "--k", "4", "--c", "-1"], "c must be"),
    (["--q", "0.5", "--k", "4", "--c", "inf"], "c must be"),
    (["--q", "0.5", "--k", "4", "--c", "0.1", "--rounds", "0"], "n_rounds must be"),
    (["--q", "0.5", "--k", "4", "--c", "0.1", "--seed", "-3"], "seed"),
    (["--q", "x", "--k", "4", "--c", "0.1"], "invalid float"),
    (["--k", "4", "--c", "0.1"], "required"),
])
def test_bad_arguments_exit_2_with_one_line_and_no_traceback(argv, needle):
    proc = subprocess.run([sys.executable, "-m", "specdec_playable", "simulate", *argv],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 or lines[0].startswith("usage:"), proc.stderr
    assert needle in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("argv", [["serve", "--port", "70000"], ["serve", "--port", "abc"],
                                  ["serve", "--allow-websocket-origin", "nohostport"]])
def test_serve_refuses_bad_options(argv):
    proc = subprocess.run([sys.executable, "-m", "specdec_playable", *argv],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr and "error:" in proc.stderr
