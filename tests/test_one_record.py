"""One truth in both weight formats: every sentence that prices a CPU pass on Episodes 4, 7 and 8,
the summary and the teacher's guide reads the one record of the format it speaks of, and says which.

A server keeps one calibration record per weight format (``runtime.calibration``). Here the server
has measured both, with pass times unlike each other and unlike the shipped ones, and serves in
float32 or in 4 bits; each page's sentence must quote the figure of the right record beside that
record's own stamp, and no shipped figure. A server that has measured only its own format prices
the other one with the shipped record, and says so.
"""

from __future__ import annotations

import html
import importlib
import re

import param
import pytest

from specdec_playable.episodes import EPISODES
from specdec_playable.episodes.ep7.state import RealText
from specdec_playable.episodes.ep8.state import BusyAndTrees
from specdec_playable.episodes.ep8.view import cpu_html
from specdec_playable.kit import cpu
from specdec_playable.kit.site import discussion, summary
from specdec_playable.lm.calibrate import PassTimes
from specdec_playable.runtime import calibration as records
from specdec_playable.runtime import model_process

page4 = importlib.import_module("specdec_playable.episodes.ep4.page")
page7 = importlib.import_module("specdec_playable.episodes.ep7.page")

N = (1, 2, 4, 5, 8, 9, 16, 32)
#: Two records as a server would measure them: float32 with a cheap check, 4 bits with a dear one
#: (ratios 1.23 and 2.71 at 5 positions, neither of them a shipped figure).
RECORDS = {
    "f32": records.Calibration(
        PassTimes(N, (20.0, 21.0, 23.0, 24.6, 27.0, 28.2, 36.0, 55.0), repeats=5, seconds=4.0,
                  threads=1, kernel="numba", measured_at=1.0),
        "f32", "AMD EPYC 7B13", 2, "2026-12-07T09:00:00Z"),
    "q4": records.Calibration(
        PassTimes(N, (10.0, 13.0, 19.0, 27.1, 30.0, 33.3, 55.0, 98.0), repeats=5, seconds=4.0,
                  threads=1, kernel="numba", measured_at=2.0),
        "q4", "AMD EPYC 7B13", 2, "2026-12-07T09:05:00Z"),
}
OTHER = {"f32": "q4", "q4": "f32"}


def _serve(monkeypatch, weights: str, measured: tuple[str, ...]) -> None:
    """This process's server serves ``weights`` and has measured the formats in ``measured``."""
    monkeypatch.setattr(model_process, "_WEIGHTS", [weights])
    monkeypatch.setattr(records, "STORE", records.CalibrationStore(*(RECORDS[w] for w in measured)))


def _record(weights: str, measured: tuple[str, ...]) -> cpu.CpuPasses:
    """What a sentence about ``weights`` must quote: the server's record, else the shipped one."""
    return cpu.server_passes(weights) if weights in measured else cpu.shipped_passes(weights)


