"""runtime.calibration: one calibration record per server, whatever the load when later model
processes start.

The model processes here are real child processes started by ``runtime.model_process`` (the same
pipes, arguments and bookkeeping), but their child is ``tests/fake_child.py``: it calibrates a fake
machine under the load the test sets (``tests/fake_load.py``) instead of the model, so a test
takes a second, and "the load" is exact and seeded.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest
from fake_child import CHILD
from fake_load import LoadedMachine

from specdec_playable.lm.calibrate import CALIBRATION_NS, PassTimes, calibrate_passes
from specdec_playable.runtime import calibration as records
from specdec_playable.runtime import model_process as mp
from specdec_playable.runtime import service as interface


@pytest.fixture
def server(monkeypatch, tmp_path):
    """A fresh server in this process: an empty store, no model loaded, fake children. Returns
    the file the children log their measurements to."""
    monkeypatch.setattr(records, "STORE", records.CalibrationStore())
    monkeypatch.setattr(mp, "_load", [mp.LoadState("waiting", 0.0)])
    monkeypatch.setattr(mp, "_CHILD", CHILD)
    monkeypatch.setattr(mp, "_WEIGHTS", ["f32"])
    log = tmp_path / "measured.log"
    log.touch()
    monkeypatch.setenv("FAKE_LOG", str(log))
    monkeypatch.setenv("FAKE_DIE", "0")
    return log


def _start(monkeypatch, load: float, seed: int, **kw) -> mp.ModelProcess:
    monkeypatch.setenv("FAKE_LOAD", str(load))
    monkeypatch.setenv("FAKE_SEED", str(seed))
    return mp.ModelProcess(**kw)


def _measured(log) -> int:
    return len(log.read_text().splitlines())


def _figures():
    """What the pages state from the record: Episode 8's curve, Episode 7's ratio and break-even
    q, and the summary's sentence."""
    from specdec_playable.episodes import EPISODES
    from specdec_playable.kit.cpu import cpu_passes
    from specdec_playable.kit.site import summary

    cpu = cpu_passes()
    return (cpu.curve.median_ms.tolist(), cpu.ratio(5), cpu.free_draft_break_even(4), cpu.source,
            summary.sentences(EPISODES)[7])


def test_a_later_model_process_under_other_load_gets_the_first_ones_record(server, monkeypatch):
    first = _start(monkeypatch, 0.0, 1)
    try:
        record = first.load()
        before = _figures()
        second = _start(monkeypatch, 0.5, 2)  # the machine got busy
        try:
            assert second.load() is record and interface.server_pass_times() is record
        finally:
            second.close()
    finally:
        first.close()
    assert _measured(server) == 1 and record.times.monotone and record.weights == "f32"
    assert _figures() == before  # every page states the same figures
    # ... which the second would have changed, had it measured under its load:
    busy = LoadedMachine(0.5, rng=2)
    other = calibrate_passes(busy.time_pass, CALIBRATION_NS, clock=busy.clock)
    assert other.ms != record.times.ms


def test_two_model_processes_started_at_once_measure_once(server, monkeypatch):
    a = _start(monkeypatch, 0.3, 3)
    b = _start(monkeypatch, 0.3, 4)  # before either has loaded
    try:
        got = {id(a.load()), id(b.load())}  # a claimed the measurement; b gets a's record
    finally:
        a.close()
        b.close()
    assert _measured(server) == 1 and got == {id(records.STORE.get("f32"))}


def test_a_process_that_dies_before_measuring_leaves_it_to_the_next(server, monkeypatch):
    monkeypatch.setenv("FAKE_DIE", "1")
    dying = _start(monkeypatch, 0.0, 5)
    with pytest.raises(RuntimeError, match="stopped answering"):
        dying.load()
    monkeypatch.setenv("FAKE_DIE", "0")
    nxt = _start(monkeypatch, 0.0, 6)
    try:
        assert nxt.load() is not None
    finally:
        nxt.close()
    assert _measured(server) == 1


def test_each_weight_format_is_measured_once(server, monkeypatch):
    procs = [_start(monkeypatch, 0.0, s, weights=w) for s, w in enumerate(("f32", "q4", "q4"))]
    try:
        f32, q4, q4_again = (p.load() for p in procs)
    finally:
        for p in procs:
            p.close()
    assert (f32.weights, q4.weights) == ("f32", "q4") and q4_again is q4
    assert _measured(server) == 2 and mp.calibration() is f32  # the server's own format


def test_the_store_hands_one_claim_to_many_threads_at_once():
    store = records.CalibrationStore()
    start = threading.Barrier(8)
    won = []

    def claim():
        start.wait()
        won.append(store.claim("f32"))

    threads = [threading.Thread(target=claim) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(won) == [False] * 7 + [True]
    times = PassTimes((1, 2), (20.0, 21.0), repeats=5, seconds=1.0, threads=1, kernel="numba")
    first = store.settle(records.stamped(times, "f32"))
    assert store.settle(records.stamped(times, "f32")) is first and not store.claim("f32")


def test_the_record_as_json_has_its_stamp_and_plain_values():
    import json

    times = PassTimes((1, 2), (20.0, 21.0), repeats=5, seconds=1.0, threads=1, kernel="numba",
                      measured_at=1796415000.0)
    rec = records.stamped(times, "q4")
    out = json.loads(json.dumps(rec.to_json()))
    assert out["measured_utc"] == "2026-12-04T20:10:00Z" and out["weights"] == "q4"
    assert out["times"]["ms"] == [20.0, 21.0] and out["times"]["monotone"] is True
    assert out["stamp"] == rec.stamp() and "4-bit weights" in out["stamp"]
    assert np.isclose(out["times"]["quantile"], 0.1)
