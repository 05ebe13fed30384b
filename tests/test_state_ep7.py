"""State tier for Episode 7: settings, the queued run's life through its follower (with a fake
worker, no model), the guarantee, and runs shown without the model. Its sentences are checked in
``tests/test_prose_ep7.py``. Runs come from ``tests/ep7_fakes.py``."""

from __future__ import annotations

import threading
import time

import pytest

from ep7_fakes import fake_comparison, fake_plain
from services import service
from specdec_playable.data import recorded
from specdec_playable.lm.compare import Comparison, Live
from specdec_playable.lm.prompts import PROMPTS, TASKS
from specdec_playable.lm.registry import DRAFTS
from specdec_playable.episodes.ep7 import words as ep7_words
from specdec_playable.runtime import service as interface
from specdec_playable.runtime import jobs
from specdec_playable.episodes.ep7 import state as st
from specdec_playable.episodes.ep7.state import CUSTOM, RealText


class _Snap(Live):
    """What a running job reports: a :class:`lm.compare.Live` whose snapshot is a given run."""

    def __init__(self, c):
        self.c = c

    def snapshot(self):
        return self.c


def gated_work(gate: threading.Event, result: Comparison, calls: list,
               ready: threading.Event | None = None):
    """A worker function that reports a partial run, waits for ``gate`` (or a stop), then returns.
    With ``ready`` it first reports nothing until ``ready`` is set, as a model process loading."""

    def make(settings):
        def work(ctx):
            calls.append(settings)
            while ready is not None and not ready.wait(0.01):
                if ctx.stopped:
                    return None
            ctx.report(_Snap(Comparison("running", result.spec, None)))
            while not gate.wait(0.01):
                if ctx.stopped:
                    return None
            return result

        return work

    return make


def wait_for(pred, timeout=5.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.01)
    return False


@pytest.fixture
def queue():
    q = jobs.JobQueue(workers=1, max_waiting=4)
    yield q
    q.shutdown()


def test_tasks_are_checked_prompts_of_both_kinds_and_the_controls_are_bounded():
    assert all(t.check is not None for t in TASKS.values())
    copies = {k for k, t in TASKS.items() if t.copy}
    assert copies and copies != set(TASKS)
    # The page says which kind each task is, and the label agrees.
    for t, label in ((k, task.label) for k, task in TASKS.items()):
        assert ep7_words.kind_line(t) == (ep7_words.COPY_LINE if t in copies else ep7_words.FRESH_LINE)
        assert label.startswith("Copy:" if t in copies and t != "where" else
                                ("Extraction:" if t == "where" else "Fresh writing:"))
    s = RealText()
    assert s.param.k.bounds == (1, 8)
    assert s.param.max_new.bounds == (1, 128)
    for name in ("task", "prompt", "draft", "k", "max_new", "decoding", "temperature", "seed"):
        assert s.param[name].doc and s.param[name].label


def test_a_task_run_is_shared_and_a_typed_prompt_is_not():
    s = RealText(task="sky", draft="lookup", k=3, max_new=20)
    key = s.settings().key
    assert key is not None and RealText(task="sky", draft="lookup", k=3, max_new=20).settings().key == key
    assert RealText(task="sky", draft="lookup", k=4, max_new=20).settings().key != key
    # The seed matters only when sampling.
    assert RealText(task="sky", draft="lookup", k=3, max_new=20, seed=99).settings().key == key
    samp = RealText(task="sky", k=3, max_new=20, decoding="sampling")
    assert samp.settings().key != RealText(task="sky", k=3, max_new=20, decoding="sampling",
                                           seed=99).settings().key
    assert RealText(task=CUSTOM, prompt="hello").settings().key is None


