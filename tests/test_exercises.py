"""State tier: the "Check yourself" questions. Each answer is computed from the state at the
question's setting, and says what its numbers say; the page's Check moves the controls there.

Statistical answers (Episode 3's measured rounds, Episode 6's chi-square, the race) are
checked over several seeds, as stated. No browser.
"""

from __future__ import annotations

import html
import json
import re

import numpy as np
import pytest

from specdec_playable.data import measured
from specdec_playable.kit.episode import Exercise
from specdec_playable.episodes import ep1, ep2, ep3, ep4, ep5, ep6, ep7, ep8
from specdec_playable.episodes.ep5 import practice as practice5
from specdec_playable.sim import theory
from specdec_playable.episodes.ep1.state import WritingVsChecking
from specdec_playable.episodes.ep2.state import BIG_PASS_MS, DRAFT_STEP_MS, TOKENS, Relay
from specdec_playable.episodes.ep3.state import QualityDial
from specdec_playable.episodes.ep4.state import BoilerplateVsPoetry
from specdec_playable.episodes.ep5.state import BreakEvenMap
from specdec_playable.episodes.ep6.state import FinePrint
from specdec_playable.data.recorded import recorded_runs
from specdec_playable.episodes.ep7.state import RealText
from specdec_playable.kit.answers import Score
from specdec_playable.episodes.ep8.state import BusyAndTrees
from specdec_playable.kit import exercises
from specdec_playable.kit import words

STATES = {ep1: WritingVsChecking, ep2: Relay, ep3: QualityDial, ep4: BoilerplateVsPoetry,
          ep5: BreakEvenMap, ep6: FinePrint, ep7: RealText, ep8: BusyAndTrees}


def plain(markup: str) -> str:
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", markup))).strip()


def at(module, i: int, **kw):
    """A fresh state moved to question ``i``'s setting, and the answer there."""
    ex = module.EPISODE.questions[i]
    s = STATES[module](**kw)
    s.param.update(**ex.settings)
    right, why = ex.answer(s)
    return s, ex, right, plain(why)


@pytest.mark.parametrize("module", list(STATES))
def test_each_episode_asks_two_or_three_well_formed_questions(module):
    exs = module.EPISODE.questions
    assert 2 <= len(exs) <= 3 and all(isinstance(e, Exercise) for e in exs)
    cls = STATES[module]
    for ex in exs:
        assert len(set(ex.choices)) == len(ex.choices) >= 2
        for name in ex.settings:
            assert name in cls.param and not cls.param[name].constant
        # The answer is one of the choices at the question's setting, from any starting point.
        for kw in ({}, {"rng": 3} if "rng" in cls.__init__.__code__.co_varnames else {}):
            s = cls(**kw)
            s.param.update(**ex.settings)
            right, _ = ex.answer(s)
            assert 0 <= right < len(ex.choices)


def test_ep1_answers():
    s, ex, right, why = at(ep1, 0)
    assert ex.choices[right] == "The same: one pass" and s.comparison.parallel_ms == s.big_pass_ms
    assert f"takes {words.ms(s.comparison.parallel_ms)}: 1 pass" in why
    assert f"{words.ms(s.comparison.sequential_ms)}, {s.n_tokens}× as long" in why
    s, ex, right, why = at(ep1, 1)
    assert ex.choices[right] == words.ms(s.comparison.sequential_ms) == "6,000 ms"
    assert why.endswith(f"= {words.ms(s.comparison.sequential_ms)}.")


@pytest.mark.parametrize("seed", [0, 1, 23, 999_999])
def test_ep2_answers(seed):
    s, ex, right, why = at(ep2, 0, seed=seed)
    made = s.result.rounds["tokens"]
    assert int(ex.choices[right]) == made.max() == s.k + 1
    assert (f"the last round only {made[-1]}" in why) == (made[-1] < made.max())
    assert f"{words.times(s.result.speedup)}" in why and s.result.speedup > 1
    s, ex, right, why = at(ep2, 1, seed=seed)
    assert ex.choices[right] == words.faster_or_slower(s.result.speedup) == "slower"
    assert f"took {words.ms(s.result.wall_ms)}" in why and f"{words.ms(s.result.baseline_ms)}" in why
    r = s.result
    assert r.n_rounds == len(TOKENS) and (r.rounds["tokens"] == 1).all()  # one token a round
    full = int((r.rounds["drafted"] == s.k).sum())
    assert r.wall_ms == r.rounds["drafted"].sum() * DRAFT_STEP_MS + r.n_rounds * BIG_PASS_MS
    assert f"{full} of its {words.plural(r.n_rounds, 'round')} paid {s.k} draft steps" in why
    assert ("the last drafted fewer" in why) == (full < r.n_rounds)
    assert f"pass, {words.ms(s.k * DRAFT_STEP_MS + BIG_PASS_MS)}" in why


