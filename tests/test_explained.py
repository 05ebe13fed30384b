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
    text = plain(ep6_page.PART1_INTRO)
    assert "draft head" in text and "Episode 7" not in text
