"""State tier: sentences that had slipped from the numbers they describe, and the sentences that
explain a figure which seems to contradict another page's. Each is checked against the data it
quotes, so a change in the data that breaks the sentence fails here. No browser."""

from __future__ import annotations

import html
import importlib
import itertools
import re

import panel as pn
import pytest

from specdec_playable.data import measured
from specdec_playable.episodes.ep4 import practice as practice4
from specdec_playable.episodes.ep4 import view as ep4_view
from specdec_playable.episodes.ep4 import words as prose4
from specdec_playable.episodes.ep4.state import BoilerplateVsPoetry
from specdec_playable.kit import words
from specdec_playable.kit.cpu import shipped_passes

ep4_page = importlib.import_module("specdec_playable.episodes.ep4.page")
ep6_page = importlib.import_module("specdec_playable.episodes.ep6.page")


def plain(markup: str) -> str:
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", markup))).strip()


@pytest.fixture(scope="module", autouse=True)
def _panel():
    pn.extension()


# --- smaller slips ---------------------------------------------------------------------------

def test_ep4_lede_quotes_the_two_texts_the_page_opens_with():
    means = measured.genre_means()
    left, right = means[practice4.LEFT], means[practice4.RIGHT]
    lede = ep4_page.lede()
    assert (f"kept at {left['alpha']:.0%} of the tokens on {words.in_prose(left['kind'])} and "
            f"{right['alpha']:.0%} on {words.in_prose(right['kind'])}") in lede
    # The opening pair is the one the lede names in words, and no other text's figure is quoted.
    assert (left["kind"], right["kind"]) == ("python", "poem")
    for tid, m in means.items():
        if tid not in (practice4.LEFT, practice4.RIGHT):
            assert f"on {words.in_prose(m['kind'])}" not in lede, tid


def test_ep4_break_even_line_points_at_the_tokens_per_round_where_they_are():
    s = BoilerplateVsPoetry(seed=0)
    line = plain(ep4_view.breakeven_html(s))
    assert "above the bars" in line and "below" not in line
    # ... and they are above it: each side's heading (its tokens per round) comes before it.
    view = ep4_view.BoilerplateVsPoetryView(state=s)
    order = list(view.layout().objects)
    sides = next(i for i, o in enumerate(order) if getattr(o, "name", "") == "ep4-sides")
    assert sides < order.index(view.breakeven)
    assert "tokens per round" in plain(view.sides[0].header.object)


@pytest.mark.parametrize("title, inside", [
    ("A free-verse poem", "a free-verse poem"), ("An example", "an example"),
    ("Python code (held out)", "Python code (held out)"), ("A JSON record", "a JSON record"),
    ("Your text", "your text"), ("JSON", "JSON")])
def test_a_title_inside_a_sentence_loses_only_an_articles_capital(title, inside):
    assert words.in_sentence(title) == inside


_CAPITAL_MID_SENTENCE = re.compile(r"\b(?:on|of|in|to) (?:A|An|The|Your) ")


def test_ep4_answers_and_bar_words_write_titles_in_sentence_case():
    ids = list(measured.genre_means())
    for left, right in itertools.permutations(ids, 2):
        s = BoilerplateVsPoetry(seed=0, left=left, right=right)
        for ex in practice4.EXERCISES:
            _, why = ex.answer(s)
            assert not _CAPITAL_MID_SENTENCE.search(plain(why)), why
        for run in s.runs:
            assert not _CAPITAL_MID_SENTENCE.search(prose4.bars_words(run, "x"))
    s = BoilerplateVsPoetry(seed=0, left=practice4.LEFT, right="poem-kettle")
    assert "on a free-verse poem" in plain(practice4.EXERCISES[0].answer(s)[1])


def test_ep6_does_not_presume_episode_7():
    from specdec_playable.episodes.ep6 import practice as practice6
    from specdec_playable.kit import terms

    text = plain(ep6_page.PART1_INTRO)
    assert "draft head" in text and "Episode 7" not in text
    # The early-exit draft a step borrows its cost from is said in a few words, and linked.
    step = plain(practice6.try_steps()[-1].html)
    assert "early-exit draft (the big model's own first layers, read out early)" in step
    assert "early-exit" in terms.find_terms(step)


# --- contradictions, each explained where it arises ------------------------------------------

def test_ep8_explains_why_its_poem_prompt_beats_episode_4s_poem():
    from specdec_playable.data import tree_table
    from specdec_playable.episodes.ep8 import words as ep8_words
    from specdec_playable.episodes.ep8.real_tree import real_tree_part
    from specdec_playable.episodes.ep8.state import BusyAndTrees, real_tree_step

    table = tree_table.load_tree_vs_chain()
    meta = tree_table.load_tree_vs_chain_meta()
    key = tree_table.draft_name(meta)
    sentence = ep8_words.own_poem_sentence(table)
    ep4 = measured.genre_means()["poem-kettle"]["compare"][key]["tau"]
    rows = [int(i) for i in table.rows("poem")]
    chain4 = next(i for i in rows if table.width[i] == 1 and table.positions[i] == 4)
    top = max(int(table.positions[i]) for i in rows)
    chain, best = tree_table.best_tree(table, top, "poem")
    # The figures it quotes are the table's and Episode 4's, and they do disagree as it says.
    assert table.tokens_per_pass[chain4] > ep4
    for x in (table.tokens_per_pass[chain4], table.tokens_per_pass[chain],
              table.tokens_per_pass[best], ep4):
        assert f"{x:.2f}" in sentence
    assert f"at {top} positions" in sentence
    # "The model's own greedy reply": the table was measured on greedy replies to a poem prompt.
    assert "greedy" in meta["what"] and "poem" in meta["prompts"]
    # It is on the page, next to the per-prompt table that shows those figures.
    part = real_tree_part(table, real_tree_step(), BusyAndTrees(rng=0).cpu_curve, intro="", note="")
    panel = next(p for p in part.select(pn.pane.HTML) if p.name == "ep8-real-table")
    assert html.escape(sentence) in panel.object