@pytest.mark.parametrize("rng", range(5))
def test_ep3_answers(rng):
    s, ex, right, why = at(ep3, 0, rng=rng)
    by_k = theory.expected_speedup(0.5, np.arange(1, 17), 0.1)
    assert ex.choices[right] == f"k = {int(np.argmax(by_k)) + 1}"
    assert f"k = 1 gives {by_k[0]:.2f}×" in why and f"k = 8 {by_k[7]:.2f}×" in why
    assert f"measured {s.result.speedup:.2f}×" in why
    s, ex, right, why = at(ep3, 1, rng=rng)
    assert ex.choices[right] == "slower" and s.theory_speedup < 1
    assert s.result.ci_high < 1  # the page's own measurement agrees (2,000 rounds, 5 seeds)
    assert f"{s.theory_tokens_per_round:.2f} tokens" in why and f"= {s.cost_per_round:.2f} passes" in why
    assert f"interval {s.result.ci_low:.2f} to {s.result.ci_high:.2f}" in why


def test_ep5_answers():
    opened = BreakEvenMap.param.c.default
    before = BreakEvenMap(c=opened).break_even(4)
    for i, c in ((0, 2 * opened), (1, opened / 3)):  # "double it", and a much cheaper draft
        s, ex, right, why = at(ep5, i)
        q = s.break_even(4)
        assert s.c == pytest.approx(c) and s.k == 4
        assert theory.expected_speedup(q, 4, s.c) == pytest.approx(1, abs=1e-6)
        gaps = sorted(abs(float(x.split()[-1]) - q) for x in ex.choices)
        assert abs(float(ex.choices[right].split()[-1]) - q) == gaps[0] < 0.05 < gaps[1]
        assert f"at q = {q:.2f} (theory), against {before:.2f} at c = {opened:.2f}" in why
    assert "Double it to c = 0.30" in ep5.EPISODE.questions[0].question


def test_no_question_is_answered_on_the_page_before_it_is_asked():
    # Episode 5 opens at c = 0.15 and shows every break-even q there (its list and diamonds),
    # and its "Try this" moves c to 0.5: neither question asks at those costs.
    shown = {BreakEvenMap.param.c.default, practice5.TRY_C}
    assert all(ex.settings["c"] not in shown for ex in ep5.EPISODE.questions)
    # Episode 1's second step asks question 1 instead of answering it.
    step = plain(ep1.EPISODE.steps[1].html)
    assert "Question 1" in step and "one pass" not in step and "as long" not in step


@pytest.mark.parametrize("rng", range(4))
def test_ep6_answers(rng):
    s, ex, right, why = at(ep6, 0, rng=rng)
    fav = s.favourite - 1
    assert ex.choices[right] == "the big model's"  # chi-square at N = 100,000, 4 seeds
    assert f"{s.frequencies[fav]:.1%} were" in why and f"proposed it {s.p_draft[fav]:.1%}" in why
    assert abs(s.frequencies[fav] - s.p_big[fav]) < 0.01 < abs(s.frequencies[fav] - s.p_draft[fav])
    for seed in (1, 7, 42):
        s, ex, right, why = at(ep6, 1, rng=rng, race_seed=seed)
        costs = [r.total_cost for r in s.runs]
        assert ex.choices[right] == s.runs[int(np.argmin(costs))].label == s.runs[3].label
        assert f"took {min(costs):,.1f} passes" in why and "the fewer drafts the better" in why


def test_ep8_answers():
    s, ex, right, why = at(ep8, 0, rng=0)
    assert ex.choices[right] == words.faster_or_slower(float(s.here.speedup)) == "slower"
    assert f"give {float(s.here.speedup):.2f}×" in why
    s, ex, right, why = at(ep8, 1, rng=0)
    assert ex.choices[right] == "the chain" and s.chain_theory > s.tree_theory
    assert f"decides {s.tree_theory:.2f} tokens" in why and f"{s.chain_theory:.2f};" in why
    assert s.chain_sim.tokens_per_round > s.tree_sim.tokens_per_round


def test_check_moves_the_controls_and_answers_from_the_state():
    s = QualityDial(rng=0)
    section = exercises.exercises_section(s, ep3.EPISODE.questions, name="ep3")
    q2 = section.questions[1]
    assert not q2.answer.visible and [b.label for b in q2.buttons] == list(ep3.EPISODE.questions[1].choices)
    q2.buttons[0].clicks += 1  # "faster"
    assert (s.q, s.k, s.c) == (0.5, 4, 0.3)  # the page moved to the question's setting
    text = plain(q2.answer.object)
    assert q2.answer.visible and text.startswith("✗ Not quite: you said faster; the answer is slower.")
    assert f"Theory says {s.theory_speedup:.2f}×" in text
    assert [b.color for b in q2.buttons] == ["primary", "default", "default"]
    assert all(b.disabled for b in q2.buttons) and q2.again.visible
    assert 'id="exercise-2"' in q2.head.object and "<h3>Question 2</h3>" in q2.head.object


