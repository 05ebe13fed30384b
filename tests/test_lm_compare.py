"""lm.compare with the real model: a speculative run and a plain run of one prompt, raced turn by
turn, what a poller sees while they write (Live snapshots), cancellation, and the JSON round trip
of a finished run."""

from __future__ import annotations

import json
import threading

import numpy as np
import pytest

from specdec_playable import lm
from specdec_playable.lm.compare import (Comparison, Live, compare, comparison_from_json,
                                         comparison_to_json, token_texts)
from specdec_playable.lm.registry import make_draft
from specdec_playable.lm.prompts import PROMPTS

NEW = 10


@pytest.fixture(scope="module")
def model():
    return lm.get_model()


@pytest.fixture(scope="module")
def ids(model):
    return model.tokenizer.chat(PROMPTS["json-reshape"].message)


@pytest.fixture(scope="module")
def watched(model, ids):
    """A greedy comparison and every snapshot a poller took after each pass."""
    snaps: list[Comparison] = []

    def report(live: Live) -> None:
        snaps.append(live.snapshot())

    result = compare(model, ids, "lookup", 4, max_new=NEW, report=report)
    return result, snaps


def test_greedy_speculation_writes_the_plain_runs_tokens(watched):
    c, _ = watched
    assert c.finished and c.greedy
    assert len(c.spec.tokens) == len(c.plain.tokens) == NEW
    assert c.spec.tokens == c.plain.tokens and c.spec.text == c.plain.text
    assert "".join(token_texts(c.spec)) == c.spec.text
    assert c.speedup > 0 and c.step_ms > 0 and c.verify_ms > 0


def test_snapshots_grow_pass_by_pass_and_end_at_the_result(watched):
    c, snaps = watched
    assert {s.phase for s in snaps} == {"running"}
    for run in ("spec", "plain"):
        lengths = [len(getattr(s, run).tokens) for s in snaps]
        assert lengths[0] == 0 and lengths == sorted(lengths)
        final = getattr(c, run)
        for s in snaps[1:]:
            part = getattr(s, run)
            assert part.tokens == final.tokens[:len(part.tokens)] and part.stopped == "running"
            assert part.text == final.text[:len(part.text)]
        assert getattr(snaps[-1], run).tokens == final.tokens
    # The runs take turns: neither is ever more than a round (k + 1 tokens) ahead of the other.
    assert all(abs(len(s.spec.tokens) - len(s.plain.tokens)) <= 5 for s in snaps)
    # The plain run reports after each pass: its prompt's pass writes the first token.
    plain_lengths = sorted({len(s.plain.tokens) for s in snaps})
    assert plain_lengths == list(range(0, NEW + 1))
    last_spec = snaps[-1].spec
    assert (last_spec.proposed, last_spec.accepted, last_spec.rejected) == \
        (c.spec.proposed, c.spec.accepted, c.spec.rejected)


def test_a_finished_run_carries_its_turns_and_a_fair_speedup(watched):
    c, _ = watched
    t = c.turns
    assert t is not None and len(t) == c.spec.passes + c.plain.passes + 2
    # Each run's clock is its own turns laid end to end.
    for run, name in ((c.spec, "spec"), (c.plain, "plain")):
        mine = (t.run == name) & (t.round > 0)
        assert run.decode_ms == pytest.approx(float(t.ms[mine].sum()), rel=1e-9)
    f = c.fair
    assert c.speedup == f.speedup == pytest.approx(c.spec.tokens_per_second / c.plain.tokens_per_second)
    assert f.low <= f.speedup <= f.high and f.n_rounds == c.spec.passes


def test_a_snapshot_is_built_once_per_pass():
    class _Rec:
        def __init__(self):
            self.updates = [1]
            self.calls = 0

        def __call__(self, update):
            self.updates.append(update)

        def so_far(self, ups=None):
            self.calls += 1
            return None

    spec, plain = _Rec(), _Rec()
    live = Live(spec, plain)
    a, b = live.snapshot(), live.snapshot()
    assert a is b and spec.calls == plain.calls == 1
    live.add("plain", 2)
    live.snapshot()
    assert spec.calls == plain.calls == 2


