"""Core tests for Episode 4's texts: data files, tokenizer, automatic rule, paste."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from specdec_playable.sim import relay
import hand_texts as tx

SEED = 20240404
IDS = ("js-loop", "json-record", "form-letter", "translation-fr", "poem-kettle")


# --- data files ---------------------------------------------------------------


def test_all_five_texts_load_in_teaching_order():
    loaded = tx.load_texts()
    assert [t.kind for t in loaded] == ["code", "json", "letter", "translation", "poem"]
    assert {t.id for t in loaded} == set(IDS)


@pytest.mark.parametrize("tid", IDS)
def test_data_file_is_valid(tid):
    t = tx.load_text(tid)
    n = len(t.tokens)
    assert n >= 40
    assert t.q.shape == (n,) and np.isfinite(t.q).all()
    assert ((t.q >= 0) & (t.q <= 1)).all()
    assert all(isinstance(s, str) and s for s in t.tokens)
    assert len(t.decoys) == n and all(d and d != s for d, s in zip(t.decoys, t.tokens))
    assert len(t.tiers) == n
    assert np.array_equal(t.q, [tx.TIERS[k] for k in t.tiers])
    assert t.title and t.description.strip().endswith(".")


@pytest.mark.parametrize("tid", IDS)
def test_tokens_join_to_source_and_match_the_tokenizer(tid):
    t = tx.load_text(tid)
    assert "".join(t.tokens) == t.source
    assert tx.tokenize(t.source) == list(t.tokens)


def test_code_and_poem_are_40_to_80_tokens():
    assert 40 <= len(tx.load_text("js-loop")) <= 80
    assert 40 <= len(tx.load_text("poem-kettle")) <= 80


def test_loaded_texts_are_cached_and_immutable():
    t = tx.load_text("js-loop")
    assert tx.load_text("js-loop") is t
    assert tx.load_texts() is tx.load_texts()
    assert not t.q.flags.writeable
    with pytest.raises(ValueError):
        t.q[0] = 0.0
    with pytest.raises(dataclasses.FrozenInstanceError):
        t.tokens = ("x",)
    assert isinstance(t.tokens, tuple) and isinstance(t.decoys, tuple)


@pytest.mark.parametrize("bad", ["nope", "../texts/js-loop", "", None, 3])
def test_unknown_text_id_is_refused(bad):
    with pytest.raises(ValueError, match="text id must be one of"):
        tx.load_text(bad)


# --- malformed files ----------------------------------------------------------


def _good_record():
    return {
        "id": "tiny",
        "title": "Tiny",
        "kind": "code",
        "description": "A tiny text.",
        "tokens": [
            {"text": "x", "q": 0.35, "tier": "content", "decoy": "y"},
            {"text": ";", "q": 0.97, "tier": "forced", "decoy": ","},
        ],
    }


def _write(tmp_path, record, name="tiny.json"):
    path = tmp_path / name
    path.write_text(record if isinstance(record, str) else json.dumps(record), encoding="utf-8")
    return path


def test_good_record_reads(tmp_path):
    t = tx._read_text_file(_write(tmp_path, _good_record()))
    assert t.source == "x;" and t.q.tolist() == [0.35, 0.97]


def _with_token(i, **change):
    rec = _good_record()
    rec["tokens"][i].update(change)
    return rec


@pytest.mark.parametrize(
    "record, message",
    [
        ('{"id": "tiny", "tokens": [', r"tiny\.json: not valid JSON"),
        ("[1, 2]", r"tiny\.json: the file must hold one JSON object"),
        (
            _with_token(1, q=1.5, tier=None),
            r"tiny\.json: token 1 .*'q' must be a finite number in \[0, 1\]; got 1\.5",
        ),
        (_with_token(0, q=-0.1, tier=None), r"token 0 .*got -0\.1"),
        (_with_token(1, q="high"), r"token 1 .*'q' must be a finite number"),
        (_with_token(1, q=True), r"token 1 .*'q' must be a finite number"),
        (_with_token(0, text=""), r"tiny\.json: token 0: 'text' must be a non-empty string"),
        (_with_token(1, decoy=""), r"token 1 .*'decoy' must be a non-empty string"),
        (_with_token(1, decoy=";"), r"token 1 .*'decoy' must be a wrong guess"),
        (_with_token(0, tier="boring"), r"token 0 .*'tier' must be one of"),
        (_with_token(0, q=0.9), r"token 0 .*tier 'content' sets 0\.35"),
        (_with_token(0, colour="red"), r"token 0 has unknown keys \['colour'\]"),
        ({**_good_record(), "id": "other"}, r"'id' must match the file name"),
        ({**_good_record(), "tokens": []}, r"'tokens' must be a non-empty list"),
        ({**_good_record(), "title": " "}, r"'title' must be a non-empty string"),
    ],
)
def test_malformed_file_names_the_problem(tmp_path, record, message):
    if isinstance(record, dict):
        for tok in record.get("tokens", []):
            if tok.get("tier", "") is None:
                del tok["tier"]
    path = _write(tmp_path, record)
    with pytest.raises(ValueError, match=message):
        tx._read_text_file(path)


def test_missing_decoy_and_nan_are_refused(tmp_path):
    rec = _good_record()
    del rec["tokens"][1]["decoy"]
    with pytest.raises(ValueError, match=r"token 1 .*'decoy'"):
        tx._read_text_file(_write(tmp_path, rec))
    text = json.dumps(_good_record()).replace("0.97", "NaN")  # json accepts NaN; we must not
    with pytest.raises(ValueError, match=r"token 1 .*got nan"):
        tx._read_text_file(_write(tmp_path, text))


def test_tiers_all_or_none(tmp_path):
    rec = _good_record()
    del rec["tokens"][1]["tier"]
    with pytest.raises(ValueError, match="token 1 has no 'tier'"):
        tx._read_text_file(_write(tmp_path, rec))
    for tok in rec["tokens"]:
        tok.pop("tier", None)
    assert tx._read_text_file(_write(tmp_path, rec)).tiers == ()


# --- tokenizer ----------------------------------------------------------------


@given(st.text())
@settings(max_examples=400)
def test_tokenize_round_trips_any_text(s):
    toks = tx.tokenize(s)
    assert "".join(toks) == s
    assert all(toks)
    # Only the last token may be whitespace alone.
    assert all(t.strip() for t in toks[:-1])


@pytest.mark.parametrize(
    "s",
    [
        "",
        "   \n\t ",
        "<script>alert('hi')</script>",
        "x\r\n  y\u2028z\u00a0w",
        "e\u0301t\u00e9 \u2014 na\u00efve",
        "\u6f22\u5b57\u304b\u306a \U0001f600\U0001f44d\U0001f3fd",
        "a\x00b\x1b[31m",
        "\ud800x \udfff9",  # lone surrogates, as a browser never sends but Python allows
        "i++ === 3.14e-10 // {\"k\": [1, 2]}",
    ],
)
def test_tokenize_round_trips_edge_cases(s):
    assert "".join(tx.tokenize(s)) == s


def test_tokenize_splits_as_documented():
    assert tx.tokenize("for (let i = 0; i < n; i++) {") == [
        "for", " (", "let", " i", " =", " 0", ";", " i", " <", " n", ";", " i", "+", "+", ")", " {",
    ]
    assert tx.tokenize("x1 = 42abc\n") == ["x1", " =", " 42", "abc", "\n"]
    assert tx.tokenize("don't") == ["don", "'", "t"]


def test_tokenize_refuses_non_strings():
    with pytest.raises(ValueError, match="must be a string"):
        tx.tokenize(b"bytes")


# --- the automatic rule -------------------------------------------------------


def test_rule_on_a_loop():
    toks = tx.tokenize("for (let i = 0; i < items.length; i++) { total += items[i]; }")
    tiers = dict(zip(range(len(toks)), tx.classify(toks)))
    by = {tok: tiers[j] for j, tok in reversed(list(enumerate(toks)))}  # first occurrence
    assert by[")"] == "forced" and by[";"] == "forced" and by[" }"] == "forced"
    assert by[" ("] == "syntax" and by["let"] == "syntax" and by[" +"] == "syntax"
    assert by[" i"] == "content"  # first time: a new name
    assert tiers[toks.index(" <") - 1] == "syntax"  # " i" again: a repeated name
    assert by[" items"] == "content" and tiers[len(toks) - 6] == "syntax"  # "items" repeated
    assert by["for"] == "function" and by[" 0"] == "function"


def test_rule_on_prose_and_quotes():
    toks = tx.tokenize('She said "the kettle sang" and the kettle didn\'t.')
    tiers = tx.classify(toks)
    got = list(zip(toks, tiers))
    assert (" kettle", "content") in got and (" kettle", "syntax") in got
    assert (" the", "function") in got and ("She", "function") in got
    assert got[toks.index(' "')] == (' "', "syntax")  # opening quote
    assert ('"', "forced") in got  # closing quote
    assert ("'", "syntax") in got  # an apostrophe, not a quote


@given(st.text(max_size=300))
@settings(max_examples=200)
def test_rule_and_decoys_on_any_text(s):
    toks = tx.tokenize(s)
    p = tx.guess_probabilities(toks)
    assert p.shape == (len(toks),) and not p.flags.writeable
    assert set(p.tolist()) <= set(tx.TIERS.values())
    assert set(tx.classify(toks)) <= set(tx.AUTO_TIERS)
    d = tx.make_decoys(toks)
    assert len(d) == len(toks)
    assert all(isinstance(x, str) and x and x != t for x, t in zip(d, toks))
    assert d == tx.make_decoys(toks)  # deterministic


def test_decoys_are_plausible_not_noise():
    toks = ["The", " cat", " sat", " on", " the", " mat", ".", " 9", ")", " const"]
    toks += ["\n  total", " i"]
    d = dict(zip(toks, tx.make_decoys(toks)))
    assert d["The"] == "A" and d[" on"] == " in" and d[" the"] == " a"
    assert d["."] == "," and d[")"] == "," and d[" 9"] == " 10" and d[" const"] == " let"
    assert d[" i"] == " j"  # a new one-letter name: the next letter
    assert d["\n  total"].startswith("\n  ")  # keeps the token's leading whitespace


def test_repeated_name_decoy_is_another_name_from_the_text():
    toks = tx.tokenize("price = base; total = price")
    assert tx.make_decoys(toks)[-1] == " total"


def test_rule_inputs_are_checked():
    with pytest.raises(ValueError, match="not one string"):
        tx.guess_probabilities("abc")
    with pytest.raises(ValueError, match=r"tokens\[1\] must be a non-empty string"):
        tx.make_decoys(["a", ""])


def test_automatic_rule_also_ranks_code_above_poem():
    code = tx.guess_probabilities(tx.load_text("js-loop").tokens).mean()
    poem = tx.guess_probabilities(tx.load_text("poem-kettle").tokens).mean()
    assert code - poem > 0.2


# --- the relay over the texts --------------------------------------------------


def _runs(t, n, seed):
    gens = np.random.default_rng(seed).spawn(n)
    return [
        relay.run(t.tokens, t.q, 6, rng=g, big_pass_ms=600, draft_step_ms=90, decoys=t.decoys)
        for g in gens
    ]


def test_boilerplate_flies_poetry_stalls():
    # 400 runs each, k = 6, draft step 15% of a big pass. The standard error of
    # each mean acceptance rate is below 0.004 (per-run sd < 0.07); measured
    # means are about 0.89 (code) and 0.44 (poem), so 0.3 is a wide margin.
    code = _runs(tx.load_text("js-loop"), 400, SEED)
    poem = _runs(tx.load_text("poem-kettle"), 400, SEED + 1)
    acc_code = np.mean([r.acceptance_rate for r in code])
    acc_poem = np.mean([r.acceptance_rate for r in poem])
    assert acc_code - acc_poem > 0.3
    assert np.mean([r.speedup for r in code]) > 2.0
    assert np.mean([r.speedup for r in poem]) < 1.2


@pytest.mark.parametrize("tid", IDS)
def test_acceptance_rate_tracks_mean_p(tid):
    # Whether a position is judged depends only on earlier positions, so the
    # acceptance rate is a weighted mean of q; with k = 6 the weights are near
    # uniform. 300 runs: standard error < 0.005; tolerance 0.03.
    t = tx.load_text(tid)
    acc = np.mean([r.acceptance_rate for r in _runs(t, 300, SEED)])
    assert abs(acc - t.q.mean()) < 0.03


@pytest.mark.parametrize("tid", IDS)
def test_relay_output_is_always_the_text(tid):
    t = tx.load_text(tid)
    for r in _runs(t, 50, SEED):
        assert "".join(r.output) == t.source
        rej = r.events.kind == "rejected"
        for pos, text in zip(r.events.token[rej], r.events.text[rej]):
            assert text == t.decoys[pos]


# --- pasted text --------------------------------------------------------------


def test_paste_too_long_gets_a_visitor_message():
    with pytest.raises(ValueError, match=r"at most 2,000 characters; got 2,001\."):
        tx.text_from_paste("a" * 2001)
    with pytest.raises(ValueError, match=r"at most 10 characters; got 12"):
        tx.text_from_paste("hello world!", max_chars=10)
    assert len(tx.text_from_paste("a " * 1000).source) == 2000


@pytest.mark.parametrize("s", ["", " ", "\n\t  \n"])
def test_paste_empty_is_refused(s):
    with pytest.raises(ValueError, match="Your text is empty"):
        tx.text_from_paste(s)


@pytest.mark.parametrize("bad", [None, b"bytes", 42])
def test_paste_non_string_is_refused(bad):
    with pytest.raises(ValueError, match="must be a string"):
        tx.text_from_paste(bad)


def test_paste_max_chars_is_checked():
    with pytest.raises(ValueError, match=r"max_chars must be an integer"):
        tx.text_from_paste("hi", max_chars=0)


def test_paste_keeps_markup_as_plain_text():
    s = "<script>alert(document.cookie)</script>\n{{ 7*7 }} __import__('os')"
    t = tx.text_from_paste(s)
    assert t.source == s  # kept verbatim, nothing evaluated or escaped here
    assert t.kind == "pasted" and len(t.tokens) == len(t.decoys) == len(t.q) == len(t.tiers)
    assert not t.q.flags.writeable
    r = relay.run(t.tokens, t.q, 6, rng=SEED, decoys=t.decoys)
    assert "".join(r.output) == s


def test_the_texts_reader_imports_no_ui_libraries():
    code = (
        "import sys, specdec_playable.data.texts\n"
        "bad = [m for m in ('panel', 'bokeh', 'param') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
