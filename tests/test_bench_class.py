"""The class benchmark (``benchmarks/bench_class.py``) reads Episode 7's page as a visitor sees it:
its status line, its verdict and its refusal. These tests hold its readers to the sentences the
state writes, so a change of wording breaks here, not silently in the benchmark's table, and
check its consistency check of the places in line. Nothing here is timed."""

from __future__ import annotations

import html
import math
import sys
from pathlib import Path

import pytest

from ep7_fakes import fake_comparison
from specdec_playable.episodes.ep7 import words as st
from specdec_playable.episodes.ep7.view import notes_html

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import bench_class as bc  # noqa: E402

BUSY = dict(workers=2, running=2, model_loaded=True)


def shown(markup: str) -> str:
    """A pane's HTML as it travels (Panel escapes it), read back by the benchmark."""
    return bc.plain_text(html.escape(markup))


@pytest.mark.parametrize("position,elapsed,recent,wait_s", [
    (3, (10.0, 25.0), (20.0, 30.0, 40.0), 35.0),
    (1, (29.5, 29.8), (30.0,), 0.0),             # "in a moment"
    (20, (0.0, 0.0), (30.0,), 300.0),             # "in about 5.0 min"
])
def test_a_queued_line_reads_back_as_its_place_and_estimate(position, elapsed, recent, wait_s):
    line = st.status_line("queued", position, None, running_elapsed_s=elapsed, recent_run_s=recent,
                          **BUSY)
    got = bc.read_status(line)
    assert (got["kind"], got["position"], got["busy"], got["free"]) == ("queued", position, 2, False)
    assert got["wait_s"] == pytest.approx(wait_s, abs=0.5)


def test_other_lines_read_back_as_what_they_say():
    none_yet = bc.read_status(st.status_line("queued", 2, None, **BUSY))
    assert none_yet["wait_s"] is None and none_yet["no_estimate"]
    free = bc.read_status(st.status_line("queued", 1, None, workers=2, running=1, model_loaded=True))
    assert free["free"] and free["busy"] is None and free["position"] == 1
    assert bc.read_status(st.status_line("running", 0, None, workers=2, running=2,
                                         model_loaded=False))["kind"] == "running"
    assert bc.read_status(st.full_line(4, 2, (1.0,), (5.0,)))["kind"] == "refused"
    assert bc.read_status("The run failed on the server; the error was logged.")["kind"] == "failed"
    assert bc.read_status("This run: your own prompt")["kind"] == "other"


@pytest.mark.parametrize("rounds,verify_ms", [([(4, 4)] * 6, 60.0), ([(4, 0)] * 6, 90.0),
                                              ([(4, 0), (4, 2)] * 5, 80.0)])
def test_the_verdict_reads_back_as_its_numbers(rounds, verify_ms):
    c = fake_comparison(rounds, verify_ms=verify_ms, step_ms=40.0)
    f = c.fair
    got = bc.read_result(shown(notes_html(c, 4, "./ep5")))
    assert got["speedup"] == pytest.approx(f.speedup, abs=0.005)
    assert (got["low"], got["high"]) == pytest.approx((f.low, f.high), abs=0.005)
    assert got["work"] == pytest.approx(f.work_speedup, abs=0.005)
    assert got["tokens_per_pass"] == pytest.approx(f.tokens_per_pass, abs=0.005)
    assert got["verdict"] == f.verdict
    assert bc.read_result("The draft proposed nothing.") is None


def test_paragraphs_keep_the_refusal_apart_from_the_settings_line():
    markup = (f'<p class="sdp-notice ep7-message" role="status">{st.full_line(3, 2, (), ())}</p>'
              '<p class="ep7-settings">Shown below, your earlier run: your own prompt.</p>')
    parts = bc.paragraphs(html.escape(markup))
    assert len(parts) == 2 and parts[0].startswith(bc.REFUSED) and parts[1].startswith("Shown below")


def test_intervals_overlap():
    a = dict(speedup=1.0, low=0.8, high=1.2)
    assert bc.overlap(a, dict(speedup=1.3, low=1.1, high=1.5))
    assert not bc.overlap(a, dict(speedup=1.5, low=1.3, high=1.7))
    assert bc.overlap(a, None) is None and bc.overlap(a, dict(speedup=1, low=math.nan, high=1)) is None


def q(position, t=0.0, free=False, busy=2):
    return dict(kind="queued", position=position, t=t, free=free, busy=None if free else busy, text="")


def ran(t):
    return dict(kind="running", t=t)


def test_consistent_places_pass_and_contradictions_are_named():
    # Two start at once; three wait and move up a place at each start (pages poll in their own
    # time, so each sees its new place a little after the start).
    good = [[q(1, 0.001, free=True), ran(0.3)], [q(2, 0.002, free=True), ran(0.3)],
            [q(1, 0.003), ran(10.0)],
            [q(2, 0.004), q(1, 10.2), ran(15.1)],
            [q(3, 0.010), q(2, 10.1), q(1, 15.3), ran(20.0)]]
    assert bc.check_places(good, workers=2) == []
    swapped = [good[0], good[1], good[2], [q(2, 0.004), q(1, 10.2), ran(20.0)],
               [q(3, 0.010), q(2, 10.1), q(1, 15.3), ran(15.1)]]
    assert any("visitor 5 showed place 2 and started next" in b
               for b in bc.check_places(swapped, workers=2))
    twice = [good[0], good[1], good[2], [q(2, 0.004), q(1, 10.2), ran(15.1)],
             [q(2, 0.010), q(1, 15.3), ran(20.0)]]
    assert any("showed places [1, 2, 2]" in b for b in bc.check_places(twice, workers=2))
    bad = bc.check_places([[q(1), q(2, 1.0)], [q(5, free=True)], [q(2, busy=1)]], workers=2)
    assert any("went up" in b for b in bad)
    assert any("a worker is free" in b for b in bad)
    assert any("1 of 2 workers" in b for b in bad)
