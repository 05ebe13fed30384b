"""State tier: every chart of every page carries a text alternative computed from what it shows
(``kit.a11y.describe``), and the words follow the chart when its controls move. No browser:
each page is built as a notebook builds it (every part at once)."""

from __future__ import annotations

import re

import panel as pn
import pytest
from bokeh.document import Document
from bokeh.models import Plot

from specdec_playable.episodes import EPISODES
from specdec_playable.episodes.ep3.state import QualityDial
from specdec_playable.episodes.ep8.state import BusyAndTrees
from specdec_playable.episodes.ep1 import view as v1
from specdec_playable.episodes.ep3 import view as v3
from specdec_playable.episodes.ep8 import real_tree as rt8
from specdec_playable.episodes.ep8 import state as st8
from specdec_playable.episodes.ep8 import words as w8

PAGES = [(e.number, e.page) for e in EPISODES]


@pytest.fixture(scope="module", autouse=True)
def _panel():
    pn.extension()


@pytest.mark.parametrize("number,build", PAGES, ids=[f"ep{n}" for n, _ in PAGES])
def test_every_chart_has_words_computed_from_it(number, build):
    root = build()
    doc = Document()
    doc.add_root(root.get_root(doc))
    plots = [m for m in doc.models if isinstance(m, Plot) and m.name]
    if number != 7:  # Episode 7's lanes come with its first finished run
        assert plots, number
    for p in plots:
        attrs = p.html_attributes
        assert attrs.get("role") in ("img", "figure"), p.name
        label = attrs.get("aria-label", "")
        assert len(label) > 40 and re.search(r"\d", label), (p.name, label)
        # A chart with a toolbar stays a figure, so its buttons are reachable inside it.
        tools = p.toolbar.tools if p.toolbar_location is not None else []
        assert attrs["role"] == ("figure" if tools else "img"), p.name


def test_the_words_follow_the_chart():
    s = QualityDial(rng=0, k=16)
    view = v3.QualityDialView(state=s)
    before = view.speedup.figure.html_attributes["aria-label"]
    assert f"Your k = 16: theory {s.theory_speedup:.2f}×" in before
    assert f"at k = {s.best_k} (the star)" in before
    s.k = 3
    after = view.speedup.figure.html_attributes["aria-label"]
    assert after != before and f"Your k = 3: theory {s.theory_speedup:.2f}×" in after
    hist = view.histogram.figure.html_attributes["aria-label"]
    r = s.result
    share = r.accepted_histogram() / r.n_rounds
    assert all(f"{a} accepted: {m:.1%}" in hist for a, m in enumerate(share))


def test_episode_8_words_state_the_batch_and_the_real_tree():
    s = BusyAndTrees(rng=0, batch=256)
    assert f"your batch B = 256: {float(s.here.speedup):.2f}×" in w8.batch_words(s)
    assert f"it stops paying at batch {s.break_even_batch:,}" in w8.batch_words(s)
    step = st8.real_tree_step()
    words = w8.real_tree_words(step)
    assert f"{int(sum(step.accepted))} accepted" in words
    assert f"{int(sum(not j for j in step.judged))} not checked" in words
    # Colour is not the only cue in the picture: every drafted box carries its verdict's mark.
    labels = rt8.tree_nodes(step)["text"]
    for text, a, j in zip(labels[1:-1], step.accepted, step.judged):
        assert text.startswith("✓ " if a else "✗ " if j else "– "), text
    assert labels[-1][0] in "★+"


def test_episode_1_words_are_the_clocks():
    from specdec_playable.episodes.ep1.state import WritingVsChecking

    s = WritingVsChecking(n_tokens=16)
    words = v1.lanes_words(s.comparison)
    c = s.comparison
    assert f"16 passes one after another, {c.sequential_ms:,.0f} ms" in words
    assert f"{c.parallel_ms:,.0f} ms" in words and f"{c.ratio:.1f} times" in words