def test_each_task_starts_with_its_draft_unless_a_link_names_one():
    # Copy tasks start with prompt lookup; fresh writing (and a typed prompt) with the draft head.
    for task, t in TASKS.items():
        assert RealText(task=task).draft == ("lookup" if t.copy else "head")
        assert st.default_draft(task) == RealText(task=task).draft
    assert st.default_draft(CUSTOM) == "head"
    s = RealText()
    s.task = "sky"
    assert s.draft == "head"
    s.draft = "ngram"  # the visitor's own choice stays until the task changes
    s.k = 3
    assert s.draft == "ngram"
    s.task = "repeat"
    assert s.draft == "lookup"
    # A link restoring both keeps the draft it names, even the one already selected.
    s.param.update(task="sum-function", draft="lookup")
    assert (s.task, s.draft) == ("sum-function", "lookup")
    assert RealText(task="sky", draft="ngram").draft == "ngram"
    # The n-gram table's old name, as an old link or notebook passes it, finds it.
    assert RealText(task="sky", draft="learned").draft == "ngram"


def test_typed_prompts_are_bounded():
    assert st.check_prompt("x" * st.PROMPT_MAX_CHARS) == "x" * st.PROMPT_MAX_CHARS
    with pytest.raises(ValueError, match="501 characters"):
        st.check_prompt("x" * (st.PROMPT_MAX_CHARS + 1))
    with pytest.raises(ValueError, match="Type a prompt"):
        st.check_prompt("   ")


def test_a_refused_prompt_never_reaches_the_queue(queue):
    calls = []
    s = RealText(service=service(queue, gated_work(threading.Event(), fake_comparison([(4, 4)]), calls)),
                 task=CUSTOM, prompt="y" * 600)
    s.run()
    assert s.status == "refused" and "600 characters" in s.message
    assert not s.active and queue.running == 0 and queue.waiting == 0 and calls == []


def test_a_run_goes_queued_running_done_and_shows_partial_text(queue):
    gate, calls = threading.Event(), []
    result = fake_comparison([(4, 4), (4, 2), (0, 0), (3, 0)])
    s = RealText(service=service(queue, gated_work(gate, result, calls)), task="repeat", max_new=32)
    s.run()
    assert s.active
    assert wait_for(lambda: s.poll() and s.status == "running" and s.comparison is not None)
    assert s.comparison.phase == "running" and s.comparison.plain is None
    assert s.shown.task == "repeat" and s.shown.max_new == 32
    gate.set()
    assert wait_for(lambda: not s.poll())
    assert s.status == "done" and s.comparison is result and s.message == ""
    assert calls and calls[0].prompt == PROMPTS["repeat"].message
    # The weight format the server's model processes load, said beside the speedup.
    from specdec_playable.runtime import model_process

    assert s.weights == model_process.weights() == "f32"


def test_a_second_visitor_waits_in_line_with_its_position_and_can_cancel(queue):
    gate, calls = threading.Event(), []
    work = gated_work(gate, fake_comparison([(4, 4)]), calls)
    a = RealText(service=service(queue, work), task=CUSTOM, prompt="first")
    b = RealText(service=service(queue, work), task=CUSTOM, prompt="second")
    a.run()
    assert wait_for(lambda: a.poll() and a.status == "running")
    b.run()
    b.poll()
    assert b.status == "queued" and b.position == 1
    b.cancel()
    assert b.status == "cancelled" and not b.active and queue.waiting == 0
    a.close()  # the tab closes: its running job is asked to stop and ends
    assert wait_for(lambda: queue.running == 0)
    assert a.status == "cancelled"
    assert [c.prompt for c in calls] == ["first"]


def test_closing_a_session_stops_its_worker(queue):
    gate, calls = threading.Event(), []
    s = RealText(service=service(queue, gated_work(gate, fake_comparison([(4, 4)]), calls)),
                 task=CUSTOM, prompt="hi")
    s.run()
    assert wait_for(lambda: queue.running == 1)
    job = s.follower.job
    s.close()
    assert wait_for(lambda: job.finished) and job.state == jobs.CANCELLED
    assert queue.running == 0


def test_two_visitors_share_one_preset_run(queue):
    gate, calls = threading.Event(), []
    work = gated_work(gate, fake_comparison([(4, 4)]), calls)
    a, b = (RealText(service=service(queue, work), task="json-person") for _ in range(2))
    a.run()
    b.run()
    gate.set()
    assert wait_for(lambda: not a.poll() and not b.poll())
    assert a.comparison is b.comparison and len(calls) == 1
    c = RealText(service=service(queue, work), task="json-person")
    c.run()
    assert c.shared and c.status == "done" and c.comparison is a.comparison and len(calls) == 1


