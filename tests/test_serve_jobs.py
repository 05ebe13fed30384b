"""The worker pool: bounded concurrency, places in line, cancellation, budgets, shared results.

Jobs here block on events the test controls, so nothing depends on how fast the machine is;
waits have generous timeouts that only matter when something is broken.
"""

from __future__ import annotations

import logging
import threading
import time

import pytest

from specdec_playable.runtime import jobs

WAIT = 10.0  # seconds; a healthy run never comes near it


def until(predicate, timeout=WAIT):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.005)
    return False


def blocker(gate: threading.Event, seen: list | None = None, value=None):
    """A job that waits for ``gate`` (or a stop request) and returns ``value``."""
    def fn(ctx):
        if seen is not None:
            seen.append(value)
        while not gate.wait(0.01):
            if ctx.stopped:
                return "stopped"
        return value
    return fn


@pytest.fixture
def pool():
    q = jobs.JobQueue(workers=2, max_waiting=3)
    yield q
    q.shutdown()


def test_a_place_reads_state_position_and_running_at_one_instant():
    # Jobs start and end all the time here; every place read must agree with itself.
    q = jobs.JobQueue(workers=2, max_waiting=200)
    try:
        handles = [q.submit(lambda ctx: time.sleep(0.001)) for _ in range(150)]
        places = []
        while not all(h.job.finished for h in handles):
            places += [h.job.place for h in handles]
        for p in places:
            assert (p.state == jobs.QUEUED) == (p.position >= 1), p
            assert p.running <= p.workers == 2 and len(p.running_elapsed_s) <= p.running
            if p.state == jobs.RUNNING:
                assert p.running >= 1, p
    finally:
        q.shutdown()


def test_run_times_leave_out_untypical_runs_and_mark_crowded_ones():
    q = jobs.JobQueue(workers=2, max_waiting=4)
    try:
        def loading(ctx):  # a run that also waited for a model's load
            ctx.untypical()
        assert q.submit(loading).job.wait(WAIT)
        alone = threading.Event()
        assert q.submit(blocker(alone)).job.wait(0.05) is False
        alone.set()
        assert until(lambda: len(q.recent_run_s()) == 1)
        assert q.recent_run_s(crowded=True) == ()  # it ran with a worker free throughout
        first, second = threading.Event(), threading.Event()
        a = q.submit(blocker(first))
        assert until(lambda: q.running == 1)
        b = q.submit(blocker(second))
        assert until(lambda: q.running == 2)
        first.set()  # a ends with every worker busy, b started with every worker busy
        assert a.job.wait(WAIT)
        second.set()
        assert b.job.wait(WAIT) and until(lambda: len(q.recent_run_s()) == 3)
        assert len(q.recent_run_s(crowded=True)) == 2
        assert b.job.place.crowded_run_s == q.recent_run_s(crowded=True)
    finally:
        q.shutdown()


def test_at_most_workers_run_and_the_rest_wait_in_order(pool):
    gate = threading.Event()
    handles = [pool.submit(blocker(gate, value=i)) for i in range(5)]
    assert until(lambda: pool.running == 2)
    assert pool.waiting == 3
    assert [h.job.position for h in handles] == [0, 0, 1, 2, 3]
    assert [h.job.state for h in handles[:2]] == [jobs.RUNNING] * 2
    gate.set()
    assert all(h.job.wait(WAIT) for h in handles)
    assert [h.job.result for h in handles] == [0, 1, 2, 3, 4]
    assert all(h.job.state == jobs.DONE for h in handles)


def test_a_full_line_refuses_with_a_message(pool):
    gate = threading.Event()
    for _ in range(5):
        pool.submit(blocker(gate))
    assert until(lambda: pool.running == 2)
    with pytest.raises(jobs.QueueFull, match="already waiting"):
        pool.submit(blocker(gate))
    gate.set()


def test_cancelling_a_waiting_job_removes_it_from_the_line(pool):
    gate = threading.Event()
    seen: list = []
    handles = [pool.submit(blocker(gate, seen, i)) for i in range(4)]
    assert until(lambda: pool.running == 2)
    handles[2].cancel()
    assert handles[2].job.state == jobs.CANCELLED
    assert handles[3].job.position == 1
    gate.set()
    assert handles[3].job.wait(WAIT)
    assert 2 not in seen                       # the cancelled job never started


def test_cancelling_a_running_job_stops_it(pool):
    gate = threading.Event()
    h = pool.submit(blocker(gate))
    assert until(lambda: h.job.state == jobs.RUNNING)
    h.cancel()
    assert h.job.wait(WAIT)
    assert h.job.state == jobs.CANCELLED and h.job.result == "stopped"
    assert pool.running == 0


def test_time_budget_stops_a_job(pool):
    gate = threading.Event()                   # never set: only the budget ends it
    h = pool.submit(blocker(gate), budget_s=0.05)
    assert h.job.wait(WAIT)
    assert h.job.timed_out and h.job.result == "stopped"
    assert h.job.state == jobs.DONE            # it returned what it had


