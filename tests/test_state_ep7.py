"""State tier for Episode 7: settings, the queued run's life (with a fake worker, no model), and the
sentences computed from a run's numbers. Runs come from ``tests/ep7_fakes.py``."""

from __future__ import annotations

import math
import threading
import time

import pytest

from ep7_fakes import fake_comparison, fake_plain, fake_spec
from specdec_playable.serve import jobs
from specdec_playable.lm.compare import Comparison
from specdec_playable.lm.prompts import PROMPTS, TASK_CHECKS
from specdec_playable.state import ep7 as st
from specdec_playable.state.ep7 import CUSTOM, RealText


class _Snap:
    """What a running job reports: something with ``snapshot()`` (like lm.compare.Live)."""

    def __init__(self, c):
        self.c = c

    def snapshot(self):
        return self.c


def gated_work(gate: threading.Event, result: Comparison, calls: list):
    """A worker function that reports a partial run, waits for ``gate`` (or a stop), then returns."""

    def make(settings):
        def work(ctx):
            calls.append(settings)
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
    from specdec_playable.lm.prompts import TASK_CHECKS

    assert set(st.TASKS) == set(TASK_CHECKS)
    copies = {t for t in st.TASKS if TASK_CHECKS[t][1]}
    assert copies and copies != set(st.TASKS)
    # The page says which kind each task is, and the label agrees.
    for t, label in st.TASKS.items():
        assert st.kind_line(t) == (st.COPY_LINE if t in copies else st.FRESH_LINE)
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
    for task, (_, copy) in TASK_CHECKS.items():
        assert RealText(task=task).draft == ("lookup" if copy else "head")
        assert st.default_draft(task) == RealText(task=task).draft
    assert st.default_draft(CUSTOM) == "head"
    s = RealText()
    s.task = "sky"
    assert s.draft == "head"
    s.draft = "learned"  # the visitor's own choice stays until the task changes
    s.k = 3
    assert s.draft == "learned"
    s.task = "repeat"
    assert s.draft == "lookup"
    # A link restoring both keeps the draft it names, even the one already selected.
    s.param.update(task="sum-function", draft="lookup")
    assert (s.task, s.draft) == ("sum-function", "lookup")
    assert RealText(task="sky", draft="learned").draft == "learned"


def test_typed_prompts_are_bounded():
    assert st.check_prompt("x" * st.PROMPT_MAX_CHARS) == "x" * st.PROMPT_MAX_CHARS
    with pytest.raises(ValueError, match="501 characters"):
        st.check_prompt("x" * (st.PROMPT_MAX_CHARS + 1))
    with pytest.raises(ValueError, match="Type a prompt"):
        st.check_prompt("   ")


def test_a_refused_prompt_never_reaches_the_queue(queue):
    calls = []
    s = RealText(queue=queue, work=gated_work(threading.Event(), fake_comparison([(4, 4)]), calls),
                 task=CUSTOM, prompt="y" * 600)
    s.run()
    assert s.status == "refused" and "600 characters" in s.message
    assert not s.active and queue.running == 0 and queue.waiting == 0 and calls == []


def test_a_run_goes_queued_running_done_and_shows_partial_text(queue):
    gate, calls = threading.Event(), []
    result = fake_comparison([(4, 4), (4, 2), (0, 0), (3, 0)])
    s = RealText(queue=queue, work=gated_work(gate, result, calls), task="repeat", max_new=32)
    s.run()
    assert s.active
    assert wait_for(lambda: s.poll() and s.status == "running" and s.comparison is not None)
    assert s.comparison.phase == "running" and s.comparison.plain is None
    assert s.shown.task == "repeat" and s.shown.max_new == 32
    gate.set()
    assert wait_for(lambda: not s.poll())
    assert s.status == "done" and s.comparison is result and s.message == ""
    assert calls and calls[0].prompt == PROMPTS["repeat"][1]