def test_the_guarantee_is_checked_token_by_token():
    c = fake_comparison([(4, 4), (4, 1), (2, 0)])
    s = RealText()
    with st.unlocked(s):
        s.comparison = c
    g = s.guarantee
    assert g.ok and g.n_tokens == len(c.spec.tokens)
    kind, sentence = ep7_words.check_words(c, g)
    assert kind == "ok" and f"all {g.n_tokens} tokens are identical" in sentence
    # A plain run that wrote another token is caught at that token.
    plain = fake_plain(len(c.spec.tokens))
    bad = Comparison("done", c.spec, plain.__class__(**{**plain.__dict__,
                                                         "tokens": plain.tokens[:3] + (999,) + plain.tokens[4:]}))
    with st.unlocked(s):
        s.comparison = bad
    kind, sentence = ep7_words.check_words(bad, s.guarantee)
    assert kind == "fail" and "token 4" in sentence


def test_the_queue_measures_run_times_for_the_estimate(queue):
    gate, calls = threading.Event(), []
    s = RealText(service=service(queue, gated_work(gate, fake_comparison([(4, 4)]), calls)), task=CUSTOM,
                 prompt="x")
    s.run()
    assert wait_for(lambda: queue.running_elapsed_s() != ())
    gate.set()
    assert wait_for(lambda: not s.poll())
    (took,) = queue.recent_run_s()
    assert 0 < took < 5


def test_a_full_line_refuses_with_a_clear_message_and_when_to_try_again():
    q = jobs.JobQueue(workers=1, max_waiting=1)
    try:
        gate, calls = threading.Event(), []
        work = gated_work(gate, fake_comparison([(4, 4)]), calls)
        first = RealText(service=service(q, work), task=CUSTOM, prompt="first")
        first.run()
        gate.set()
        assert wait_for(lambda: not first.poll()) and first.status == "done"
        gate.clear()
        running, waiting, late = (RealText(service=service(q, work), task=CUSTOM, prompt=p)
                                  for p in ("a", "b", "c"))
        running.run()
        assert wait_for(lambda: running.poll() and running.status == "running")
        waiting.run()
        late.run()
        assert waiting.status == "queued" and late.status == "refused" and not late.active
        assert late.message.startswith("The line is full: 1 run already waiting")
        # One run has finished, so the message says when the next one should start.
        assert "Try again in" in late.message and "once a run has finished" not in late.message
        assert q.waiting == 1 and [c.prompt for c in calls] == ["first", "a"]
        assert "Try again once a run has finished." in ep7_words.full_line(3, 2, (), ())
        assert "in about 5 s" in ep7_words.full_line(3, 2, (10.0, 25.0), (30.0,))  # the 25 s one ends
    finally:
        gate.set()
        q.shutdown()


def test_a_refused_run_does_not_call_the_earlier_run_this_run(queue):
    from specdec_playable.episodes.ep7.view import status_html

    gate, calls = threading.Event(), []
    gate.set()
    s = RealText(service=service(queue, gated_work(gate, fake_comparison([(4, 4)]), calls)), task=CUSTOM,
                 prompt="hi")
    s.run()
    assert wait_for(lambda: not s.poll()) and "This run:" in status_html(s)
    s.prompt = " "
    s.run()
    assert s.status == "refused"
    assert "This run:" not in status_html(s) and "Shown below, your earlier run:" in status_html(s)


def test_the_queued_line_is_read_at_one_instant(queue):
    from specdec_playable.episodes.ep7.view import status_html

    gate, calls = threading.Event(), []
    work = gated_work(gate, fake_comparison([(4, 4)]), calls)
    a = RealText(service=service(queue, work), task=CUSTOM, prompt="a")
    b = RealText(service=service(queue, work), task=CUSTOM, prompt="b")
    a.run()
    assert wait_for(lambda: a.poll() and a.status == "running")
    b.run()
    line = b.line
    assert b.status == "queued" and (line.state, line.position, line.running) == ("queued", 1, 1)
    assert len(line.running_elapsed_s) == 1
    gate.set()
    assert wait_for(lambda: b.follower.job.finished) and queue.running == 0
    # Until its next poll the page describes the line its last poll saw, not a mix of that place
    # and the queue's figures now ("position 1" with "a worker is free").
    assert "position 1. All 1 workers are busy" in status_html(b)
    assert wait_for(lambda: not b.poll()) and b.status == "done"


