"""Episode 7's sentences (``episodes.ep7.words``), each checked against the numbers it states: a run's
verdict, why it went as it did, the work-based figure, the place in line and the estimated wait,
and what the recorded runs say. Runs come from ``tests/ep7_fakes.py``."""

from __future__ import annotations

import math

import pytest

from ep7_fakes import fake_comparison, fake_plain, fake_spec
from specdec_playable.data import recorded
from specdec_playable.lm.compare import Comparison
from specdec_playable.lm.prompts import TASKS
from specdec_playable.episodes.ep7 import words as ep7_words


def test_sampling_states_what_is_guaranteed():
    c = fake_comparison([(4, 4)], temperature=0.7)
    kind, sentence = ep7_words.check_words(c, None)
    assert kind == "info" and "distribution" in sentence


@pytest.mark.parametrize("rounds,verify_ms", [([(4, 4)] * 6, 60.0), ([(4, 0)] * 6, 90.0),
                                              ([(4, 2), (0, 0), (4, 4)], 70.0)])
def test_sentences_agree_with_the_numbers(rounds, verify_ms):
    c = fake_comparison(rounds, verify_ms=verify_ms, step_ms=40.0)
    f = c.fair
    sp = c.speedup
    assert math.isfinite(sp) and sp == f.speedup
    words = ep7_words.verdict(c)
    assert f"{sp:.2f}× plain decoding’s speed" in words
    assert ("faster" in words) == (f.verdict == "faster") == (round(f.low, 2) > 1)
    assert ("slower" in words) == (f.verdict == "slower") == (round(f.high, 2) < 1)
    assert ("No measurable difference" in words) == (round(f.low, 2) <= 1 <= round(f.high, 2))
    assert f"interval {f.low:.2f}× to {f.high:.2f}×" in words and f"{f.n_rounds} rounds" in words
    assert f"{f.spec_tokens_per_s:.1f} tokens/s against plain decoding’s {f.plain_tokens_per_s:.1f}" in words
    spec = c.spec
    why = ep7_words.why(c, 4)
    assert f"accepted {spec.accepted} of the {spec.accepted + spec.rejected}" in why
    # One price of a round, stated once, and the work-based figure derived from it.
    cost = f"{f.round_cost:.2f}"
    assert f"cost {cost}× a plain step" in why and why.count(cost) == 2  # stated, then divided by
    assert "verify pass over up to 5 positions cost" not in why
    work = ep7_words.work_words(c)
    assert work in why
    assert (f"{f.tokens_per_pass:.2f} tokens per round ÷ {cost} steps per round ≈ "
            f"{f.work_speedup:.2f}×") in work
    # The shown quotient is the shown figure, to the rounding of its two inputs.
    assert abs(round(f.tokens_per_pass, 2) / round(f.round_cost, 2) - f.work_speedup) < 0.02
    m = ep7_words.map_words(c, 4)
    assert f"q = {spec.acceptance_rate:.2f}" in m and f"measured {sp:.2f}×" in m
    assert f"a round cost {cost}× a step" in m


def test_an_interval_that_includes_one_says_no_measurable_difference():
    # Verify passes of 5 positions at 2x a step, 1 or 3 tokens each: as fast as plain decoding.
    c = fake_comparison([(4, 0), (4, 2)] * 5, verify_ms=80.0, step_ms=40.0)
    assert c.fair.low <= 1.0 <= c.fair.high
    assert ep7_words.verdict(c).startswith("No measurable difference: 1.00×")
    few = fake_comparison([(4, 4)], verify_ms=60.0)
    assert ep7_words.verdict(few).startswith("Too few rounds")
    old = fake_comparison([(4, 4)] * 3, verify_ms=60.0, turns=False)
    assert old.fair is None and ep7_words.verdict(old) == f"On this run speculative decoding was {ep7_words.ratio_words(old.speedup)}."


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
    line = ep7_words.status_line("queued", 2, None, **busy)
    assert "position 2" in line and "All 2 workers are busy" in line
    assert "Loading the model" in ep7_words.status_line("running", 0, None, workers=1, running=1,
                                                 model_loaded=False)
    spec = fake_spec([(4, 4)])
    line = ep7_words.status_line("running", 0, Comparison("running", spec, fake_plain(3, stopped="running")),
                          workers=1, running=1, model_loaded=True)
    assert f"speculative {len(spec.tokens)} tokens" in line and "plain 3 tokens" in line


def test_position_one_with_a_free_worker_does_not_say_none_are_running():
    line = ep7_words.status_line("queued", 1, None, workers=2, running=0, model_loaded=True)
    assert "position 1" in line and "A worker is free" in line and "0 are running" not in line


def test_a_free_worker_starts_only_the_head_of_the_line():
    # One of two workers free: it takes the run in place 1; place 3 waits for a busy one.
    recent = dict(model_loaded=True, running_elapsed_s=(2.0,), recent_run_s=(10.0,))
    assert "A worker is free" in ep7_words.status_line("queued", 1, None, workers=2, running=1, **recent)
    line = ep7_words.status_line("queued", 3, None, workers=2, running=1, **recent)
    assert "A worker is free" not in line and "in a moment" not in line
    assert "All 2 workers are busy or about to be" in line and "in about 10 s" in line


