"""Episode 4's measured parts as plain functions: the histogram's rows, the sentence about the
genres (written from the measured means), the paste's progress line."""

from __future__ import annotations

import importlib


import html
import re

import numpy as np
import pytest

from services import service
from specdec_playable.runtime import jobs
from specdec_playable.data import measured
from specdec_playable.episodes import ep4
from specdec_playable.episodes.ep4.state import BoilerplateVsPoetry
from specdec_playable.episodes.ep4 import words as prose4
from specdec_playable.kit import words
from specdec_playable.episodes.ep4 import view as v
ep4_page = importlib.import_module("specdec_playable.episodes.ep4.page")


def test_histogram_rows_are_each_texts_shares():
    items = v.histogram_items()
    assert [n for n, _ in items] == [words.short_name(t.kind) for t in measured.load_measured().texts.values()]
    data = v.histogram_data(items)
    assert len(data["y"]) == v.BINS * len(items) == len(set(data["y"]))
    for name, alpha in items:
        rows = [i for i, n in enumerate(data["name"]) if n == name]
        assert sum(data["share"][i] for i in rows) == pytest.approx(1.0)
        assert sum(data["count"][i] for i in rows) == len(alpha)
        top = rows[0]  # the highest bin first
        assert data["bin"][top] == v.bin_labels()[-1]
        assert data["count"][top] == int((np.asarray(alpha) >= 0.8).sum())


def test_genre_story_states_the_measured_means():
    story = prose4.genre_story()
    means = measured.genre_means()
    ranked = sorted(means.values(), key=lambda m: -m["alpha"])
    assert f"{ranked[0]['alpha']:.2f}" in story and f"{ranked[-1]['alpha']:.2f}" in story
    boiler = max(m["alpha"] for m in means.values() if m["kind"] in ("code", "json", "letter"))
    poem = next(m for m in means.values() if m["kind"] == "poem")
    # The verdict on the title follows the numbers, not the other way round.
    holds = boiler - poem["alpha"] >= 0.1
    assert ("does not hold" in story) == (not holds)
    if not holds:
        assert f"at most {boiler:.2f}" in story and f"({poem['alpha']:.2f})" in story
    for m in means.values():
        if m["kind"] in ("code", "json", "letter"):
            assert f"{m['p_token']:.2f} on {prose4.in_prose(m['kind'])}" in story
            assert m["p_token"] > poem["p_token"]


def test_genre_table_has_one_row_per_text_with_its_numbers():
    html = v.genre_table_html()
    for tid, m in measured.genre_means().items():
        row = re.search(rf'<tr data-text="{tid}">(.*?)</tr>', html).group(1)
        assert f">{m['alpha']:.3f}<" in row and f">{m['tokens']}<" in row


def test_scoring_line_follows_the_queue():
    q = jobs.JobQueue(workers=1, max_waiting=4)
    try:
        s = BoilerplateVsPoetry(seed=1, service=service(q))
        assert v.scoring_html(s) == ""
        with _unlocked(s):
            s.param.update(scoring="queued", position=3)
        assert "2 runs ahead" in v.scoring_html(s)
        with _unlocked(s):
            s.param.update(scoring="running", progress=(32, 417))
        assert "32 of 417 tokens" in v.scoring_html(s)
    finally:
        q.shutdown()


def _unlocked(s):
    from specdec_playable.kit.params import unlocked

    return unlocked(s)


def test_alpha_classes_cover_the_unit_interval():
    assert [v.token_alpha_class(a) for a in (0.0, 0.19, 0.2, 0.79, 0.8, 1.0)] == \
        ["m0", "m0", "m1", "m3", "m4", "m4"]


# --- "Why boilerplate can fly": every text it names as flying is above the poem in the table ----


def _fly_named(story: str) -> tuple[list[str], list[str]]:
    """The texts the story names as flying (kept more often than on the poem) and as falling
    short (the big model surer than on the poem, the head not kept more often)."""
    fly = re.search(r"kept more often than on the poem \([\d.]+\) on (.*?) \(", story)
    short = re.search(r"learned the habit too: on (.*?) the big model is surer than on the poem", story)
    split = lambda m: re.split(r", | and ", m.group(1)) if m else []  # noqa: E731
    return split(fly), split(short)