def test_cancel_before_start_stops_both_runs(model, ids):
    stop = threading.Event()
    stop.set()
    c = compare(model, ids, "lookup", 4, max_new=NEW, cancel=stop)
    assert c.finished and c.spec.stopped == c.plain.stopped == "cancelled"
    assert c.spec.tokens == c.plain.tokens == ()


def test_a_finished_run_survives_json(watched):
    c, _ = watched
    back = comparison_from_json(json.loads(json.dumps(comparison_to_json(c))))
    for a, b in ((c.spec, back.spec), (c.plain, back.plain)):
        assert a.tokens == b.tokens and a.text == b.text and a.marks == b.marks
        assert a.events.to_dict() == b.events.to_dict()
        assert np.array_equal(a.accept_at, b.accept_at, equal_nan=True)
    assert back.speedup == c.speedup and back.fair.low == c.fair.low


def test_unknown_draft_is_refused():
    with pytest.raises(ValueError, match="draft must be one of"):
        make_draft("oracle")


def test_the_recorded_runs_are_what_the_model_writes_now(model):
    from specdec_playable.data.recorded import recorded_meta, recorded_runs
    from specdec_playable.lm.decode import generate

    rec = recorded_runs()[("repeat", "lookup")]
    now = generate(model, model.tokenizer.chat(PROMPTS["repeat"].message), max_new=recorded_meta()["max_new"])
    assert now.tokens == rec.plain.tokens == rec.spec.tokens


def test_a_run_in_a_model_process_is_mirrored_pass_by_pass(model, ids, monkeypatch):
    """The same comparison made in a child process: same tokens, snapshots here as they grow, and a
    cancelled run leaves the child ready for the next one. As it loads, the child (this server's
    first) times its own passes (bounded by SDP_CALIBRATE_S) and this process keeps the record."""
    from specdec_playable.lm.calibrate import CALIBRATION_NS
    from specdec_playable.runtime import service as interface
    from specdec_playable.runtime.model_process import CALIBRATE_ENV, ModelProcess

    text = PROMPTS["json-reshape"].message
    here = compare(model, ids, "lookup", 4, max_new=NEW)
    from specdec_playable.runtime import calibration as records

    monkeypatch.setenv(CALIBRATE_ENV, "1.5")
    monkeypatch.setattr(records, "STORE", records.CalibrationStore())  # this test's own, undone after it
    child = ModelProcess()
    try:
        record = child.load()
        assert record is not None and interface.server_pass_times() is record
        times = record.times
        assert times.n_positions == CALIBRATION_NS and times.repeats >= 5 and times.monotone
        # the budget, plus at most the rounds it must finish, the warm-up and the extra rounds
        assert times.seconds < 1.5 + 7 * 3.0
        assert all(ms > 0 for ms in times.ms) and times.kernel in ("numba", "numpy")
        assert record.weights == "f32" and record.measured_utc.endswith("Z")
        snaps = []
        there = child.compare(text, "lookup", 4, max_new=NEW, max_seconds=120,
                              report=lambda live: snaps.append(live.snapshot()))
        assert there.spec.tokens == here.spec.tokens and there.plain.tokens == here.plain.tokens
        assert there.spec.prompt == tuple(ids)
        assert snaps[0].phase == "running" and len(snaps[0].spec.tokens) == 0
        assert snaps[-1].plain.tokens == there.plain.tokens and there.turns is not None
        assert all(s.spec.tokens == there.spec.tokens[:len(s.spec.tokens)] for s in snaps)
        stop = threading.Event()
        stop.set()
        cancelled = child.compare(text, "early-exit", 4, max_new=64, max_seconds=120, cancel=stop)
        assert cancelled.spec.stopped == cancelled.plain.stopped == "cancelled"
        again = child.compare(text, "lookup", 4, max_new=NEW, max_seconds=120)
        assert again.spec.tokens == here.spec.tokens and child.alive
    finally:
        child.close()
    assert not child.alive
