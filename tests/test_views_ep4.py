"""Episode 4's measured parts as plain functions: the histogram's rows, the sentence about the
genres (written from the measured means), the paste's progress line."""

from __future__ import annotations

import re

import numpy as np
import pytest

from services import service
from specdec_playable.serve import jobs
from specdec_playable.data import measured
from specdec_playable.state.ep4 import BoilerplateVsPoetry
from specdec_playable.prose import ep4 as prose4
from specdec_playable.views import ep4 as v


def test_histogram_rows_are_each_texts_shares():
    items = v.histogram_items()
    assert [n for n, _ in items] == [prose4.short_name(t.kind) for t in measured.load_measured().texts.values()]
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
    from specdec_playable.state import unlocked

    return unlocked(s)


def test_alpha_classes_cover_the_unit_interval():
    assert [v.token_alpha_class(a) for a in (0.0, 0.19, 0.2, 0.79, 0.8, 1.0)] == \
        ["m0", "m0", "m1", "m3", "m4", "m4"]