def _check_fly_story(means: dict) -> None:
    """The sentence compares the numbers as it shows them, to two decimals: a text is named as
    flying only where its shown mean is above the poem's shown mean."""
    story = prose4.fly_story()
    fly, short = _fly_named(story)
    by_name = {prose4.in_prose(m["kind"]): m for m in means.values()}
    poem = next(m for m in means.values() if m["kind"] == "poem")
    shown = lambda m: round(m["alpha"], 2)  # noqa: E731
    assert fly or "kept more often" not in story
    for name in fly:  # named as flying: the table shows it above the poem
        assert shown(by_name[name]) > shown(poem), (name, story)
        assert f"{by_name[name]['alpha']:.2f} on {name}" in story
    for name in short:  # named as falling short: at or below the poem, though easier for the big model
        assert shown(by_name[name]) <= shown(poem) and by_name[name]["p_token"] > poem["p_token"]
    # Every text shown above the poem is named as flying, and no other.
    above = {prose4.in_prose(m["kind"]) for m in means.values() if shown(m) > shown(poem)}
    assert set(fly) == above
    # An example habit is given only for a text named as flying.
    for kind, habit in prose4._HABITS.items():
        if habit in story:
            assert any(m["kind"] == kind and shown(m) > shown(poem) for m in means.values()), habit


def test_why_boilerplate_can_fly_names_only_texts_above_the_poem():
    _check_fly_story(measured.genre_means())
    assert "form letter" not in _fly_named(prose4.fly_story())[0]  # 0.373 and 0.366: both 0.37
    assert html.escape(prose4.fly_story()) in ep4_page.explain_html()


@pytest.mark.parametrize("poem_alpha", [0.0, 0.2, 0.31, 0.3725, 0.374, 0.55, 0.7])
def test_why_boilerplate_can_fly_follows_the_numbers_it_names(monkeypatch, poem_alpha):
    """Move the poem's mean acceptance under, between and over the others: the sentence follows."""
    real = measured.genre_means()
    moved = {t: {**m, "alpha": poem_alpha} if m["kind"] == "poem" else m for t, m in real.items()}
    monkeypatch.setattr(prose4.measured, "genre_means", lambda: moved)
    _check_fly_story(moved)


def test_the_table_has_no_column_twice():
    """The head's first guess kept is the share where greedy drafting is kept: one column, not two."""
    for m in measured.genre_means().values():
        assert m["greedy"] == pytest.approx(m["compare"]["head"]["greedy"], abs=5e-5)  # stored to 4 places
    html = v.genre_table_html()
    heads = re.findall(r"<th[^>]*>(.*?)</th>", html)
    assert "greedy kept" not in heads
    rows = re.findall(r"<tr data-text=[^>]*>(.*?)</tr>", html)
    for row in rows:
        cells = re.findall(r"<td[^>]*>(.*?)</td>", row)
        assert len(cells) == 4 + 2 * len(v.COMPARED)


def test_the_phone_readout_states_each_sides_run():
    s = BoilerplateVsPoetry(seed=3)
    html_ = v.readout_html(s.runs, ["left", "right"])
    for run in s.runs:
        assert (f"{html.escape(run.text.title)}: <strong>{run.speedup:.2f}×</strong> the big model alone · "
                f"{run.acceptance_rate:.0%} of drafts accepted (the text’s mean: "
                f"{float(run.text.q.mean()):.0%})") in html_
    assert "nothing pasted yet" in v.readout_html([s.runs[0], None], ["left", "Your text"])


def test_the_memory_draft_and_memory_plus_head_are_measured_beside_the_head():
    """Every text has the memory draft's and the hybrid's columns, each cell the asset's number."""
    html = v.genre_table_html()
    assert "<th>memory</th>" in html and "<th>memory + head</th>" in html
    for tid, m in measured.genre_means().items():
        row = re.search(rf'<tr data-text="{tid}">(.*?)</tr>', html).group(1)
        for d in ("memory", "hybrid"):
            cells = re.findall(rf'<td class="n" data-draft="{d}">(.*?)</td>', row)
            kept, tau = m["compare"][d]["greedy"], m["compare"][d]["tau"]
            assert cells == [format(kept, ".0%"), format(tau, ".2f")]
            assert 0 <= kept <= 1 and 1 <= tau <= 5  # k = 4: at most 4 kept and the model's own


def test_the_catch_line_gives_each_drafts_mean_and_where_it_catches_most():
    from specdec_playable.episodes.ep4.words import catch_line
    from specdec_playable.kit.words import in_prose

    means = measured.genre_means()
    line = catch_line()
    for d, said in (("head", "the head's"), ("memory", "the memory draft's"), ("ngram", "the n-gram table's"),
                    ("lookup", "prompt lookup's")):
        mean = sum(m["compare"][d]["greedy"] for m in means.values()) / len(means)
        assert f"{said} first guess is kept at {mean:.0%}" in line or f"{said} at {mean:.0%}" in line
    best = max(means.values(), key=lambda m: m["compare"]["memory"]["greedy"])
    assert f"most on {in_prose(best['kind'])}: these texts are not the model's own replies" in line
