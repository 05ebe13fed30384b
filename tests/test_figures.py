"""State tier: every figure of every page has its anchor (``id="fig-..."``) and, under it, a line
linking to it and to the shipped files it is drawn from. Pages are built as a notebook builds
them (every part at once). No browser."""

from __future__ import annotations

import html
import re

import panel as pn
import pytest
from bokeh.document import Document
from bokeh.models import Plot

from specdec_playable.episodes import EPISODES
from specdec_playable.data import measured
from specdec_playable.episodes.ep4.state import PASTED
from specdec_playable.kit import figures


@pytest.fixture(scope="module", autouse=True)
def _panel():
    pn.extension()


@pytest.mark.parametrize("ep", EPISODES, ids=lambda e: e.slug)
def test_every_figure_has_its_anchor_and_its_line(ep):
    root = ep.page()
    doc = Document()
    doc.add_root(root.get_root(doc))
    plots = [m for m in doc.models if isinstance(m, Plot)]
    ids = [p.html_id for p in plots]
    assert ids == [figures.anchor_id(p.name) for p in plots]
    assert all(i.startswith("fig-") for i in ids) and len(set(ids)) == len(ids)
    lines = " ".join(p.object for p in root.select(pn.pane.HTML)
                     if str(p.object).startswith('<p class="sdp-figline">'))
    for p in plots:
        assert f'href="#{figures.anchor_id(p.name)}"' in lines, p.name
        for kind in figures.SAVE_FORMATS:  # saves for slides, under the figure's anchor
            assert (f'data-sdp-save="{kind}" data-plot="{p.name}" '
                    f'data-file="{figures.anchor_id(p.name)}"') in lines, (p.name, kind)
        for f in figures.FIGURE_DATA.get(p.name, ()):
            assert f'href="./assets/{f}" download' in lines, (p.name, f)


def test_each_line_sits_right_under_its_figure():
    from specdec_playable.episodes import ep1
    root = ep1.page()
    for col in root.select(pn.Column):
        objs = col.objects
        if (len(objs) == 2 and isinstance(objs[0], pn.pane.Bokeh)
                and str(getattr(objs[1], "object", "")).startswith('<p class="sdp-figline">')):
            plot = objs[0].object
            assert isinstance(plot, Plot)
            assert f'#{plot.html_id}"' in objs[1].object


def test_the_figures_with_data_are_on_the_pages():
    names = set()
    for ep in EPISODES:
        doc = Document()
        doc.add_root(ep.page().get_root(doc))
        names |= {m.name for m in doc.models if isinstance(m, Plot)}
    assert set(figures.FIGURE_DATA) <= names


@pytest.mark.parametrize("name, anchor", [("ep5-map", "fig-ep5-map"), ("ep3-hist-fig", "fig-ep3-hist"),
                                          ("ep1-hw-figure", "fig-ep1-hw")])
def test_anchor_ids(name, anchor):
    assert figures.anchor_id(name) == anchor
    assert re.fullmatch(r"fig-[\w-]+", anchor)


def test_episode7s_lanes_get_their_line_when_a_finished_run_draws_them():
    from ep7_fakes import fake_comparison

    from specdec_playable.kit.params import unlocked
    from specdec_playable.episodes.ep7.view import RealTextView

    view = RealTextView()
    with unlocked(view.state):
        view.state.param.update(status="done", comparison=fake_comparison([(4, 4), (4, 1), (0, 0)]))
    view._render()
    line = next(p.object for p in view.lanes.select(pn.pane.HTML)
                if str(p.object).startswith('<p class="sdp-figline">'))
    assert view.player.figure.html_id == "fig-ep7"
    assert 'href="#fig-ep7"' in line and 'data-sdp-save="png" data-plot="ep7-figure"' in line
    assert 'data-sdp-save="svg" data-plot="ep7-figure"' in line


def test_the_page_saves_figures_with_one_listener():
    root = EPISODES[0].page()
    assert len(root.select(figures.FigureSaver)) == 1


def test_episode4s_data_line_says_a_pasted_text_is_in_no_file():
    """Episode 4's figures can show a pasted text, which the shipped file does not hold: the line
    under them says so beside the file's link, and a figure without such a side says nothing."""
    assert set(figures.FIGURE_DATA_NOTES) <= set(figures.FIGURE_DATA)
    line = html.unescape(figures.figure_line_html(["ep4-left-figure", "ep4-right-figure"]))
    files = figures.FIGURE_DATA["ep4-left-figure"]
    note = "(the page's own texts; a text you paste is scored live and kept in no file)"
    assert line.count(note) == 1 and line.index(files[-1].rsplit("/", 1)[-1]) < line.index(note)
    assert measured.load_measured().texts.keys().isdisjoint({"pasted", PASTED})
    assert "kept in no file" not in figures.figure_line_html(["ep8-cost-fig"])