def test_ep8_says_nothing_of_the_poem_when_there_is_nothing_to_explain(monkeypatch):
    from specdec_playable.data import tree_table
    from specdec_playable.episodes.ep8 import words as ep8_words

    table = tree_table.load_tree_vs_chain()
    means = measured.genre_means()
    fast = {"poem-kettle": {**means["poem-kettle"], "compare": {
        d: {**v, "tau": 9.0} for d, v in means["poem-kettle"]["compare"].items()}}}
    monkeypatch.setattr(ep8_words.measured, "genre_means", lambda: {**means, **fast})
    assert ep8_words.own_poem_sentence(table) == ""


def test_ep4_says_why_a_guess_costs_more_inside_a_real_run():
    from specdec_playable.data import recorded
    from specdec_playable.kit import terms

    alone = ep4_page.draft_cost()[0]
    in_runs = recorded.median_draft_cost("head")
    costs = sorted(c.draft_cost for (_, d), c in recorded.recorded_runs().items() if d == "head")
    assert in_runs == costs[len(costs) // 2]
    assert in_runs > alone  # "a guess costs more" inside a run
    text = plain(ep4_page.explain_html())
    assert f"about {in_runs:.3f} of a step in Episode 7's recorded runs" in text
    assert f"One draft step took {alone:.3f} of a big pass" in text
    # The glossary's draft cost says the same, for any page that quotes a c.
    d = terms.term("draft-cost").definition
    assert "Episode 4" in d and "Episode 7" in d and "live run" in d


def test_ep5_says_a_95_percent_interval_misses_a_right_curve_1_time_in_20():
    from specdec_playable.episodes.ep5 import page as _  # noqa: F401
    from specdec_playable.episodes.ep5 import view as ep5_view, words as ep5_words
    from specdec_playable.episodes.ep5.state import BreakEvenMap, SimPoint
    from specdec_playable.sim.montecarlo import INTERVAL_LEVEL

    assert round(INTERVAL_LEVEL, 6) == 0.95 and ep5_words.misses_one_in() == 20
    sentence = ep5_words.pooled_miss_sentence()
    assert "95% interval" in sentence and "1 time in 20" in sentence
    ep5_page = importlib.import_module("specdec_playable.episodes.ep5.page")
    assert sentence in ep5_page.CHART_NOTE
    # Under a pooled point that misses its curve, the readout says it again; under one that
    # covers it, not.
    s = BreakEvenMap(rng=0)
    far = [SimPoint(q=s.q, k=s.k, c=s.c, speedup=3.0, ci_low=2.9, ci_high=3.1, theory=1.2)] * 2
    with __import__("param").parameterized.edit_constant(s):
        s.param.update(points=far)
    assert s.pooled and s.pooled[0].misses
    assert sentence in ep5_view.summary_html(s)
    near = [SimPoint(q=s.q, k=s.k, c=s.c, speedup=1.2, ci_low=1.1, ci_high=1.3, theory=1.2)] * 2
    with __import__("param").parameterized.edit_constant(s):
        s.param.update(points=near)
    assert not s.pooled[0].misses and sentence not in ep5_view.summary_html(s)


def test_ep7_says_why_its_guesses_cost_more_than_episode_4s():
    """Episode 7's line on the head quotes the recorded runs' median guess cost and Episode 4's
    head-alone cost, each as computed, and explains the gap only when there is one."""
    from specdec_playable.data.recorded import median_draft_cost
    from specdec_playable.episodes.ep7 import words as prose7
    from specdec_playable.lm.head import head_meta

    cost_words = prose7.cost_words
    line = prose7.head_line()
    mid, alone = median_draft_cost("head"), head_meta()["measured"]["cost"]["c"]
    assert f"each guess cost about {cost_words(mid)} of a step inside these runs" in line
    assert (f"more than the {alone:.3f} Episode 4 quotes" in line) == (mid > alone)
    assert ("pushed the head's weights out of the processor's cache" in line) == (mid > alone)


def test_ep4_prices_a_cpu_check_from_the_measured_curves_in_both_formats(monkeypatch):
    """Episode 4 no longer says a CPU check costs "several single passes": before the server has
    measured, it quotes the shipped curves' pass over 5 positions in single passes, float32 and
    4-bit (tests/test_one_record.py: after)."""
    from specdec_playable.runtime import calibration

    monkeypatch.setattr(calibration, "STORE", calibration.CalibrationStore())
    page4 = importlib.import_module("specdec_playable.episodes.ep4.page")
    html_text = page4.explain_html()
    assert "several single passes" not in html_text
    f32, q4 = shipped_passes("f32"), shipped_passes("q4")
    assert (f"costs {f32.ratio(5):.2f} single passes with float32 weights ({f32.source}) and "
            f"{q4.ratio(5):.2f} with the file's 4-bit weights ({q4.source})") in html.unescape(html_text)