def test_progress_is_published(pool):
    step = threading.Event()

    def fn(ctx):
        ctx.report(1)
        step.wait(WAIT)
        ctx.report(2)
        return 3

    h = pool.submit(fn)
    assert until(lambda: h.job.progress == 1)
    step.set()
    assert h.job.wait(WAIT) and h.job.progress == 2 and h.job.result == 3


def test_a_keyed_job_runs_once_and_is_shared(pool):
    calls: list = []
    gate = threading.Event()
    a = pool.submit(blocker(gate, calls, "x"), key="preset-1")
    b = pool.submit(blocker(gate, calls, "x"), key="preset-1")
    assert a.job is b.job
    gate.set()
    assert a.job.wait(WAIT)
    c = pool.submit(blocker(gate, calls, "x"), key="preset-1")   # finished: returned at once
    assert c.job is a.job and c.job.state == jobs.DONE
    assert calls == ["x"]
    assert pool.cached("preset-1") is a.job


def test_a_shared_job_stops_only_when_every_holder_cancels(pool):
    gate = threading.Event()
    a = pool.submit(blocker(gate), key="k")
    b = pool.submit(blocker(gate), key="k")
    assert until(lambda: a.job.state == jobs.RUNNING)
    a.cancel()
    a.cancel()                                 # a second cancel of one hold changes nothing
    time.sleep(0.05)
    assert a.job.state == jobs.RUNNING
    b.cancel()
    assert a.job.wait(WAIT) and a.job.state == jobs.CANCELLED
    assert pool.cached("k") is None            # a cancelled run is not reused
    d = pool.submit(blocker(threading.Event()), key="k")
    assert d.job is not a.job
    d.cancel()


def test_a_failing_job_is_logged_and_says_one_line(pool, caplog):
    def boom(ctx):
        raise RuntimeError("secret internals")

    with caplog.at_level(logging.ERROR, logger="specdec_playable"):
        h = pool.submit(boom, key="bad", label="boom")
        assert h.job.wait(WAIT)
    assert h.job.state == jobs.FAILED
    assert "secret" not in h.job.error and "\n" not in h.job.error
    assert "secret internals" in caplog.text
    assert pool.cached("bad") is None


def test_a_timed_out_keyed_result_is_not_shared(pool):
    h = pool.submit(blocker(threading.Event()), key="slow", budget_s=0.05)
    assert h.job.wait(WAIT) and h.job.timed_out
    assert pool.cached("slow") is None


def test_shutdown_cancels_waiting_and_running(pool):
    gate = threading.Event()
    handles = [pool.submit(blocker(gate)) for _ in range(4)]
    assert until(lambda: pool.running == 2)
    pool.shutdown()
    assert all(h.job.finished for h in handles)
    assert {h.job.state for h in handles} == {jobs.CANCELLED}
    with pytest.raises(RuntimeError, match="shut down"):
        pool.submit(blocker(gate))


def test_bad_arguments():
    with pytest.raises(ValueError):
        jobs.JobQueue(workers=0)
    q = jobs.JobQueue()
    with pytest.raises(ValueError, match="budget_s"):
        q.submit(lambda ctx: None, budget_s=0)
    q.shutdown()


def test_workers_run_at_the_niceness_asked_for():
    import os
    import threading

    seen = []
    q = jobs.JobQueue(workers=1, nice=7)
    try:
        h = q.submit(lambda ctx: seen.append(os.getpriority(os.PRIO_PROCESS, threading.get_native_id())))
        assert h.job.wait(5)
    finally:
        q.shutdown()
    assert seen == [7]
    with pytest.raises(ValueError, match="nice in 0..19"):
        jobs.JobQueue(nice=20)


def test_blas_env_caps_every_blas_library_of_a_new_process():
    from specdec_playable.runtime.jobs import BLAS_ENV_NAMES, blas_env

    assert blas_env(1) == {name: "1" for name in BLAS_ENV_NAMES}
    assert set(BLAS_ENV_NAMES) >= {"OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"}
    with pytest.raises(ValueError, match="at least 1"):
        blas_env(0)



def test_a_failure_in_plain_words_is_shown_as_it_is_said(pool, caplog):
    """A model process that died says so to the visitor (one line); the log keeps one line too."""
    from specdec_playable.runtime.model_process import ProcessFailed

    def died(ctx):
        raise ProcessFailed("the model process stopped answering")

    with caplog.at_level(logging.WARNING, logger="specdec_playable"):
        h = pool.submit(died, label="died")
        assert h.job.wait(WAIT)
    assert h.job.state == jobs.FAILED
    assert h.job.error == "The run failed on the server: the model process stopped answering."
    assert "Traceback" not in caplog.text and "stopped answering" in caplog.text
