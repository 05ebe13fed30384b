"""One follower for a queued run (``kit.follower.RunFollower``) and one poller (``kit.poller``):
submit, place in line, progress, finish, refusal, and cancel when the tab is abandoned, for
Episode 4's pasted text and Episode 7's run alike. Fake work on a real queue; no model."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from ep7_fakes import fake_comparison
from services import service
from specdec_playable.lm.compare import Comparison, Live
from specdec_playable.lm.measure import TextMeasurement
from specdec_playable.runtime import service as interface
from specdec_playable.runtime import jobs
from specdec_playable.episodes.ep4.state import BoilerplateVsPoetry
from specdec_playable.episodes.ep7.state import CUSTOM, RealText
from specdec_playable.kit.follower import Refused, RunFollower
from specdec_playable.kit.poller import RunPoller


class _Snap(Live):
    """What a running Episode 7 job reports (a :class:`lm.compare.Live`): here, a given run."""

    def __init__(self, c):
        self.c = c

    def snapshot(self):
        return self.c


def wait_for(pred, timeout=10.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.01)
    return False


def gated(gate: threading.Event, result, progress):
    """Work that reports ``progress``, waits for ``gate`` (or a stop), then returns ``result``."""

    def work(ctx):
        ctx.report(progress)
        while not gate.wait(0.01):
            if ctx.stopped:
                return None
        return result

    return work


@pytest.fixture
def queue():
    q = jobs.JobQueue(workers=1, max_waiting=1)
    yield q
    q.shutdown()


def test_a_followed_run_goes_queued_running_done(queue):
    first, second = threading.Event(), threading.Event()
    a, b = RunFollower(service(queue)), RunFollower(service(queue))
    a.submit(gated(first, "a done", (1, 9)), key=None, budget_s=10, label="a")
    assert wait_for(lambda: a.poll().state == "running")
    seen = b.submit(gated(second, "b done", (2, 9)), key=None, budget_s=10, label="b")
    assert seen.state == "queued" and seen.position == 1 and b.active
    assert seen.place.running == 1 and seen.place.workers == 1
    first.set()
    assert wait_for(lambda: (s := a.poll()) is None or s.state == "done")
    assert not a.active and a.poll() is None  # the poll that saw the end let go of it
    assert wait_for(lambda: b.poll().state == "running")
    assert b.poll().progress == (2, 9) and b.poll().position == 0
    second.set()
    assert wait_for(lambda: (s := b.poll()) is None or s.finished) and not b.active


def test_the_poll_that_sees_the_end_carries_the_result(queue):
    gate = threading.Event()
    f = RunFollower(service(queue))
    f.submit(gated(gate, "the result", None), key=None, budget_s=10, label="r")
    gate.set()
    assert f.job.wait(10)
    seen = f.poll()
    assert seen.state == "done" and seen.result == "the result" and seen.finished


def test_a_full_line_is_refused_with_the_queue_figures(queue):
    gate = threading.Event()
    followers = [RunFollower(service(queue)) for _ in range(3)]
    followers[0].submit(gated(gate, 1, None), key=None, budget_s=10, label="0")
    assert wait_for(lambda: followers[0].poll().state == "running")
    followers[1].submit(gated(gate, 2, None), key=None, budget_s=10, label="1")
    with pytest.raises(Refused) as refused:
        followers[2].submit(gated(gate, 3, None), key=None, budget_s=10, label="2")
    assert refused.value.waiting == 1 and refused.value.workers == 1
    assert len(refused.value.running_elapsed_s) == 1 and not followers[2].active
    gate.set()


def test_cancel_withdraws_the_run_and_a_shared_one_goes_on_for_the_other(queue):
    gate = threading.Event()
    a, b = RunFollower(service(queue)), RunFollower(service(queue))
    a.submit(gated(gate, "shared", None), key="k", budget_s=10, label="a")
    b.submit(gated(gate, "never", None), key="k", budget_s=10, label="b")  # shares a's job
    assert a.job is b.job
    seen = a.cancel()
    assert seen.state == "cancelled" and not a.active and a.cancel() is None
    gate.set()
    assert wait_for(lambda: (s := b.poll()) is None or s.state == "done")
    assert b.job is None  # b saw it end
    c = RunFollower(service(queue))
    assert c.submit(gated(gate, "x", None), key="k", budget_s=10, label="c").shared


def test_installed_is_asked_of_the_service_every_time():
    flag = [False]
    f = RunFollower(interface.ModelService(installed=lambda: flag[0]))
    assert not f.installed
    flag[0] = True
    assert f.installed


# --- the poller, for both pages -----------------------------------------------------------------


class _Session:
    """What Bokeh keeps of a tab: its open connections and when the last one closed."""

    def __init__(self, connections: int, gone_ms: float):
        self.connection_count = connections
        self.milliseconds_since_last_unsubscribe = gone_ms


class _Context:
    def __init__(self, session):
        self._session = session


def _scoring(gate: threading.Event):
    def make(source):
        def work(ctx):
            ctx.report((0, len(source)))
            while not gate.wait(0.01):
                if ctx.stopped:
                    return None
            n = len(source)
            return TextMeasurement(ids=np.arange(n), pieces=tuple(source), alpha=np.full(n, 0.5),
                                   greedy=np.zeros(n, bool), p_token=np.full(n, 0.5),
                                   guess=("?",) * n)
        return work
    return make


def _ep7(queue, gate):
    result = fake_comparison([(4, 4), (4, 1)])
    work = lambda settings: gated(gate, result, None)  # noqa: E731 - a one-line fake
    s = RealText(service=service(queue, work), task=CUSTOM, prompt="hello")
    return s, s.run, lambda: s.status


def _ep4(queue, gate):
    s = BoilerplateVsPoetry(seed=1, service=service(queue, scoring=_scoring(gate)))
    return s, lambda: s.use_paste("some text"), lambda: s.scoring


@pytest.mark.parametrize("page", [_ep7, _ep4], ids=["episode 7", "episode 4"])
def test_the_poller_follows_a_run_to_its_end(queue, page):
    gate = threading.Event()
    state, start, status = page(queue, gate)
    drawn = []
    poller = RunPoller(state, lambda: drawn.append(status()), session_context=_Context(_Session(1, 0)))
    start()
    assert state.active
    poller.tick()
    assert drawn[-1] in ("queued", "running")
    gate.set()
    assert state.follower.job.wait(10)
    poller.tick()
    assert drawn[-1] == "done" and not state.active


@pytest.mark.parametrize("page", [_ep7, _ep4], ids=["episode 7", "episode 4"])
def test_an_abandoned_tab_cancels_its_run(queue, page):
    gate = threading.Event()
    state, start, status = page(queue, gate)
    here = RunPoller(state, lambda: None, session_context=_Context(_Session(1, 60_000)))
    start()
    job = state.follower.job
    here.tick()  # a tab still connected: nothing is cancelled
    assert state.active and not job.finished
    gone = RunPoller(state, lambda: None, abandoned_ms=5000,
                     session_context=_Context(_Session(0, 6000)))
    assert gone.abandoned()
    gone.tick()
    assert not state.active  # closed: the page is gone, so nothing is redrawn
    assert wait_for(lambda: job.finished) and job.state == jobs.CANCELLED
    assert queue.running == 0
    assert not RunPoller(state, lambda: None, session_context=_Context(_Session(0, 10))).abandoned()
    assert not RunPoller(state, lambda: None).abandoned()  # outside a server no tab is abandoned


def test_the_state_reports_a_cancelled_runs_partial_comparison(queue):
    gate = threading.Event()
    partial = fake_comparison([(4, 4)])
    s = RealText(service=service(queue, lambda settings: gated(gate, None, _Snap(partial))),
                 task=CUSTOM, prompt="hi")
    s.run()
    assert wait_for(lambda: s.poll() and s.status == "running" and s.comparison is not None)
    s.cancel()
    assert s.status == "cancelled" and isinstance(s.comparison, Comparison)
    assert s.comparison.spec.tokens == partial.spec.tokens
