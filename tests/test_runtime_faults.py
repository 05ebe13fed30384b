"""Faults stay where they happen: a model process that dies, hangs or times out releases what it
holds exactly once, and never touches a descriptor it does not own.

The model processes are real children started by ``runtime.model_process`` (the same pipes,
arguments and bookkeeping) running ``tests/fake_child.py``, which answers at once, or hangs where
the test says (``FAKE_HANG``), so each fault costs well under a second.

The defect these tests would have caught: ``close()`` ran twice (once by the run that found the
child silent, once by its owner) and closed the cancel pipe's number twice. The OS reuses a
number as soon as it is free, so the second close cut whatever held it by then: on a server, a
visitor's websocket.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import struct
import threading

import pytest
from fake_child import CHILD

from specdec_playable.runtime import calibration as records
from specdec_playable.runtime import model_process as mp


def _open_fds() -> set[int]:
    return {int(name) for name in os.listdir("/proc/self/fd")} - {_probe_fd()}


def _probe_fd() -> int:  # the descriptor listdir itself opens on /proc/self/fd
    fd = os.open("/proc/self/fd", os.O_RDONLY)
    os.close(fd)
    return fd


pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc/self/fd")


@pytest.fixture
def server(monkeypatch, tmp_path):
    """A fresh server in this process with fake children that answer at once."""
    monkeypatch.setattr(records, "STORE", records.CalibrationStore())
    monkeypatch.setattr(mp, "_CHILD", CHILD)
    monkeypatch.setattr(mp, "_WEIGHTS", ["f32"])
    monkeypatch.setattr(mp, "_children", set())
    monkeypatch.setattr(mp, "_runs", [0])
    monkeypatch.setattr(mp, "_load", [mp.LoadState("waiting", 0.0)])
    log = tmp_path / "measured.log"
    log.touch()
    for name, value in (("FAKE_LOG", str(log)), ("FAKE_DIE", "0"), ("FAKE_HANG", ""),
                        ("FAKE_LOAD", "0"), ("FAKE_SEED", "1"), ("FAKE_DIE_ONCE", ""),
                        ("FAKE_STAGES", "0"), ("FAKE_STAGE_S", "0")):
        monkeypatch.setenv(name, value)
    return log


@contextlib.contextmanager
def _reused(number: int, tries: int = 16):
    """Socket pairs opened until one end holds ``number`` (free again after a close): yields that
    pair, or None if the OS handed the number to none of them, and closes every pair on exit."""
    opened, hit = [], None
    for _ in range(tries):
        pair = socket.socketpair()
        opened.append(pair)
        if number in (pair[0].fileno(), pair[1].fileno()):
            hit = pair
            break
    try:
        yield hit
    finally:
        for a, b in opened:
            a.close()
            b.close()


def _still_open_and_silent(pair) -> None:
    """Both ends of ``pair`` (if any) still open, nothing written to either (a stray write would
    show)."""
    for end in pair or ():
        os.fstat(end.fileno())  # raises if the number was closed under it
        end.setblocking(False)
        with pytest.raises(BlockingIOError):
            end.recv(16)


def test_a_descriptor_closes_once_and_never_writes_after():
    r, w = os.pipe()
    owned = mp.Descriptor(w)
    assert owned.write(b"abcd") and os.read(r, 4) == b"abcd"
    owned.close()
    assert owned.closed
    try:
        with _reused(w) as pair:
            owned.close()  # a second close: a no-op, not os.close(w) on the number's new holder
            assert owned.write(b"abcd") is False
            _still_open_and_silent(pair)
    finally:
        os.close(r)


def test_a_descriptor_drops_a_write_to_a_full_pipe_instead_of_blocking():
    r, w = os.pipe()
    owned = mp.Descriptor(w)
    try:
        while owned.write(b"x" * 4096):
            pass  # fills the pipe: the next write is refused at once, never blocks
        assert owned.write(b"abcd") is False
    finally:
        owned.close()
        os.close(r)


def test_a_double_close_and_a_cancel_after_close_are_no_ops(server):
    before = _open_fds()
    proc = mp.ModelProcess()
    proc.load()
    number = proc._cancel._fd
    proc.close()
    assert proc.closed and not proc.alive
    assert _open_fds() == before
    with _reused(number) as pair:
        proc.close()
        proc._stop_run()
        with mp._Running():  # tells every live child its threads: the closed one is not among them
            pass
        with pytest.raises(RuntimeError, match="closed"):
            proc.load()
        _still_open_and_silent(pair)
    assert _open_fds() == before


def test_a_load_that_times_out_closes_once_and_the_owner_closing_again_cuts_nothing(
        server, monkeypatch):
    """The student's page: a run times out waiting for the load, closes the process, and its
    owner closes it again after the number went to another connection."""
    monkeypatch.setenv("FAKE_HANG", "load")
    monkeypatch.setattr(mp, "LOAD_S", 0.3)
    before = _open_fds()
    proc = mp.ModelProcess()
    number = proc._cancel._fd
    with pytest.raises(RuntimeError, match="stopped answering"):
        proc.load()
    assert proc.closed and not proc.alive
    with _reused(number) as pair:
        proc.close()
        proc._stop_run()
        _still_open_and_silent(pair)
    assert _open_fds() == before
    assert records.STORE.claim("f32"), "the dead process left its calibration claim held"
    state = mp.load_state()  # the pages' status line: failed, and only the next run tries again
    assert (state.state, state.retry_s) == ("failed", None) and "stopped answering" in state.reason


@pytest.mark.parametrize("fault", ["kill", "hang", "exit"])
def test_a_run_whose_process_fails_reports_it_and_the_next_starts_fresh(server, monkeypatch, fault):
    """Killed mid-run (SIGKILL), hung past its time, or exited during its load: the run raises a
    clear error, every descriptor it opened is released, and the thread's next run gets a fresh
    process that answers."""
    monkeypatch.setattr(mp, "GRACE_S", 0.3)
    monkeypatch.setattr(mp, "LOAD_S", 5.0)
    if fault == "exit":
        monkeypatch.setenv("FAKE_DIE", "1")
    else:
        monkeypatch.setenv("FAKE_HANG", "run")
    before = _open_fds()
    out: dict = {}

    def owner():  # a worker thread of the queue owns its process, as in the server
        proc = mp.thread_process()
        if fault == "kill":
            threading.Timer(0.3, os.kill, (proc._proc.pid, signal.SIGKILL)).start()
        try:
            proc.measure("some text", max_seconds=0.5 if fault == "hang" else 30.0)
        except RuntimeError as exc:
            out["error"] = str(exc)
        out["first"] = proc
        monkeypatch.setenv("FAKE_DIE", "0")
        monkeypatch.setenv("FAKE_HANG", "")
        fresh = mp.thread_process()
        out["fresh"] = fresh
        out["loaded"] = fresh.load() is not None
        mp.stop_thread_process()

    worker = threading.Thread(target=owner)
    worker.start()
    worker.join(30)
    assert not worker.is_alive()
    assert "stopped answering" in out["error"]
    assert out["fresh"] is not out["first"] and out["loaded"]
    assert out["first"].closed and out["fresh"].closed
    assert _open_fds() == before
    assert mp._children == set() and mp._runs == [0]


def test_every_live_child_hears_the_thread_count_and_a_closed_one_does_not(server):
    a, b = mp.ModelProcess(), mp.ModelProcess()
    try:
        a.load()
        b.load()
        b.close()
        assert mp._children == {a}
        r, w = os.pipe()
        spy = mp.Descriptor(w)
        b._cancel = spy  # were b still told, its (new) pipe would hold the code
        with mp._Running():
            pass
        os.set_blocking(r, False)
        with pytest.raises(BlockingIOError):
            os.read(r, 8)
        spy.close()
        os.close(r)
        a._cancel.write(struct.pack("I", 0))  # the live one still takes writes
    finally:
        a.close()
    assert a.closed and mp._children == set()


def test_a_slow_load_that_reports_its_stages_is_not_taken_for_a_hang(server, monkeypatch):
    """Each stage of a start has LOAD_S of its own: three stages of 1.2 s outlast a LOAD_S of
    3 s together, and the load still succeeds; a silent child of the same length fails. (The
    child's interpreter starts within the first LOAD_S: 1.8 s to spare on a busy machine.)"""
    monkeypatch.setattr(mp, "LOAD_S", 3.0)
    monkeypatch.setenv("FAKE_STAGES", "3")
    monkeypatch.setenv("FAKE_STAGE_S", "1.2")
    proc = mp.ModelProcess()
    try:
        assert proc.load() is not None and proc.loaded
    finally:
        proc.close()
    monkeypatch.setenv("FAKE_STAGES", "0")
    monkeypatch.setenv("FAKE_HANG", "load")
    silent = mp.ModelProcess()
    with pytest.raises(RuntimeError, match="stopped answering"):
        silent.load()
    assert silent.closed


def test_the_load_at_start_is_tried_again_after_a_failure_and_logged_once(server, monkeypatch,
                                                                          tmp_path, caplog):
    from specdec_playable.runtime import jobs, workers

    monkeypatch.setenv("FAKE_DIE_ONCE", str(tmp_path / "died"))
    seen = []  # every change of the load's state, as the status line reads it
    note = mp.note_load
    monkeypatch.setattr(mp, "note_load", lambda *a, **kw: (note(*a, **kw), seen.append(mp.load_state())))
    before = _open_fds()
    queue = jobs.JobQueue(workers=1)
    try:
        with caplog.at_level("INFO", logger="specdec_playable"):
            job = queue.submit(workers.loading_work(retry_s=(0.2,)), budget_s=30, label="loading").job
            assert job.wait(30)
        assert job.state == jobs.DONE and job.result is not None
        assert (tmp_path / "died").exists()  # the first child did die
        failed = [r for r in caplog.records if "loading the model failed" in r.getMessage()]
        ready = [r for r in caplog.records if "the model is ready" in r.getMessage()]
        assert len(failed) == 1 and len(ready) == 1
    finally:
        queue.shutdown()
    assert _open_fds() == before
    # loading, failed (then failed with its retry announced), loading again, ready
    states = [(s.state, s.retry_s) for s in seen]
    assert states[0] == ("loading", None) and ("failed", 0.2) in states and states[-1] == ("ready", None)
    assert states.index(("failed", 0.2)) < len(states) - 2 and states[-2] == ("loading", None)


def test_a_load_that_keeps_failing_gives_up_with_its_error(server, monkeypatch):
    from specdec_playable.runtime import jobs, workers

    monkeypatch.setenv("FAKE_DIE", "1")
    queue = jobs.JobQueue(workers=1)
    try:
        job = queue.submit(workers.loading_work(retry_s=(0.1, 0.1)), budget_s=30, label="loading").job
        assert job.wait(30)
        assert job.state == jobs.FAILED
    finally:
        queue.shutdown()
    state = mp.load_state()  # the last try failed too: no retry is announced
    assert (state.state, state.retry_s) == ("failed", None) and state.reason


def test_the_load_state_stays_ready_once_a_process_has_loaded(server):
    assert mp.load_state().state == "waiting"
    proc = mp.ModelProcess()
    try:
        assert mp.load_state().state == "loading"
        proc.load()
        ready = mp.load_state()
        assert ready.state == "ready" and ready.at > 0
        mp.note_load("failed", reason="a later process died")  # the model stays available
        mp.note_load("loading")
        assert mp.load_state() is ready
    finally:
        proc.close()