def test_the_first_guess_counts_and_the_answer_locks_the_question():
    s = QualityDial(rng=0)
    section = exercises.exercises_section(s, ep3.EPISODE.questions, name="ep3")
    q1, q2 = section.questions
    q2.buttons[0].clicks += 1  # "faster": wrong
    s.param.update(q=0.9, c=0.0)  # the learner moved on
    q2.guess(2)  # a second guess, "slower" (the disabled button cannot send it; a call can)
    assert (s.q, s.c) == (0.9, 0.0)  # nothing moved: the question is locked
    assert plain(q2.answer.object).startswith("✗ Not quite: you said faster")
    assert section.sheet.answer(2).picked == 0 and section.sheet.score == Score(0, 1, 2)
    q2.again.clicks += 1  # "Show this setting" moves the page back and says why, record kept
    assert (s.q, s.c) == (0.5, 0.3) and "Theory says" in plain(q2.answer.object)
    assert section.sheet.score == Score(0, 1, 2)
    q1.buttons[ep3.EPISODE.questions[0].choices.index("k = 2")].clicks += 1  # right
    assert section.sheet.score == Score(1, 2, 2)
    score = plain(section.objects[0].objects[-2].object)  # the slot holds the built section
    assert "Your score here: 1 of 2 answered right at the first try." in score


def test_answers_kept_in_the_browser_come_back_locked_and_the_store_hears_each_new_one():
    s = QualityDial(rng=0)
    section = exercises.exercises_section(s, ep3.EPISODE.questions, name="ep3")
    keys = [k for k, _ in exercises.questions_of(ep3.EPISODE.questions)]
    assert section.store.saved == ""
    section.questions[0].buttons[1].clicks += 1
    saved = json.loads(section.store.saved)
    assert saved == {"v": 1, "pages": {"ep3": {keys[0]: [1, 1]}}}
    # A reload: a fresh page, and the browser sends what it keeps.
    s2 = QualityDial(rng=0)
    again = exercises.exercises_section(s2, ep3.EPISODE.questions, name="ep3")
    again.store.loaded = section.store.saved
    q1 = again.questions[0]
    assert again.sheet.locked(1) and not again.sheet.locked(2)
    assert all(b.disabled for b in q1.buttons) and q1.buttons[1].color == "primary"
    assert plain(q1.answer.object).startswith("✓ Right: k = 2.")
    assert "answered this earlier in this browser" in plain(q1.answer.object)
    assert (s2.q, s2.c) == (QualityDial.param.q.default, QualityDial.param.c.default)  # not moved
    # Records for another page, a reworded question or out of range are ignored.
    third = exercises.exercises_section(QualityDial(rng=0), ep3.EPISODE.questions, name="ep3")
    third.store.loaded = json.dumps({"v": 1, "pages": {"ep2": {keys[0]: [1, 1]},
                                                        "ep3": {"reworded": [0, 0], keys[1]: [7, 2]}}})
    assert third.sheet.score == Score(0, 0, 2)


def test_ep4_answers_are_the_measured_means():
    means = measured.genre_means()
    s, ex, right, why = at(ep4, 0)
    a, b = means["py-account"]["alpha"], means["poem-kettle"]["alpha"]
    assert ex.choices[right] == ("the Python code" if a > b + 0.02 else
                                 "the poem" if b > a + 0.02 else "about the same")
    assert f"{a:.3f}" in why and f"{b:.3f}" in why
    s, ex, right, why = at(ep4, 1)
    a, b = means["js-loop"]["p_token"], means["poem-kettle"]["p_token"]
    assert (s.left, s.right) == ("js-loop", "poem-kettle")
    assert ex.choices[right] == ("the JavaScript" if a > b + 0.02 else
                                 "the poem" if b > a + 0.02 else "about the same")
    assert f"{a:.2f}" in why and f"{b:.2f}" in why


def test_ep7_answers_are_the_recorded_races():
    runs = recorded_runs()
    s, ex, right, why = at(ep7, 0)
    copy, fresh = runs[("repeat", "lookup")].spec, runs[("sky", "lookup")].spec
    assert (s.task, s.draft) == ("repeat", "lookup")
    assert right == (2 if abs(copy.acceptance_rate - fresh.acceptance_rate) < 0.05 else
                     0 if copy.acceptance_rate > fresh.acceptance_rate else 1)
    assert words.share(copy.acceptance_rate) in why and words.share(fresh.acceptance_rate) in why
    s, ex, right, why = at(ep7, 1)
    f = runs[("repeat", "early-exit")].fair
    assert ex.choices[right] == {"faster": "faster", "slower": "slower"}.get(
        f.verdict, "no measurable difference")
    if f.verdict != "too few rounds":
        assert f"{f.speedup:.2f}×" in why and f"{f.low:.2f}×" in why and f"{f.high:.2f}×" in why
