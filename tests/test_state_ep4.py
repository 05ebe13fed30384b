"""State tier: Episode 4's parameters drive sim.relay over the real model's measured texts."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from services import service
from specdec_playable.runtime import jobs
from specdec_playable.data import measured, texts
from specdec_playable.sim import relay
from specdec_playable.lm.measure import TextMeasurement
from specdec_playable.sim.seeds import SEED_MAX
from specdec_playable.episodes.ep4.state import BIG_PASS_MS, PASTED, BoilerplateVsPoetry, TextRun

BUNDLED = list(measured.text_ids())


def test_defaults_match_the_episode_spec():
    s = BoilerplateVsPoetry(seed=1)
    # c: the draft head's measured cost, to two decimals (assets/lm/draft_head.json)
    assert (s.left, s.right, s.k, s.c) == ("py-account", "poem-kettle", 6, 0.02)
    assert s.draft_step_ms == pytest.approx(0.02 * 600) and BIG_PASS_MS == 600
    left, right = s.runs
    assert left.text.kind == "python" and right.text.kind == "poem"
    assert s.message == "" and s.pasted is None and s.scoring == "idle"


def test_each_side_is_the_models_tokens_with_their_measured_acceptance():
    s = BoilerplateVsPoetry(seed=1)
    for run, tid in zip(s.runs, (s.left, s.right)):
        shipped = measured.load_measured().texts[tid]
        assert run.text.tokens == shipped.pieces
        np.testing.assert_array_equal(run.text.q, shipped.alpha)
    assert set(s.param.left.objects) == set(BUNDLED) | {PASTED}


def test_each_run_is_the_relay_run_with_this_sides_stream():
    s = BoilerplateVsPoetry(seed=2024, k=5, c=0.2)
    for i, run in enumerate(s.runs):
        rng = np.random.default_rng(2024).spawn(2)[i]
        t = run.text
        expected = relay.run(t.tokens, t.q, 5, rng=rng, big_pass_ms=600.0, draft_step_ms=120.0,
                             decoys=t.decoys)
        assert run.wall_ms == expected.wall_ms
        assert run.acceptance_rate == expected.acceptance_rate
        assert run.n_rounds == expected.n_rounds


def test_measurements_are_consistent_with_the_run():
    s = BoilerplateVsPoetry(seed=77, c=0.15)
    for run in s.runs:
        r = run.result.rounds
        n = run.n_tokens
        assert run.baseline_ms == n * 600.0
        assert run.verify_ms == run.n_rounds * 600.0
        assert run.draft_ms == pytest.approx(r["drafted"].sum() * 90.0)
        assert run.verify_ms + run.draft_ms == pytest.approx(run.wall_ms)
        assert run.tokens_per_round == pytest.approx(n / run.n_rounds)
        assert run.speedup == pytest.approx(run.baseline_ms / run.wall_ms)
        assert 0 <= run.accepted <= run.judged <= r["drafted"].sum()
        assert run.acceptance_rate == pytest.approx(run.accepted / run.judged)
        # Every token is either a kept draft or the big model's own (one per round, but maybe
        # not the last round when its drafts ran to the end of the text).
        assert run.accepted + run.big_model_tokens == n
        assert run.n_rounds - 1 <= run.big_model_tokens <= run.n_rounds
        assert set(run.status) <= {"accepted", "correction", "bonus"}
        assert (run.round >= 0).all() and (np.diff(run.round) >= 0).all()
        for i, st_ in enumerate(run.status):
            # A correction carries the draft's rejected guess, which is the text's decoy (the
            # draft's measured top guess; "" where that guess was the token itself).
            if st_ == "correction":
                assert run.missed_guess[i] == run.text.decoys[i]
            else:
                assert run.missed_guess[i] == ""


def test_same_seed_reproduces_a_run_and_settings_keep_the_seed():
    a, b = BoilerplateVsPoetry(seed=31337), BoilerplateVsPoetry(seed=31337)
    for ra, rb in zip(a.runs, b.runs):
        assert ra.status == rb.status and ra.wall_ms == rb.wall_ms
    # Changing the right text leaves the left run exactly as it was (its own stream).
    left_before = a.runs[0]
    a.right = "json-record"
    assert a.seed == 31337
    assert a.runs[0].status == left_before.status and a.runs[0].wall_ms == left_before.wall_ms
    assert a.runs[1].text.id == "json-record"


def test_run_again_draws_a_fresh_seed_from_the_sessions_generator():
    s = BoilerplateVsPoetry(rng=5)
    seeds = [s.seed]
    walls = {(s.runs[0].wall_ms, s.runs[1].wall_ms)}
    for _ in range(6):
        s.run_again()
        seeds.append(s.seed)
        walls.add((s.runs[0].wall_ms, s.runs[1].wall_ms))
        assert s.runs[0].seed == s.seed
    assert len(set(seeds)) == len(seeds)
    assert len(walls) > 1  # fresh randomness gives different runs
    # The session generator is its own: the same rng gives the same sequence of seeds,
    # and nothing here touched numpy's global state.
    t = BoilerplateVsPoetry(rng=5)
    for _ in range(6):
        t.run_again()
    assert t.seed == seeds[-1]
    # Any seed shown can be typed back in to get that run.
    again = BoilerplateVsPoetry(seed=seeds[3], rng=123)
    s.seed = seeds[3]
    assert again.runs[0].status == s.runs[0].status


def test_run_again_reruns_even_if_the_new_seed_equals_the_old():
    s = BoilerplateVsPoetry(seed=10)
    s._rng = np.random.default_rng(0)
    same = int(np.random.default_rng(0).integers(0, SEED_MAX, endpoint=True))
    s.seed = same
    before = s.runs
    s.run_again()
    assert s.seed == same and s.runs is not before


@pytest.mark.parametrize("k, c", [(1, 0.01), (6, 0.15), (12, 1.0)])
def test_k_and_c_set_draft_lengths_and_costs(k, c):
    s = BoilerplateVsPoetry(seed=3)
    s.param.update(k=k, c=c)
    assert s.break_even_tokens == pytest.approx(1 + k * c)
    for run in s.runs:
        assert run.result.rounds["drafted"].max() <= k
        assert run.draft_ms == pytest.approx(run.draft_steps * c * 600.0)


def test_bounds_are_enforced():
    s = BoilerplateVsPoetry(seed=0)
    for name, bad in [("k", 0), ("k", 13), ("c", 0.0), ("c", 1.5), ("seed", -1),
                      ("seed", SEED_MAX + 1), ("left", "nope")]:
        with pytest.raises(ValueError):
            setattr(s, name, bad)
    assert (s.k, s.c, s.seed, s.left) == (6, 0.02, 0, "py-account")


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, SEED_MAX), k=st.integers(1, 12), left=st.sampled_from(BUNDLED),
       right=st.sampled_from(BUNDLED))
def test_the_output_always_equals_the_text(seed, k, left, right):
    s = BoilerplateVsPoetry(seed=seed, k=k, left=left, right=right)
    for run in s.runs:
        assert run.output_matches
        assert "".join(run.result.output) == run.text.source


class _FakeScorer:
    """Scores a paste without the model: every token is one character, acceptance 0.5."""

    def __init__(self):
        self.calls = 0

    def __call__(self, source):
        self.calls += 1

        def work(ctx):
            ctx.report((0, len(source)))
            n = len(source)
            return TextMeasurement(ids=np.arange(n), pieces=tuple(source), alpha=np.full(n, 0.5),
                                greedy=np.zeros(n, bool), p_token=np.full(n, 0.5),
                                guess=("?",) * n)
        return work


@pytest.fixture
def queue():
    q = jobs.JobQueue(workers=1, max_waiting=2)
    yield q
    q.shutdown()


def _wait_running(s):
    import time

    for _ in range(200):
        if s.follower.job.state == jobs.RUNNING:
            return
        time.sleep(0.02)
    raise AssertionError("the job never started")


def _paste(s, text):
    """Send a paste and wait for its scoring (a worker thread) to finish."""
    ok = s.use_paste(text)
    job = s.follower.job  # None when the scoring ended before the first poll (and was shown)
    if ok and job is not None:  # the real model's first load: minutes on a busy machine
        assert job.wait(300)
        s.poll()
    return ok


@settings(max_examples=40, deadline=None)
@given(text=st.text(min_size=1, max_size=300).filter(str.strip), seed=st.integers(0, SEED_MAX))
def test_pasted_text_runs_and_comes_back_unchanged(text, seed):
    q = jobs.JobQueue(workers=1, max_waiting=2)
    try:
        s = BoilerplateVsPoetry(seed=seed, service=service(q, scoring=_FakeScorer()))
        assert _paste(s, text)
        assert s.right == PASTED and s.message == "" and s.scoring == "done"
        run = s.runs[1]
        assert run.text.source == text and "".join(run.result.output) == text
    finally:
        q.shutdown()


def test_a_paste_is_scored_by_the_real_model(queue):
    s = BoilerplateVsPoetry(seed=3, service=service(queue))
    assert _paste(s, "def add(a, b):\n    return a + b\n")
    t = s.runs[1].text
    assert s.scoring == "done" and s.progress == (len(t), len(t))
    assert t.kind == "pasted" and t.tokens[:3] == ("def", " add", "(")
    assert ((t.q >= 0) & (t.q <= 1)).all() and t.q.max() > 0.3  # "return" after the colon


def test_scoring_reports_its_place_in_line_and_can_be_cancelled(queue):
    import threading

    gate = threading.Event()

    def blocker(_source):
        return lambda ctx: gate.wait(10)

    first = BoilerplateVsPoetry(seed=1, service=service(queue, scoring=blocker))
    second = BoilerplateVsPoetry(seed=1, service=service(queue, scoring=_FakeScorer()))
    assert first.use_paste("one")
    _wait_running(first)
    assert second.use_paste("two")
    second.poll()
    assert second.scoring == "queued" and second.position == 1 and second.active
    second.cancel()
    assert second.scoring == "cancelled" and second.message == "Scoring cancelled."
    assert not second.active and second.pasted is None
    gate.set()
    first.follower.job.wait(10)


def test_a_full_queue_is_refused_with_a_message():
    import threading

    q = jobs.JobQueue(workers=1, max_waiting=0)
    gate = threading.Event()
    try:
        a = BoilerplateVsPoetry(seed=1, service=service(q, scoring=lambda _s: (lambda ctx: gate.wait(10))))
        b = BoilerplateVsPoetry(seed=1, service=service(q, scoring=_FakeScorer()))
        assert a.use_paste("first")
        _wait_running(a)
        assert not b.use_paste("second")
        assert "busy" in b.message and b.scoring == "idle"
    finally:
        gate.set()
        q.shutdown()


def test_measured_acceptance_orders_the_texts_over_many_seeds():
    """Over 200 seeds each run's acceptance rate averages near its text's measured mean, and the
    two sides keep the order of their measured means."""
    s = BoilerplateVsPoetry(seed=0)
    code, poem = [], []
    for seed in range(200):
        s.seed = seed
        code.append(s.runs[0].acceptance_rate)
        poem.append(s.runs[1].acceptance_rate)
    means = measured.genre_means()
    # 200 runs give a standard error below 0.01 for either mean; 0.05 is five of them.
    assert np.mean(code) == pytest.approx(means["py-account"]["alpha"], abs=0.05)
    assert np.mean(poem) == pytest.approx(means["poem-kettle"]["alpha"], abs=0.05)
    gap = means["py-account"]["alpha"] - means["poem-kettle"]["alpha"]
    assert np.sign(np.mean(code) - np.mean(poem)) == np.sign(gap) and abs(gap) > 0.05


def test_paste_goes_right_and_replaces_an_earlier_paste_on_its_side(queue):
    s = BoilerplateVsPoetry(seed=9, service=service(queue, scoring=_FakeScorer()))
    assert _paste(s, "Dear Sir, thank you for your letter.")
    assert s.right == PASTED and s.runs[1].text.kind == "pasted"
    s.left = PASTED
    s.right = "poem-kettle"
    assert _paste(s, "for (let i = 0; i < n; i++) {}")
    # The paste is already on the left, so it stays there and the right is untouched.
    assert s.left == PASTED and s.right == "poem-kettle"
    assert s.runs[0].text.source == "for (let i = 0; i < n; i++) {}"


def test_overlong_paste_sets_a_message_and_keeps_the_previous_run(queue):
    scorer = _FakeScorer()
    s = BoilerplateVsPoetry(seed=11, service=service(queue, scoring=scorer))
    assert _paste(s, "<b>first</b>")
    before, pasted = s.runs, s.pasted
    assert not s.use_paste("x" * (texts.PASTE_MAX_CHARS + 1))
    assert scorer.calls == 1  # the refused text never reached a worker
    assert "at most 2,000 characters" in s.message and "2,001" in s.message
    assert s.runs is before and s.pasted is pasted
    assert s.runs[1].text.source == "<b>first</b>"
    # Exactly 2,000 characters is allowed, and clears the message.
    assert _paste(s, "y " * 1000)
    assert s.message == "" and len(s.runs[1].text.source) == 2000


def test_empty_paste_is_refused_with_a_message(queue):
    s = BoilerplateVsPoetry(seed=12, service=service(queue, scoring=_FakeScorer()))
    before = s.runs
    assert not s.use_paste("   \n ")
    assert "empty" in s.message and s.runs is before


def test_choosing_the_paste_slot_before_pasting_gives_an_empty_side():
    s = BoilerplateVsPoetry(seed=4)
    s.left = PASTED
    assert s.runs[0] is None and isinstance(s.runs[1], TextRun)


def test_each_state_is_independent():
    a, b = BoilerplateVsPoetry(seed=1), BoilerplateVsPoetry(seed=1)
    a.use_paste("hello there")
    a.k = 3
    assert b.k == 6 and b.pasted is None and b.right == "poem-kettle"


def test_a_failed_scoring_says_why_and_offers_to_try_again(queue):
    import time

    from specdec_playable.episodes.ep4.state import PASTE_LABEL
    from specdec_playable.runtime.model_process import ProcessFailed

    tries = []

    def dies(_source):
        def work(ctx):
            tries.append(1)
            raise ProcessFailed("the model process stopped answering")
        return work

    s = BoilerplateVsPoetry(seed=1, service=service(queue, scoring=dies))
    for n in (1, 2):  # pressing the button again scores the text afresh
        assert s.use_paste("def f():\n    return 1\n")
        deadline = time.monotonic() + 10
        while s.poll() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert len(tries) == n and s.scoring == "failed"
        assert s.message == ("The run failed on the server: the model process stopped answering. "
                             f"Press “{PASTE_LABEL}” to try again.")