def test_a_second_visitor_waits_in_line_with_its_position_and_can_cancel(queue):
    gate, calls = threading.Event(), []
    work = gated_work(gate, fake_comparison([(4, 4)]), calls)
    a = RealText(queue=queue, work=work, task=CUSTOM, prompt="first")
    b = RealText(queue=queue, work=work, task=CUSTOM, prompt="second")
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
    s = RealText(queue=queue, work=gated_work(gate, fake_comparison([(4, 4)]), calls),
                 task=CUSTOM, prompt="hi")
    s.run()
    assert wait_for(lambda: queue.running == 1)
    job = s._handle.job
    s.close()
    assert wait_for(lambda: job.finished) and job.state == jobs.CANCELLED
    assert queue.running == 0


def test_two_visitors_share_one_preset_run(queue):
    gate, calls = threading.Event(), []
    work = gated_work(gate, fake_comparison([(4, 4)]), calls)
    a, b = (RealText(queue=queue, work=work, task="json-person") for _ in range(2))
    a.run()
    b.run()
    gate.set()
    assert wait_for(lambda: not a.poll() and not b.poll())
    assert a.comparison is b.comparison and len(calls) == 1
    c = RealText(queue=queue, work=work, task="json-person")
    c.run()
    assert c.shared and c.status == "done" and c.comparison is a.comparison and len(calls) == 1


def test_the_guarantee_is_checked_token_by_token():
    c = fake_comparison([(4, 4), (4, 1), (2, 0)])
    s = RealText()
    with st.unlocked(s):
        s.comparison = c
    g = s.guarantee
    assert g.ok and g.n_tokens == len(c.spec.tokens)
    kind, sentence = st.check_words(c, g)
    assert kind == "ok" and f"all {g.n_tokens} tokens are identical" in sentence
    # A plain run that wrote another token is caught at that token.
    plain = fake_plain(len(c.spec.tokens))
    bad = Comparison("done", c.spec, plain.__class__(**{**plain.__dict__,
                                                         "tokens": plain.tokens[:3] + (999,) + plain.tokens[4:]}))
    with st.unlocked(s):
        s.comparison = bad
    kind, sentence = st.check_words(bad, s.guarantee)
    assert kind == "fail" and "token 4" in sentence


def test_sampling_states_what_is_guaranteed():
    c = fake_comparison([(4, 4)], temperature=0.7)
    kind, sentence = st.check_words(c, None)
    assert kind == "info" and "distribution" in sentence


@pytest.mark.parametrize("rounds,verify_ms", [([(4, 4)] * 6, 60.0), ([(4, 0)] * 6, 90.0),
                                              ([(4, 2), (0, 0), (4, 4)], 70.0)])
def test_sentences_agree_with_the_numbers(rounds, verify_ms):
    c = fake_comparison(rounds, verify_ms=verify_ms, step_ms=40.0)
    f = c.fair
    sp = c.speedup
    assert math.isfinite(sp) and sp == f.speedup
    words = st.verdict(c)
    assert f"{sp:.2f}×" in words
    assert ("faster" in words) == (f.low > 1)
    assert ("slower" in words) == (f.high < 1)
    assert ("No measurable difference" in words) == (f.low <= 1 <= f.high)
    assert f"interval {f.low:.2f}× to {f.high:.2f}×" in words and f"{f.n_rounds} rounds" in words
    spec = c.spec
    assert f"accepted {spec.accepted} of the {spec.accepted + spec.rejected}" in st.why(c, 4)
    assert f"{c.verify_cost:.1f}× a plain step" in st.why(c, 4)
    work = st.work_words(c)
    assert f"{f.tokens_per_pass:.2f} tokens per pass" in work and f"{f.work_speedup:.2f}×" in work
    assert f"cost {f.cost_of(f.common_size):.1f}× a plain step" in work
    m = st.map_words(c, 4)
    assert f"q = {spec.acceptance_rate:.2f}" in m and f"measured {sp:.2f}×" in m