def _text(h: str) -> str:
    """What a reader reads: tags (a glossary link inside a sentence) out, entities decoded."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", "", h)).split())


#: A pass's cost in steps as the pages word it ("1.23× a single decode step", "1.23 single passes",
#: "1.23× a step", "1.23× a one-position step", "1.23× a single one", "1.23×, where the H200").
PASS_COST = re.compile(r"(\d+\.\d\d)(?:×)? (?:single passes|a single|a one-position|a step)"
                       r"|(\d+\.\d\d)×, where the H200")


def _check_words(p: cpu.CpuPasses, n: int = 5) -> str:
    return f"{p.ratio(n):.2f}"


SETUPS = [(w, m) for w in ("f32", "q4") for m in ((w,), ("f32", "q4"))]


@pytest.fixture(params=SETUPS, ids=[f"serves-{w}-measured-{'+'.join(m)}" for w, m in SETUPS])
def server(request, monkeypatch):
    weights, measured = request.param
    _serve(monkeypatch, weights, measured)
    return weights, measured


def test_the_two_records_differ_from_each_other_and_from_the_shipped_ones():
    ratios = {RECORDS[w].times.ratio(5) for w in RECORDS}
    shipped = {round(cpu.shipped_passes(w).ratio(5), 2) for w in RECORDS}
    assert len(ratios) == 2 and not {round(r, 2) for r in ratios} & shipped


def test_episode4_prices_each_format_from_its_own_record(server):
    _, measured = server
    text = _text(page4.explain_html())
    f32, q4 = _record("f32", measured), _record("q4", measured)
    assert (f"costs {f32.ratio(5):.2f} single passes with float32 weights ({f32.source}) and "
            f"{q4.ratio(5):.2f} with the file's 4-bit weights ({q4.source})") in text
    assert f32.weight_words in f32.source and q4.weight_words in q4.source


def test_episode7_explains_with_the_format_of_the_run_shown(server):
    weights, measured = server
    state = RealText()
    assert state.weight_format == weights
    lesson, outro = page7.explanation(state)
    for shown in (weights, OTHER[weights], weights):
        if shown != weights:  # a run in the other format is shown
            with param.edit_constant(state):
                state.weights = shown
        else:
            with param.edit_constant(state):
                state.weights = ""
        p = _record(shown, measured)
        said = _text(lesson.object)
        assert (f"with its {p.weight_words} one pass over 5 positions takes {p.ratio(5):.2f}× a "
                f"single decode step here ({p.source};") in said
        end = _text(outro.object)
        assert (f"on this CPU with {p.weight_words} it") in end
        assert f"({p.ratio(5):.2f}× a step for 5 positions, {p.ratio(9):.2f}× for 9)" in end
        other = _record(OTHER[shown], measured)
        # The float32 outro adds the 4-bit record's own figures; the 4-bit one quotes no float32.
        assert (f"{other.ratio(5):.2f}× a step for 5 positions" in end) == (shown == "f32")


def test_episode8_prices_one_users_check_with_the_servers_record(server):
    weights, measured = server
    s = BusyAndTrees(rng=0, k=4)
    p = _record(weights, measured)
    text = _text(cpu_html(s))
    assert f"<strong>{p.ratio(5):.2f}×</strong>" in html.unescape(cpu_html(s))
    assert f"{p.where} ({p.details})" in text
    assert s.cpu_q4 is _record("q4", measured)


def test_the_summary_and_the_guide_quote_the_servers_record(server):
    weights, measured = server
    p = _record(weights, measured)
    sentence = _text(summary.sentences(EPISODES)[7])
    assert f"costs {p.ratio(5):.2f}× a one-position step" in sentence and p.source in sentence
    ep1, ep7 = _text(discussion._ep1_hardware()), _text(discussion._ep7_hardware())
    on = "On this server's CPU" if weights in measured else "On the project's CPU"
    assert (f"{on}, with {p.weight_words}, a pass over 5 positions takes {p.ratio(5):.2f}× "
            f"a single one ({p.source})") in ep1
    assert (f"{on}, with {p.weight_words}, a pass over 5 positions costs {p.ratio(5):.2f}× "
            f"a single step ({p.source})") in ep7


def test_every_page_quotes_one_figure_per_format(server):
    """Every pass cost the pages quote for this CPU is one record's figure for 5 or 9 positions:
    the record of the format the sentence speaks of, never a shipped one the server replaced."""
    weights, measured = server
    state = RealText()
    lesson, outro = page7.explanation(state)
    texts = [page4.explain_html(), summary.sentences(EPISODES)[7], discussion._ep1_hardware(),
             discussion._ep7_hardware(), cpu_html(BusyAndTrees(rng=0, k=4)), lesson.object,
             outro.object]
    with param.edit_constant(state):
        state.weights = OTHER[weights]
    texts += [lesson.object, outro.object]
    allowed = {f"{_record(w, measured).ratio(n):.2f}" for w in ("f32", "q4") for n in (5, 9)}
    found = [a or b for t in texts for a, b in PASS_COST.findall(_text(t))]
    assert len(found) >= 10 and set(found) <= allowed, (set(found) - allowed, allowed)
