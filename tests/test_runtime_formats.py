"""A worker thread keeps one model process per weight format it is asked for (Episode 7 lets a
visitor pick float32 or 4-bit): the same format reuses its process, another format starts its
own, a dead one is replaced, and an unknown format is a clear error. A fake process stands in
for the child (starting the real model takes seconds; tests/test_serve_jobs.py runs real ones)."""

from __future__ import annotations

import threading
from types import SimpleNamespace

import pytest

from specdec_playable.runtime import model_process, workers


class FakeProcess:
    started: list = []

    def __init__(self, *, nice=0, blas_threads=1, weights=None):
        self.weights, self.closed, self._proc = weights, False, SimpleNamespace(pid=0)
        self.loaded = True
        FakeProcess.started.append(self)

    @property
    def alive(self):
        return not self.closed

    def close(self):
        self.closed = True

    def compare(self, prompt, draft, k, **kw):
        return SimpleNamespace(spec=None, plain=None, weights=self.weights)


@pytest.fixture
def fake(monkeypatch):
    FakeProcess.started = []
    monkeypatch.setattr(model_process, "ModelProcess", FakeProcess)
    yield FakeProcess
    model_process.stop_thread_process()


def test_each_format_gets_its_own_process_and_keeps_it(fake):
    server = model_process.weights()
    a = model_process.thread_process()
    assert a.weights == server
    q4 = model_process.thread_process(weights="q4")
    f32 = model_process.thread_process(weights="f32")
    assert {q4.weights, f32.weights} == {"q4", "f32"}
    assert model_process.thread_process(weights="q4") is q4
    assert model_process.thread_process(weights=server) is a
    assert len(fake.started) == 2


def test_a_dead_process_is_replaced_and_stop_closes_every_format(fake):
    q4 = model_process.thread_process(weights="q4")
    f32 = model_process.thread_process(weights="f32")
    q4.close()
    again = model_process.thread_process(weights="q4")
    assert again is not q4 and again.weights == "q4" and not again.closed
    model_process.stop_thread_process()
    assert f32.closed and again.closed


def test_another_thread_has_processes_of_its_own(fake):
    mine = model_process.thread_process(weights="q4")
    theirs = []
    t = threading.Thread(target=lambda: (theirs.append(model_process.thread_process(weights="q4")),
                                         model_process.stop_thread_process()))
    t.start()
    t.join()
    assert theirs[0] is not mine and theirs[0].closed and not mine.closed


def test_an_unknown_format_names_the_choices(fake):
    with pytest.raises(ValueError, match="f32.*q4|q4.*f32"):
        model_process.thread_process(weights="q2")
    assert fake.started == []


@pytest.mark.parametrize("weights", ["f32", "q4"])
def test_a_run_goes_to_the_process_of_its_settings_format(fake, weights):
    settings = SimpleNamespace(prompt="Hi", draft="head", k=4, max_new=8, temperature=0.0, seed=0,
                               weights=weights)
    ctx = SimpleNamespace(deadline=1e18, cancel_event=threading.Event(), report=lambda v: None,
                          untypical=lambda: None, cut_short=lambda: None)
    result = workers.generation_work(settings)(ctx)
    assert result.weights == weights
    assert [p.weights for p in fake.started] == [weights]
