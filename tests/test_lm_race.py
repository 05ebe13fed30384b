"""lm.race: plain and speculative decoding taking turns in one loop, and the fair speedup.

The first tests need no model: turns written by hand, and a load that changes half way through.
The last ones race the real model (a few tokens): greedy output equals plain decoding token for
token, and on a fake clock (each pass costs a known time) the race alternates so that neither run
is ever more than one pass ahead, and its figures are those times, untouched. What the race does
under a real load is for the benchmark (``benchmarks/bench_fair_race.py``).
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

from fake_clock import FakeClock, TimedModel, pass_ms
from specdec_playable import lm
from specdec_playable.lm.decode import generate
from specdec_playable.lm.drafts import PromptLookup
from specdec_playable.lm.prompts import PROMPTS
from specdec_playable.lm.race import SPEC, Turns, fair_speedup, race, race_passes, rounds_of


def interleaved(n_rounds: int, *, tokens=3, verify_ms=90.0, step_ms=40.0, load=lambda i: 1.0,
                rng=None) -> Turns:
    """Turns of a race: each speculative round, then as many plain steps as it wrote tokens;
    ``load(i)`` scales every turn of round ``i`` (the machine's load at that moment)."""
    rng = np.random.default_rng(rng)
    rows = [("spec", 0, 200.0, 1, 0), ("plain", 0, 200.0, 1, 0)]
    p = 0
    for i in range(n_rounds):
        f = load(i)
        rows.append(("spec", i + 1, f * verify_ms * rng.uniform(0.9, 1.1), tokens, 5))
        for _ in range(tokens):
            p += 1
            rows.append(("plain", p, f * step_ms * rng.uniform(0.9, 1.1), 1, 1))
    return Turns.from_rows(rows)


def overlap(a: tuple[float, float], b: tuple[float, float]) -> bool:
    return a[0] <= b[1] and b[0] <= a[1]


def test_rounds_group_a_speculative_turn_with_the_plain_steps_after_it():
    t = Turns.from_rows([("spec", 0, 9, 1, 0), ("plain", 0, 9, 1, 0), ("spec", 1, 90, 3, 5),
                         ("plain", 1, 40, 1, 1), ("plain", 2, 41, 1, 1), ("plain", 3, 42, 1, 1),
                         ("spec", 2, 80, 1, 5), ("plain", 4, 43, 1, 1), ("plain", 5, 44, 1, 1)])
    assert rounds_of(t).tolist() == [[90, 3, 123, 3], [80, 1, 87, 2]]


def test_the_fair_speedup_is_the_ratio_of_times_per_token_with_a_seeded_interval():
    t = interleaved(30, rng=1)
    f = fair_speedup(t, rng=0)
    r = rounds_of(t)
    assert f.speedup == pytest.approx((r[:, 2].sum() / r[:, 3].sum()) / (r[:, 0].sum() / r[:, 1].sum()))
    assert f.low < f.speedup < f.high and f.n_rounds == 30 and f.n_resamples == 2000
    assert f.speedup == pytest.approx(3 * 40 / 90, rel=0.05) and f.verdict == "faster"
    again = fair_speedup(t, rng=0)
    assert (again.low, again.high) == (f.low, f.high)
    # The work-based figure: 3 tokens per pass of 5 positions costing 90 / 40 steps.
    assert f.tokens_per_pass == 3.0 and f.cost_of(5) == pytest.approx(90 / 40, rel=0.05)
    assert f.work_speedup == pytest.approx(3 / f.cost_of(5)) and f.common_size == 5


def test_an_interval_that_includes_one_is_no_measurable_difference():
    f = fair_speedup(interleaved(20, tokens=2, verify_ms=80.0, rng=2), rng=0)
    assert f.low < 1.0 < f.high and f.verdict == "no measurable difference"
    assert fair_speedup(interleaved(1), rng=0).verdict == "too few rounds"
    slow = fair_speedup(interleaved(20, tokens=1, verify_ms=90.0, rng=3), rng=0)
    assert slow.high < 1.0 and slow.verdict == "slower"


def test_a_load_change_half_way_does_not_move_the_fair_speedup():
    quiet = fair_speedup(interleaved(40, rng=4), rng=0)
    loaded = fair_speedup(interleaved(40, rng=4, load=lambda i: 1.0 if i < 20 else 3.0), rng=0)
    assert overlap((quiet.low, quiet.high), (loaded.low, loaded.high))
    assert loaded.speedup == pytest.approx(quiet.speedup, rel=0.05)


def test_bad_arguments_are_refused():
    t = interleaved(3)
    with pytest.raises(ValueError, match="n_resamples"):
        fair_speedup(t, n_resamples=0)
    with pytest.raises(ValueError, match="level"):
        fair_speedup(t, level=1.5)


# --- with the model -----------------------------------------------------------------------------

NEW = 12


@pytest.fixture(scope="module")
def model():
    return lm.get_model()


@pytest.mark.parametrize("task,k", [("json-reshape", 4), ("poem", 2)])
def test_a_greedy_race_writes_plain_greedy_output_token_for_token(model, task, k):
    ids = model.tokenizer.chat(PROMPTS[task].message)
    plain = generate(model, ids, max_new=NEW)
    r = race(model, ids, PromptLookup(), k, max_new=NEW)
    assert r.spec.tokens == r.plain.tokens == plain.tokens
    assert r.spec.text == plain.text and r.spec.marks[0] == "generate"
    # The turns alternate by tokens written: after each turn the run behind goes next.
    written = {"spec": 0, "plain": 0}
    for run, tok in zip(r.turns.run.tolist(), r.turns.tokens.tolist()):
        other = "plain" if run == "spec" else "spec"
        assert written[run] <= written[other] or written[other] >= len(plain.tokens)
        written[run] += tok


def test_a_tree_race_writes_plain_greedy_output_and_counts_each_tree_pass(model):
    """Token-tree speculation in the fair race (a dynamic tree of the draft head): the same greedy
    text as plain decoding, and each speculative turn's positions are its tree's nodes plus one."""
    from specdec_playable.lm.head import DraftHead
    from specdec_playable.lm.race import race_tree

    ids = model.tokenizer.chat(PROMPTS["sum-function"].message)
    plain = generate(model, ids, max_new=NEW)
    r = race_tree(model, ids, DraftHead(), 2, 3, shape="dynamic", max_new=NEW)
    assert r.spec.tokens == r.plain.tokens == plain.tokens
    spec = r.turns.run == SPEC
    sizes = r.turns.positions[spec][1:]  # after the prompt's pass
    assert sizes.size == len(r.spec.rounds)
    assert sizes.tolist() == [len(rd.tree) + 1 for rd in r.spec.rounds]
    assert fair_speedup(r.turns, rng=0).tokens_per_pass > 1.0


def test_on_a_fake_clock_the_race_alternates_and_reports_the_pass_times_untouched(model):
    clock = FakeClock()
    timed = TimedModel(model, clock)
    ids = model.tokenizer.chat(PROMPTS["json-reshape"].message)
    passes = race_passes(timed, ids, PromptLookup(), 4, max_new=NEW, clock=clock)
    written = {"spec": 0, "plain": 0}
    seen, last_spec = [], 0
    while True:
        try:
            run, update = next(passes)
        except StopIteration as stop:
            r = stop.value
            break
        seen.append((run, update))
        written[run] = update.total_tokens
        if run == SPEC:
            last_spec = len(update.tokens)
        # The run behind went next: the plain run is never ahead, and the speculative run is
        # ahead by at most what its last pass wrote.
        assert 0 <= written["spec"] - written["plain"] <= last_spec, seen
    assert r.spec.tokens == r.plain.tokens
    # Every turn took exactly its pass's fake cost (no draft time: prompt lookup takes none), as
    # the decoders measured it; the race's figures are those times.
    expected = [pass_ms(u.positions) for _, u in seen]
    np.testing.assert_allclose(r.turns.ms, expected, atol=1e-6)
    assert r.turns.run.tolist() == [m for m, _ in seen]
    # Each run's clock holds its own passes only, laid end to end.
    for run, gen in (("spec", r.spec), ("plain", r.plain)):
        mine = [pass_ms(u.positions) for m, u in seen if m == run]
        assert gen.wall_ms == pytest.approx(sum(mine), abs=1e-6)
        assert gen.decode_ms == pytest.approx(sum(mine[1:]), abs=1e-6)
    f = fair_speedup(r.turns, rng=0)
    assert f.step_ms == pytest.approx(pass_ms(1))
    rounds = rounds_of(r.turns)
    assert f.speedup == pytest.approx((rounds[:, 2].sum() / rounds[:, 3].sum())
                                      / (rounds[:, 0].sum() / rounds[:, 1].sum()))


class _ThreadsSeen:
    """The model, noting the threads the kernel would give a 40-position pass at each forward."""

    def __init__(self, model) -> None:
        self._model, self.seen = model, []

    def forward(self, tokens, cache, **kw):
        from specdec_playable.lm import kernel

        self.seen.append(kernel.prepare_threads(40))
        return self._model.forward(tokens, cache, **kw)

    def __getattr__(self, name):
        return getattr(self._model, name)


def test_every_pass_of_a_race_runs_on_one_thread_and_the_callers_setting_comes_back(model):
    from specdec_playable.lm import kernel

    if not kernel.HAVE_NUMBA:
        pytest.skip("numba is not installed: every pass runs on one thread anyway")
    # The process allows two threads to large passes; a CPU clock would count both, so the race
    # takes one for all its passes, and the caller's own setting (none here) is back after it.
    kernel.set_process_threads(2)
    try:
        seen = _ThreadsSeen(model)
        ids = model.tokenizer.chat(PROMPTS["json-reshape"].message)
        r = race(seen, ids, PromptLookup(), 4, max_new=8)
        assert r.spec.tokens == r.plain.tokens and len(seen.seen) >= 4
        assert set(seen.seen) == {1}
        assert kernel.own_threads() is None
        assert kernel.prepare_threads(40) == min(2, kernel.numba.config.NUMBA_NUM_THREADS)
    finally:
        kernel.set_process_threads(None)


def test_a_race_stops_both_runs_when_cancelled_and_budgets_time_for_both(model):
    ids = model.tokenizer.chat(PROMPTS["poem"].message)
    cancel = threading.Event()
    turns = []

    def on_turn(run, update):
        turns.append(run)
        if len(turns) == 5:
            cancel.set()

    r = race(model, ids, PromptLookup(), 3, max_new=40, cancel=cancel, progress=on_turn)
    assert r.spec.stopped == r.plain.stopped == "cancelled" and len(r.turns) == 5
    # A fake clock that has run past the budget stops both runs, which share it.
    clock = FakeClock()
    timed = TimedModel(model, clock)
    r = race(timed, ids, PromptLookup(), 3, max_new=40, max_seconds=0.2, clock=clock,
             wall=clock)
    assert r.spec.stopped == r.plain.stopped == "time"
    assert sum(r.turns.ms) >= 200.0 and sum(r.turns.ms) < 200.0 + 2 * pass_ms(40)
