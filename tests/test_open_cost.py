"""What opening a page costs the server: each page's document is checked once here instead of
per session, the results every session shares are shared read-only, and a page's views are
built after its first paint (a client that never reports a painted page costs only the shell).

No browser: pages are built as a notebook builds them, and served to a websocket client that
pulls the document without reporting it rendered. (The browser tests open every page fully.)
"""

from __future__ import annotations

import html
import socket
import threading
import time

import numpy as np
import panel as pn
import pytest
from bokeh.core.validation.check import check_integrity
from bokeh.document import Document
from bokeh.models import GlyphRenderer

from specdec_playable.app import site
from specdec_playable.kit.heights import reserved
from specdec_playable.sim import adaptive, theory
from specdec_playable.data import measured
from specdec_playable.runtime import shared
from specdec_playable.episodes import EPISODES
from specdec_playable.episodes.ep5 import state as state5
from specdec_playable.episodes.ep6 import state as state6
from specdec_playable.kit import deferred
from specdec_playable.episodes.ep7.view import RealTextView

PAGES = [("index", site.index_page)] + [(e.slug, e.page) for e in EPISODES]


@pytest.fixture(scope="module", autouse=True)
def _panel():
    pn.extension()


@pytest.mark.parametrize("slug, build", PAGES, ids=[p[0] for p in PAGES])
def test_every_page_document_passes_bokehs_checks(slug, build):
    # The server skips Bokeh's per-session validation (site.prepare_process); this is where it runs.
    doc = Document()
    doc.add_root(build().get_root(doc))
    issues = check_integrity(doc.models)
    assert issues.error == [] and issues.warning == [], (issues.error, issues.warning)


@pytest.mark.parametrize("slug, build", PAGES[1:], ids=[p[0] for p in PAGES[1:]])
def test_no_renderer_carries_glyph_copies_nothing_shows(slug, build):
    root = build()
    if slug == "ep7_real_models_real_text":
        # Episode 7 draws its lanes once a run has finished; its view builds them as a
        # finished run does.
        view = RealTextView()
        view._build_lanes()
        root = pn.Column(root, view)
    doc = Document()
    doc.add_root(root.get_root(doc))
    renderers = [m for m in doc.models if isinstance(m, GlyphRenderer)]
    assert renderers
    for r in renderers:
        assert r.nonselection_glyph == "auto" and r.muted_glyph == "auto", r


def test_the_race_is_shared_read_only_and_keyed_by_its_settings():
    a, b = state6.FinePrint(rng=1), state6.FinePrint(rng=2)
    assert a.runs is b.runs  # one race for every session at the same settings
    assert a.stream is b.stream
    for run in a.runs:
        for name in ("start", "k", "wall", "cost", "estimate"):
            assert not getattr(run, name).flags.writeable
        with pytest.raises(ValueError):
            run.wall[0] = 0.0
    fresh = adaptive.race(measured.measured_stream(state6.RACE_TEXTS, state6.REPEATS, draft="ngram"),
                          adaptive.default_policies(a.fixed_k), a.c, rng=a.race_seed)
    for got, want in zip(a.runs, fresh):
        np.testing.assert_array_equal(got.wall, want.wall)
        assert got.output == want.output
    b.c = 0.45
    assert b.runs is not a.runs and b.runs[0].wall[-1] != a.runs[0].wall[-1]
    b.c = a.c
    assert b.runs is a.runs  # back at the same key: the same shared result
    assert state6.race_runs.info().maxsize == 256


def test_the_break_even_table_is_shared_and_read_only():
    s1, s2 = state5.BreakEvenMap(), state5.BreakEvenMap()
    t = state5.break_even_table(s1.c)
    assert t is state5.break_even_table(s2.c)
    assert not t.flags.writeable
    np.testing.assert_array_equal(t, theory.break_even_q(np.arange(1, state5.K_SLIDER_MAX + 1), s1.c))
    s2.c = 0.3
    assert s2.break_even(4) == theory.break_even_q(4, 0.3) != s1.break_even(4)


def test_every_shared_function_is_bounded_and_its_primes_are_the_pages_defaults():
    for sf in shared.registry():
        assert 1 <= sf.maxsize <= 4096, sf.__name__
    shared.warm()
    key = state6.race_runs.key(state6.REPEATS, state6.FinePrint.param.fixed_k.default,
                               state6.FinePrint.param.c.default,
                               state6.FinePrint.param.race_seed.default)
    assert key in state6.race_runs._results
    assert state5.break_even_table.key(state5.BreakEvenMap.param.c.default) in \
        state5.break_even_table._results