def test_an_interval_that_includes_one_says_no_measurable_difference():
    # Verify passes of 5 positions at 2x a step, 1 or 3 tokens each: as fast as plain decoding.
    c = fake_comparison([(4, 0), (4, 2)] * 5, verify_ms=80.0, step_ms=40.0)
    assert c.fair.low <= 1.0 <= c.fair.high
    assert st.verdict(c).startswith("No measurable difference: 1.00×")
    few = fake_comparison([(4, 4)], verify_ms=60.0)
    assert st.verdict(few).startswith("Too few rounds")
    old = fake_comparison([(4, 4)] * 3, verify_ms=60.0, turns=False)
    assert old.fair is None and st.verdict(old) == f"On this run speculative decoding was {st.ratio_words(old.speedup)}."


def test_measured_numbers_of_a_fake_run():
    c = fake_comparison([(4, 4), (4, 0)], verify_ms=100.0, step_ms=40.0, guess_ms=0.5)
    # The fakes end each run 0.5 ms after its last pass (as a real run's bookkeeping does).
    assert c.step_ms == pytest.approx(40.0, abs=0.5)
    assert c.verify_ms == pytest.approx(100.0)
    assert c.verify_cost == pytest.approx(2.5, rel=0.02)
    assert c.spec.accepted == 4 and c.spec.proposed == 8
    assert c.positions_per_verify == pytest.approx(5.0)
    assert c.draft_cost == pytest.approx(0.5 / 40.0, rel=0.02)


def test_status_lines():
    busy = dict(workers=2, running=2, model_loaded=True, running_elapsed_s=(10.0, 30.0),
                recent_run_s=(20.0, 40.0, 30.0))
    line = st.status_line("queued", 2, None, **busy)
    assert "position 2" in line and "All 2 workers are busy" in line
    assert "Loading the model" in st.status_line("running", 0, None, workers=1, running=1,
                                                 model_loaded=False)
    spec = fake_spec([(4, 4)])
    line = st.status_line("running", 0, Comparison("running", spec, fake_plain(3, stopped="running")),
                          workers=1, running=1, model_loaded=True)
    assert f"speculative {len(spec.tokens)} tokens" in line and "plain 3 tokens" in line


def test_position_one_with_a_free_worker_does_not_say_none_are_running():
    line = st.status_line("queued", 1, None, workers=2, running=0, model_loaded=True)
    assert "position 1" in line and "A worker is free" in line and "0 are running" not in line


def test_a_free_worker_starts_only_the_head_of_the_line():
    # One of two workers free: it takes the run in place 1; place 3 waits for a busy one.
    recent = dict(model_loaded=True, running_elapsed_s=(2.0,), recent_run_s=(10.0,))
    assert "A worker is free" in st.status_line("queued", 1, None, workers=2, running=1, **recent)
    line = st.status_line("queued", 3, None, workers=2, running=1, **recent)
    assert "A worker is free" not in line and "in a moment" not in line
    assert "All 2 workers are busy or about to be" in line and "in about 10 s" in line


def test_the_estimated_wait_comes_from_the_measured_run_times():
    # Two workers, runs of 30 s (median of the last three), running for 10 s and 25 s.
    elapsed, recent = (10.0, 25.0), (20.0, 30.0, 40.0)
    assert st.estimated_wait_s(1, 2, elapsed, recent) == pytest.approx(5.0)   # the 25 s one ends
    assert st.estimated_wait_s(2, 2, elapsed, recent) == pytest.approx(20.0)  # then the 10 s one
    assert st.estimated_wait_s(3, 2, elapsed, recent) == pytest.approx(35.0)  # then the first again
    assert st.estimated_wait_s(1, 2, elapsed, ()) is None
    line = st.status_line("queued", 3, None, workers=2, running=2, model_loaded=True,
                          running_elapsed_s=elapsed, recent_run_s=recent)
    assert "in about 35 s" in line and "the last 3 runs here took 30 s each (median)" in line
    # Runs measured with every worker busy, as a run behind a line will be, come first.
    crowded = st.status_line("queued", 3, None, workers=2, running=2, model_loaded=True,
                             running_elapsed_s=elapsed, recent_run_s=recent, crowded_run_s=(50.0,))
    assert "in about 75 s" in crowded and "the last 1 run here with every worker busy took 50 s" in crowded
    assert "in about 25 s" in st.full_line(3, 2, elapsed, recent, (50.0,))
    none_yet = st.status_line("queued", 1, None, workers=1, running=1, model_loaded=True)
    assert "No run has finished on this server yet" in none_yet


