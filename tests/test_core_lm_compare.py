"""lm.compare with the real model: a speculative run and a plain run of one prompt, what a poller
sees while they write (Live snapshots), cancellation, and the JSON round trip of a finished run."""

from __future__ import annotations

import json
import threading

import numpy as np
import pytest

from specdec_playable import lm
from specdec_playable.lm.compare import (
    Comparison, Live, compare, comparison_from_json, comparison_to_json, make_draft, token_texts)
from specdec_playable.lm.prompts import PROMPTS

NEW = 10


@pytest.fixture(scope="module")
def model():
    return lm.get_model()


@pytest.fixture(scope="module")
def ids(model):
    return model.tokenizer.chat(PROMPTS["json-reshape"][1])


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
    phases = [s.phase for s in snaps]
    assert phases[0] == "speculative" and phases[-1] == "plain"
    assert phases == sorted(phases, key=("speculative", "plain").index)  # never back
    spec_snaps = [s for s in snaps if s.phase == "speculative"]
    lengths = [len(s.spec.tokens) for s in spec_snaps]
    assert lengths[0] == 0 and lengths == sorted(lengths)
    for s in spec_snaps[1:]:
        n = len(s.spec.tokens)
        assert s.spec.tokens == c.spec.tokens[:n] and s.spec.stopped == "running"
        assert s.spec.text == c.spec.text[:len(s.spec.text)]
    plain_snaps = [s for s in snaps if s.phase == "plain"]
    assert all(s.spec is not None and s.spec.tokens == c.spec.tokens for s in plain_snaps)
    # The plain run reports after each pass: its prompt's pass writes the first token.
    assert [len(s.plain.tokens) for s in plain_snaps] == list(range(1, NEW + 1))
    assert plain_snaps[-1].plain.tokens == c.plain.tokens
    # The counts a snapshot shows are the finished run's when it is complete.
    last_spec = spec_snaps[-1].spec
    assert (last_spec.proposed, last_spec.accepted, last_spec.rejected) == \
        (c.spec.proposed, c.spec.accepted, c.spec.rejected)


def test_a_snapshot_is_built_once_per_pass():
    class _Rec:
        updates = [1]
        calls = 0

        def so_far(self):
            self.calls += 1
            return None

    rec = _Rec()
    live = Live(rec)
    a, b = live.snapshot(), live.snapshot()
    assert a is b and rec.calls == 1
    rec.updates.append(2)
    live.snapshot()
    assert rec.calls == 2


def test_cancel_before_start_returns_no_plain_run(model, ids):
    stop = threading.Event()
    stop.set()
    c = compare(model, ids, "lookup", 4, max_new=NEW, cancel=stop)
    assert c.finished and c.plain is None and c.spec.stopped == "cancelled"


def test_a_finished_run_survives_json(watched):
    c, _ = watched
    back = comparison_from_json(json.loads(json.dumps(comparison_to_json(c))))
    for a, b in ((c.spec, back.spec), (c.plain, back.plain)):
        assert a.tokens == b.tokens and a.text == b.text and a.marks == b.marks
        assert a.events.to_dict() == b.events.to_dict()
        assert np.array_equal(a.accept_at, b.accept_at, equal_nan=True)
    assert back.speedup == c.speedup


def test_unknown_draft_is_refused():
    with pytest.raises(ValueError, match="draft must be one of"):
        make_draft("oracle")


def test_the_recorded_runs_are_what_the_model_writes_now(model):
    from specdec_playable.state.ep7 import recorded_meta, recorded_runs
    from specdec_playable.lm.decode import generate

    rec = recorded_runs()[("table", "lookup")]
    now = generate(model, model.tokenizer.chat(PROMPTS["table"][1]), max_new=recorded_meta()["max_new"])
    assert now.tokens == rec.plain.tokens == rec.spec.tokens


def test_a_run_in_a_model_process_is_mirrored_pass_by_pass(model, ids):
    """The same comparison made in a child process: same tokens, snapshots here as they grow, and a
    cancelled run leaves the child ready for the next one."""
    from specdec_playable.serve.model_process import ModelProcess

    text = PROMPTS["json-reshape"][1]
    here = compare(model, ids, "lookup", 4, max_new=NEW)
    child = ModelProcess()
    try:
        snaps = []
        there = child.compare(text, "lookup", 4, max_new=NEW, max_seconds=120,
                              report=lambda live: snaps.append(live.snapshot()))
        assert there.spec.tokens == here.spec.tokens and there.plain.tokens == here.plain.tokens
        assert there.spec.prompt == tuple(ids)
        assert snaps[0].phase == "speculative" and len(snaps[0].spec.tokens) == 0
        assert snaps[-1].phase == "plain" and snaps[-1].plain.tokens == there.plain.tokens
        assert all(s.spec.tokens == there.spec.tokens[:len(s.spec.tokens)] for s in snaps)
        stop = threading.Event()
        stop.set()
        cancelled = child.compare(text, "early-exit", 4, max_new=64, max_seconds=120, cancel=stop)
        assert cancelled.spec.stopped == "cancelled" and cancelled.plain is None
        again = child.compare(text, "lookup", 4, max_new=NEW, max_seconds=120)
        assert again.spec.tokens == here.spec.tokens and child.alive
    finally:
        child.close()
    assert not child.alive