def test_cancel_says_so_and_no_stale_waiting_text(queue):
    from specdec_playable.episodes.ep7.view import text_html

    gate, calls = threading.Event(), []
    s = RealText(service=service(queue, gated_work(gate, fake_comparison([(4, 4)]), calls)),
                 task=CUSTOM, prompt="hi")
    s.run()
    assert wait_for(lambda: s.poll() and s.comparison is not None)
    s.cancel()
    assert s.status == "cancelled" and s.message == ep7_words.CANCELLED_LINE
    html = text_html(s.comparison, "u")
    assert "Waiting" not in html and "Waiting" not in ep7_words.status_line(
        s.status, s.position, s.comparison, workers=1, running=0, model_loaded=True)


def test_while_the_plain_run_writes_the_check_covers_what_it_has_written():
    done = fake_comparison([(4, 4), (4, 1)])
    partial_plain = fake_plain(4, stopped="running")
    s = RealText()
    with st.unlocked(s):
        s.comparison = Comparison("running", done.spec, partial_plain)
    g = s.guarantee
    assert g.ok and g.n_tokens == 4
    kind, sentence = ep7_words.check_words(s.comparison, g)
    assert kind == "pending" and f"4 of {len(done.spec.tokens)} tokens so far, all identical" in sentence


def test_without_the_model_a_task_shows_its_recorded_run():
    runs = recorded.recorded_runs()
    assert {(t, d) for t in TASKS for d in DRAFTS} <= set(runs)
    absent = interface.ModelService(installed=lambda: False)
    s = RealText(task="json-person", draft="lookup", service=absent)
    s.run()
    assert s.status == "recorded" and not s.active
    assert s.weights == recorded.recorded_weights() == "f32"
    assert s.comparison is runs[("json-person", "lookup")]
    assert "recorded on" in s.message and "Live runs need the server" in s.message
    assert s.shown.k == recorded.recorded_meta()["k"] and s.shown.max_new == recorded.recorded_meta()["max_new"]
    custom = RealText(task=CUSTOM, prompt="hello", service=absent)
    custom.run()
    assert custom.status == "refused" and "not installed" in custom.message


def test_recorded_greedy_runs_keep_the_guarantee():
    for (task, draft), c in recorded.recorded_runs().items():
        assert c.finished and c.greedy, (task, draft)
        assert c.spec.tokens == c.plain.tokens, (task, draft)
        assert c.spec.draft == draft and c.plain.draft == "none"


def test_the_first_run_tells_the_story():
    """The page opens on the task where the recorded prompt lookup wrote the most tokens per pass."""
    s = RealText()
    runs = recorded.recorded_runs()
    best = max(TASKS, key=lambda t: runs[(t, "lookup")].spec.tokens_per_pass)
    assert (s.task, s.draft, s.decoding) == (best, "lookup", "greedy")
    from specdec_playable.episodes import ep7 as page
    assert "repeats a sentence with prompt lookup" in page.EPISODE.try_this and best == "repeat"


@pytest.mark.parametrize("server", ["f32", "q4"])
def test_the_visitor_picks_the_weight_format_and_the_page_opens_at_the_servers(queue, monkeypatch, server):
    """The format control opens at the server's format; a run asks the worker for the format
    picked, says it beside the result, and a run in one format is never shared with the other."""
    from specdec_playable.runtime import model_process

    monkeypatch.setattr(model_process, "_WEIGHTS", [server])
    gate, calls = threading.Event(), []
    gate.set()
    result = fake_comparison([(4, 4), (4, 2)])
    svc = service(queue, gated_work(gate, result, calls))
    s = RealText(service=svc, task="repeat", max_new=16)
    assert s.weight_format == server
    other = {"f32": "q4", "q4": "f32"}[server]
    s.weight_format = other
    s.run()
    assert wait_for(lambda: not s.poll())
    assert calls[-1].weights == other and s.weights == other and s.shown.weights == other
    t = RealText(service=svc, task="repeat", max_new=16)
    t.run()
    assert wait_for(lambda: not t.poll())
    assert calls[-1].weights == server and t.weights == server and not t.shared
    assert s.settings().key != t.settings().key
    with pytest.raises(ValueError):
        s.weight_format = "q2"