def test_the_estimated_wait_comes_from_the_measured_run_times():
    # Two workers, runs of 30 s (median of the last three), running for 10 s and 25 s.
    elapsed, recent = (10.0, 25.0), (20.0, 30.0, 40.0)
    assert ep7_words.estimated_wait_s(1, 2, elapsed, recent) == pytest.approx(5.0)   # the 25 s one ends
    assert ep7_words.estimated_wait_s(2, 2, elapsed, recent) == pytest.approx(20.0)  # then the 10 s one
    assert ep7_words.estimated_wait_s(3, 2, elapsed, recent) == pytest.approx(35.0)  # then the first again
    assert ep7_words.estimated_wait_s(1, 2, elapsed, ()) is None
    line = ep7_words.status_line("queued", 3, None, workers=2, running=2, model_loaded=True,
                          running_elapsed_s=elapsed, recent_run_s=recent)
    assert "in about 35 s" in line and "the last 3 runs here took 30 s each (median)" in line
    # Runs measured with every worker busy, as a run behind a line will be, come first.
    crowded = ep7_words.status_line("queued", 3, None, workers=2, running=2, model_loaded=True,
                             running_elapsed_s=elapsed, recent_run_s=recent, crowded_run_s=(50.0,))
    assert "in about 75 s" in crowded and "the last 1 run here with every worker busy took 50 s" in crowded
    assert "in about 25 s" in ep7_words.full_line(3, 2, elapsed, recent, (50.0,))
    none_yet = ep7_words.status_line("queued", 1, None, workers=1, running=1, model_loaded=True)
    assert "No run has finished on this server yet" in none_yet


def test_the_lessons_claims_hold_for_the_recorded_runs():
    runs = recorded.recorded_runs()
    spec = {key: c.spec for key, c in runs.items()}
    copies = [t for t in TASKS if TASKS[t].copy]
    fresh = [t for t in TASKS if not TASKS[t].copy]
    # "when the reply repeats the prompt ... many of its guesses are right; ... fresh writing ...
    # little to copy": every copy task's lookup acceptance beats every fresh task's.
    assert min(spec[(t, "lookup")].acceptance_rate for t in copies) > \
        max(spec[(t, "lookup")].acceptance_rate for t in fresh)
    for task in TASKS:
        # "on a chat reply it rarely has a guess": a guess at fewer than half of the passes
        assert spec[(task, "ngram")].proposed < 0.5 * spec[(task, "ngram")].passes, task
        # "without training it is almost never right"
        assert spec[(task, "early-exit")].acceptance_rate <= 0.1, task
    summary = ep7_words.recorded_summary(runs)
    # each draft is named as a subject takes it ("The n-gram table had"), never as a menu title
    from specdec_playable.lm.registry import DRAFTS
    for named in list(DRAFTS.values())[1:]:
        assert f" {named.subject} had " in summary and f" {named.label} had " not in summary.replace(
            f" {named.subject} had ", ""), named.key
    best = max(TASKS, key=lambda t: spec[(t, "lookup")].acceptance_rate)
    assert (f"prompt lookup had {spec[(best, 'lookup')].acceptance_rate:.0%} of its guesses accepted "
            f"on the {TASKS[best].named}") in summary
    rows = ep7_words.recorded_rows(runs, recorded.recorded_repeats())
    for (t, d), row in zip(runs, rows):
        reps = recorded.recorded_repeats()[(t, d)]
        assert len(reps) == recorded.recorded_meta()["repeats"] == 3
        speeds = sorted(r["speedup"] for r in reps)
        assert row.speedup == pytest.approx(speeds[1]) and (row.lowest, row.highest) == (speeds[0], speeds[-1])
        f = runs[(t, d)].fair
        assert (row.low, row.high, row.verdict) == (f.low, f.high, f.verdict)
    worst = max(r.highest - r.lowest for r in rows)
    assert f"moved by at most {worst:.2f}" in ep7_words.spread_sentence(rows)
    meta = recorded.recorded_meta()
    caption = ep7_words.recorded_caption(meta)
    assert f"Recorded on {meta['date']}" in caption
    assert f"(load average {meta['load_average_before'][0]:.1f} at the start" in caption
    for added in meta.get("added", ()):  # a later recording of some drafts says its own date
        assert f"runs again on {added['date']} (load average {added['load_average_before'][0]:.1f}" in caption
        for d in added["drafts"]:
            assert ep7_words.recorded_on(meta, d) == added["date"]
            assert f"recorded on {added['date']}" in ep7_words.no_model_line("repeat", d)
    assert ep7_words.recorded_on(meta, "lookup") == meta["date"]


def test_the_summary_names_the_memory_drafts_fastest_and_slowest_recorded_task():
    from specdec_playable.episodes.ep7.words import memory_summary, recorded_meta, recorded_on, recorded_runs
    from specdec_playable.kit.words import times
    from specdec_playable.lm.prompts import TASKS

    runs = {t: r for (t, d), r in recorded_runs().items() if d == "memory" and t != "repeat"}
    assert len(runs) >= 2
    fast = max(runs.values(), key=lambda r: r.speedup)
    slow = min(runs.values(), key=lambda r: r.speedup)
    line = memory_summary()
    assert recorded_on(recorded_meta(), "memory") in line
    for r in (fast, slow):
        task = next(t for t, x in runs.items() if x is r)
        assert f"{times(r.speedup)}" in line and TASKS[task].named in line
    assert line.index(times(fast.speedup)) < line.index(times(slow.speedup))