@pytest.mark.parametrize("slug, build", PAGES[1:], ids=[p[0] for p in PAGES[1:]])
def test_every_part_of_every_page_builds(slug, build, caplog):
    # Outside a session every part is built at once; a part that fails shows a notice instead
    # of breaking the page, so this is where a broken part must show up.
    with caplog.at_level("ERROR", logger="specdec_playable"):
        doc = Document()
        doc.add_root(build().get_root(doc))
    assert [r.getMessage() for r in caplog.records] == []
    texts = [str(getattr(m, "text", "") or "") for m in doc.models]
    assert not any("could not be built" in t for t in texts)
    slots = [m for m in doc.models if deferred.NEAR_CLASS in (getattr(m, "css_classes", None) or [])]
    for slot in slots:
        assert slot.children and slot.min_height is None, slot.name


def test_outside_a_session_a_part_built_when_near_is_built_at_once():
    slot = deferred.when_near(lambda: pn.pane.Markdown("part"), name="ep1-hw-slot")
    assert [o.object for o in slot.objects] == ["part"]
    assert slot.min_height is None and deferred.NEAR_CLASS in slot.css_classes


def test_outside_a_session_a_deferred_part_is_built_at_once():
    slot = deferred.after_first_paint(lambda: pn.pane.Markdown("part"), name="ep1-view-slot")
    assert [o.object for o in slot.objects] == ["part"]
    assert slot.min_height is None


def test_a_part_that_fails_to_build_leaves_a_notice_and_a_log(caplog):
    def broken():
        raise RuntimeError("boom")

    with caplog.at_level("ERROR", logger="specdec_playable"):
        slot = deferred.after_first_paint(broken, name="ep1-view-slot")
    text = slot.objects[0].object
    assert "could not be built" in text and "boom" not in text and "Traceback" not in text
    assert any("boom" in (r.exc_text or "") or r.exc_info for r in caplog.records)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_session_gets_its_views_only_once_its_page_is_painted():
    # bokeh.client pulls the document but never reports it rendered (no document_ready), like
    # a crawler: the session holds the page's words and an empty, reserved slot per view. A part
    # built when the visitor scrolls near it holds only its "loading" mark until then (the
    # browser tests scroll to it: tests/test_browser_site.py).
    from bokeh.client import pull_session

    from specdec_playable.episodes import ep1, ep3

    port = _free_port()
    server = site.serve(port=port, threaded=True)
    try:
        deadline = time.monotonic() + 30
        while server.server_id not in pn.state._servers:
            assert time.monotonic() < deadline, "server did not start"
            time.sleep(0.1)
        def check(mod, slots) -> None:
            session = pull_session(url=f"http://127.0.0.1:{port}/{mod.EPISODE.slug}")
            try:
                doc = session.document
                for name, height in slots.items():
                    slot = doc.get_model_by_name(name)
                    assert slot is not None, name
                    if deferred.NEAR_CLASS in slot.css_classes:
                        [mark] = slot.children
                        assert mark.data.near is False and mark.data.ahead == deferred.AHEAD_SCREENS
                    else:
                        assert list(slot.children) == [], name
                    assert slot.min_height == height
                texts = [getattr(m, "text", "") or "" for m in doc.models]
                assert any(html.escape(mod.EPISODE.title) in t for t in texts)  # the page's words are there
                # The shell alone: no view and none of the "Check yourself" questions at the
                # page's end, whose buttons are built when the visitor scrolls near them; the
                # views add a hundred models and more, the questions a dozen and more.
                assert len(doc.models) < 35, len(doc.models)
                assert not [m for m in doc.models if type(m).__name__ == "Button"]
            finally:
                session.close()

        for mod, slots in ((ep3, {"ep3-view-slot": reserved("ep3-view-slot"),
                                  "ep3-exercises-slot": reserved("ep3-exercises-slot")}),
                           (ep1, {"ep1-view-slot": reserved("ep1-view-slot"), "ep1-hw-slot": reserved("ep1-hw-slot"),
                                  "ep1-exercises-slot": reserved("ep1-exercises-slot")})):
            # bokeh.client runs its own event loop; a thread of its own keeps it apart from
            # any loop this test process already runs (the browser tests' Playwright loop).
            errors: list[BaseException] = []

            def run(mod=mod, slots=slots) -> None:
                try:
                    check(mod, slots)
                except BaseException as exc:  # noqa: BLE001 - re-raised in the test's thread
                    errors.append(exc)

            t = threading.Thread(target=run)
            t.start()
            t.join(60)
            assert not t.is_alive(), f"pulling {mod.EPISODE.slug} did not finish in 60 s"
            if errors:
                raise errors[0]
    finally:
        server.stop()
        server.join(10)