def test_the_queue_measures_run_times_for_the_estimate(queue):
    gate, calls = threading.Event(), []
    s = RealText(queue=queue, work=gated_work(gate, fake_comparison([(4, 4)]), calls), task=CUSTOM,
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
        first = RealText(queue=q, work=work, task=CUSTOM, prompt="first")
        first.run()
        gate.set()
        assert wait_for(lambda: not first.poll()) and first.status == "done"
        gate.clear()
        running, waiting, late = (RealText(queue=q, work=work, task=CUSTOM, prompt=p)
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
        assert "Try again once a run has finished." in st.full_line(3, 2, (), ())
        assert "in about 5 s" in st.full_line(3, 2, (10.0, 25.0), (30.0,))  # the 25 s one ends
    finally:
        gate.set()
        q.shutdown()


def test_a_refused_run_does_not_call_the_earlier_run_this_run(queue):
    from specdec_playable.views.ep7_real import status_html

    gate, calls = threading.Event(), []
    gate.set()
    s = RealText(queue=queue, work=gated_work(gate, fake_comparison([(4, 4)]), calls), task=CUSTOM,
                 prompt="hi")
    s.run()
    assert wait_for(lambda: not s.poll()) and "This run:" in status_html(s)
    s.prompt = " "
    s.run()
    assert s.status == "refused"
    assert "This run:" not in status_html(s) and "Shown below, your earlier run:" in status_html(s)


def test_the_queued_line_is_read_at_one_instant(queue):
    from specdec_playable.views.ep7_real import status_html

    gate, calls = threading.Event(), []
    work = gated_work(gate, fake_comparison([(4, 4)]), calls)
    a = RealText(queue=queue, work=work, task=CUSTOM, prompt="a")
    b = RealText(queue=queue, work=work, task=CUSTOM, prompt="b")
    a.run()
    assert wait_for(lambda: a.poll() and a.status == "running")
    b.run()
    line = b.line
    assert b.status == "queued" and (line.state, line.position, line.running) == ("queued", 1, 1)
    assert len(line.running_elapsed_s) == 1
    gate.set()
    assert wait_for(lambda: b._handle.job.finished) and queue.running == 0
    # Until its next poll the page describes the line its last poll saw, not a mix of that place
    # and the queue's figures now ("position 1" with "a worker is free").
    assert "position 1. All 1 workers are busy" in status_html(b)
    assert wait_for(lambda: not b.poll()) and b.status == "done"


def test_cancel_says_so_and_no_stale_waiting_text(queue):
    from specdec_playable.views.ep7_real import text_html

    gate, calls = threading.Event(), []
    s = RealText(queue=queue, work=gated_work(gate, fake_comparison([(4, 4)]), calls),
                 task=CUSTOM, prompt="hi")
    s.run()
    assert wait_for(lambda: s.poll() and s.comparison is not None)
    s.cancel()
    assert s.status == "cancelled" and s.message == st.CANCELLED_LINE
    html = text_html(s.comparison, "u")
    assert "Waiting" not in html and "Waiting" not in st.status_line(
        s.status, s.position, s.comparison, workers=1, running=0, model_loaded=True)


def test_while_the_plain_run_writes_the_check_covers_what_it_has_written():
    done = fake_comparison([(4, 4), (4, 1)])
    partial_plain = fake_plain(4, stopped="running")
    s = RealText()
    with st.unlocked(s):
        s.comparison = Comparison("running", done.spec, partial_plain)
    g = s.guarantee
    assert g.ok and g.n_tokens == 4
    kind, sentence = st.check_words(s.comparison, g)
    assert kind == "pending" and f"4 of {len(done.spec.tokens)} tokens so far, all identical" in sentence


def test_without_the_model_a_task_shows_its_recorded_run(monkeypatch):
    runs = st.recorded_runs()
    assert {(t, d) for t in st.TASKS for d in st.DRAFT_LABELS} <= set(runs)
    monkeypatch.setattr(st.lm, "is_installed", lambda: False)
    s = RealText(task="json-person", draft="lookup")
    s.run()
    assert s.status == "recorded" and not s.active
    assert s.comparison is runs[("json-person", "lookup")]
    assert "recorded on" in s.message and "Live runs need the server" in s.message
    assert s.shown.k == st.recorded_meta()["k"] and s.shown.max_new == st.recorded_meta()["max_new"]
    custom = RealText(task=CUSTOM, prompt="hello")
    custom.run()
    assert custom.status == "refused" and "not installed" in custom.message


def test_recorded_greedy_runs_keep_the_guarantee():
    for (task, draft), c in st.recorded_runs().items():
        assert c.finished and c.greedy, (task, draft)
        assert c.spec.tokens == c.plain.tokens, (task, draft)
        assert c.spec.draft == draft and c.plain.draft == "none"


def test_the_lessons_claims_hold_for_the_recorded_runs():
    from specdec_playable.episodes import ep7 as page
    from specdec_playable.lm.prompts import TASK_CHECKS

    runs = st.recorded_runs()
    spec = {key: c.spec for key, c in runs.items()}
    copies = [t for t in st.TASKS if TASK_CHECKS[t][1]]
    fresh = [t for t in st.TASKS if not TASK_CHECKS[t][1]]
    # "when the reply repeats the prompt ... many of its guesses are right; ... fresh writing ...
    # little to copy": every copy task's lookup acceptance beats every fresh task's.
    assert min(spec[(t, "lookup")].acceptance_rate for t in copies) > \
        max(spec[(t, "lookup")].acceptance_rate for t in fresh)
    for task in st.TASKS:
        # "on a chat reply it rarely has a guess": a guess at fewer than half of the passes
        assert spec[(task, "learned")].proposed < 0.5 * spec[(task, "learned")].passes, task
        # "without training it is almost never right"
        assert spec[(task, "early-exit")].acceptance_rate <= 0.1, task
    summary = page.recorded_summary(runs)
    best = max(st.TASKS, key=lambda t: spec[(t, "lookup")].acceptance_rate)
    assert (f"prompt lookup had {spec[(best, 'lookup')].acceptance_rate:.0%} of its guesses accepted "
            f"on the {page.TASK_NAMES[best]}") in summary
    rows = page.recorded_rows(runs, st.recorded_repeats())
    for (t, d), row in zip(runs, rows):
        reps = st.recorded_repeats()[(t, d)]
        assert len(reps) == st.recorded_meta()["repeats"] == 3
        speeds = sorted(r["speedup"] for r in reps)
        assert row[5] == pytest.approx(speeds[1]) and (row[6], row[7]) == (speeds[0], speeds[-1])
        assert row[8] == runs[(t, d)].fair.verdict
    worst = max(r[7] - r[6] for r in rows)
    assert f"moved by at most {worst:.2f}" in page.spread_sentence(rows)
    meta = st.recorded_meta()
    assert f"load average {meta['load_average_before'][0]:.1f} at the start" in page.recorded_caption(meta)


def test_the_first_run_tells_the_story():
    """The page opens on the task where the recorded prompt lookup wrote the most tokens per pass."""
    s = RealText()
    runs = st.recorded_runs()
    best = max(st.TASKS, key=lambda t: runs[(t, "lookup")].spec.tokens_per_pass)
    assert (s.task, s.draft, s.decoding) == (best, "lookup", "greedy")
    from specdec_playable.episodes import ep7 as page
    assert "repeats a sentence with prompt lookup" in page.TRY_THIS and best == "repeat"