def test_without_the_model_a_4bit_pick_shows_the_recorded_float32_run():
    absent = interface.ModelService(installed=lambda: False)
    s = RealText(task="json-person", draft="lookup", service=absent, weight_format="q4")
    s.run()
    assert s.status == "recorded" and s.weights == recorded.recorded_weights() == "f32"
    assert s.shown.weights == "f32"


@pytest.mark.parametrize("task, draft", [("sky", "head"), ("json-person", "lookup")])
def test_while_the_model_loads_the_recorded_run_is_shown_then_the_live_one(queue, task, draft):
    """A server started without the model loads it on the first Run (minutes on a busy machine):
    meanwhile the run recorded for the task and draft is shown, said to be that, and the live
    run replaces it as soon as it reports."""
    ready, gate = threading.Event(), threading.Event()
    result = fake_comparison([(4, 4), (4, 2), (0, 0)])
    svc = interface.ModelService(queue=lambda: queue, installed=lambda: True,
                                 generation=gated_work(gate, result, [], ready),
                                 model_ready=ready.is_set)
    s = RealText(service=svc, task=task, draft=draft, k=3, max_new=24)
    s.run()
    rec = recorded.recorded_runs()[(task, draft)]
    assert wait_for(lambda: s.poll() and s.status == "running" and s.comparison is not None)
    assert s.interim and s.comparison is rec and s.weights == recorded.recorded_weights()
    from specdec_playable.episodes.ep7 import view as view7

    shown = view7.status_html(s)
    assert ep7_words.LOADING_MEANWHILE.replace("’", "&#x27;").split("…")[0] in shown
    assert "Shown meanwhile, the run recorded for this task and draft" in shown
    assert f"k = {recorded.recorded_meta()['k']}" in shown and "This run:" not in shown
    ready.set()
    assert wait_for(lambda: s.poll() and not s.interim and s.comparison is not None)
    assert s.status == "running" and s.comparison is not rec and s.comparison.plain is None
    assert "This run:" in view7.status_html(s) and "k = 3" in view7.status_html(s)
    gate.set()
    assert wait_for(lambda: not s.poll())
    assert s.status == "done" and s.comparison is result and not s.interim


def test_while_the_model_loads_a_typed_prompt_has_no_recorded_run_to_show(queue):
    ready, gate = threading.Event(), threading.Event()
    svc = interface.ModelService(queue=lambda: queue, installed=lambda: True,
                                 generation=gated_work(gate, fake_comparison([(4, 4)]), [], ready),
                                 model_ready=ready.is_set)
    s = RealText(service=svc, task=CUSTOM, prompt="Say hello.")
    s.run()
    assert wait_for(lambda: s.poll() and s.status == "running")
    time.sleep(0.1)
    s.poll()
    assert not s.interim and s.comparison is None
    assert "Loading the model on the server" in ep7_words.status_line(
        s.status, 0, s.comparison, model_loaded=False)
    s.cancel()
    ready.set()
    gate.set()


@pytest.mark.parametrize("fails, says", [
    (lambda: interface_failure(), "The run failed on the server: the model process stopped answering."),
    (lambda: RuntimeError("secret internals"), "The run failed on the server; the error was logged."),
])
def test_a_failed_run_says_why_in_one_line_and_offers_to_run_again(queue, fails, says):
    tries = []

    def make(settings):
        def work(ctx):
            tries.append(settings)
            raise fails()
        return work

    s = RealText(service=service(queue, make), task="custom", prompt="Say hi.", max_new=16)
    for n in (1, 2):  # Run again after a failure submits the run afresh (nothing shared is kept)
        s.run()
        assert wait_for(lambda: not s.poll())
        assert len(tries) == n
        assert s.status == "failed" and s.message == f"{says} {ep7_words.RUN_AGAIN}"
        assert "secret" not in s.message and "\n" not in s.message


def interface_failure():
    from specdec_playable.runtime.model_process import ProcessFailed

    return ProcessFailed("the model process stopped answering")
