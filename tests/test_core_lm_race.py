"""lm.race: plain and speculative decoding taking turns in one process, and the fair speedup.

The first tests need no model: turns written by hand, a load that changes half way through, and
the old two-clock method beside it. The last ones race the real model (a few tokens): greedy
output equals plain decoding token for token, and a race under an artificial CPU load (busy
processes this test starts and stops) gives an interval that overlaps the one without it. That
is the method's claim; the times themselves are for the benchmark
(``benchmarks/bench_fair_race.py``).
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from ep7_fakes import fake_plain, fake_spec
from specdec_playable import lm
from specdec_playable.lm.decode import generate
from specdec_playable.lm.drafts import PromptLookup
from specdec_playable.lm.prompts import PROMPTS
from specdec_playable.lm.race import (Turns, fair_speedup, race, rounds_of, two_clock_speedup)


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


def test_the_two_clock_method_is_moved_by_the_same_load_change():
    # Run one after the other, the plain run got the load: its steps took 3x as long.
    rounds = [(4, 2)] * 20
    spec = fake_spec(rounds, verify_ms=90.0)
    quiet = two_clock_speedup(spec, fake_plain(len(spec.tokens), step_ms=40.0), rng=0)
    loaded = two_clock_speedup(spec, fake_plain(len(spec.tokens), step_ms=120.0), rng=0)
    assert loaded[0] == pytest.approx(3 * quiet[0])
    assert not overlap(quiet[1:], loaded[1:])


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
    ids = model.tokenizer.chat(PROMPTS[task][1])
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


def _busy(n: int) -> list[subprocess.Popen]:
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


def test_a_race_under_cpu_load_agrees_with_one_without(model):
    ids = model.tokenizer.chat(PROMPTS["json-reshape"][1])
    quiet = race(model, ids, PromptLookup(), 4, max_new=NEW)
    procs = _busy(2)
    try:
        loaded = race(model, ids, PromptLookup(), 4, max_new=NEW)
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait(10)
    a, b = fair_speedup(quiet.turns, rng=0), fair_speedup(loaded.turns, rng=0)
    assert a.n_rounds >= 2 and b.n_rounds >= 2
    assert overlap((a.low, a.high), (b.low, b.high)), (a, b)
