"""Browser tier: the site on a phone, under Playwright's device emulation (iPhone 13).

A narrow desktop window does not apply a phone's rule that a page without
``<meta name="viewport">`` is laid out 980 px wide and shrunk; device emulation
(``is_mobile``) does, so these tests use it. Every page sends the tag and lays out at the
phone's 390 px without scrolling sideways; on Episode 4 the code scrolls sideways inside its
box instead of wrapping (Python's indentation is its meaning) and the table of means says it
scrolls; Episode 2's finished run is shown whole, and its list of rounds keeps every mark.
A chart key's swatch sits on the line of its item's first word, and Episode 2's key is one
column. Answer buttons and slider handles are a finger's 44 x 44 px (WCAG 2.5.5), while a
desktop keeps them at 32; a slider is set to q = 0.30 in one drag, and the arrow keys still step it.
"""

from __future__ import annotations

import importlib

import re
import urllib.request

import pytest
from conftest import assert_clean, model_data, reveal_all, wait_data, wait_for_bokeh

from specdec_playable.data import measured
from specdec_playable.episodes import EPISODES, ep2, ep3, ep4, ep5
from specdec_playable.kit.page import VIEWPORT
ep2_page = importlib.import_module("specdec_playable.episodes.ep2.page")
ep4_page = importlib.import_module("specdec_playable.episodes.ep4.page")

pytestmark = pytest.mark.browser

PAGES = ["/", "/summary", "/glossary", "/data", "/guide"] + [f"/{e.slug}" for e in EPISODES]
TAG = re.compile(r'<meta name="viewport" content="([^"]*)">')


def _deep(page, js_selector: str, body: str):
    """Run ``body`` (a function of the first element matching the selector, in any shadow root)."""
    return page.evaluate(f"""() => {{
      const todo = [document];
      while (todo.length) {{
        const root = todo.pop();
        const el = root.querySelector({js_selector!r});
        if (el) return ({body})(el);
        for (const e of root.querySelectorAll('*')) if (e.shadowRoot) todo.push(e.shadowRoot);
      }}
      return null;
    }}""")


@pytest.mark.parametrize("path", PAGES)
def test_every_page_sends_the_viewport_tag_and_fits_a_phone(phone, site, console, artifacts, path):
    with urllib.request.urlopen(site.url + path, timeout=30) as r:
        assert TAG.findall(r.read().decode()) == [VIEWPORT]
    phone.goto(site.url + path)
    wait_for_bokeh(phone, timeout=60_000)
    # Without the tag a phone lays the page out 980 px wide; with it, at the screen's 390 px.
    assert phone.evaluate("window.innerWidth") == 390
    assert phone.evaluate("document.documentElement.scrollWidth") <= 390
    name = path.strip("/") or "index"
    phone.screenshot(path=artifacts / f"phone-{name}.png", full_page=True)
    assert_clean(phone, console)


def test_ep4_code_scrolls_sideways_and_the_means_table_says_it_scrolls(phone, site, console):
    phone.goto(f"{site.url}/{ep4.EPISODE.slug}")
    wait_for_bokeh(phone, timeout=60_000)
    code = _deep(phone, "pre.ep4-tokens.mono", """el => ({
        ws: getComputedStyle(el).whiteSpace, text: el.textContent,
        wide: el.scrollWidth > el.clientWidth, lineHeight: parseFloat(getComputedStyle(el).lineHeight),
        height: el.scrollHeight})""")
    assert code is not None and code["ws"] == "pre" and code["wide"]
    lines = code["text"].split("\n")
    # Every line of the source is one line on screen: the box is as tall as its lines, and an
    # indented line keeps its indentation.
    assert any(ln.startswith("    ") for ln in lines)
    assert code["height"] <= (len(lines) + 1) * code["lineHeight"] + 24
    table = _deep(phone, ".ep4-wrap.sdp-hscroll", "el => el.scrollWidth > el.clientWidth")
    assert table is True, "the means table fits a phone: the cue would be wrong"
    cue = _deep(phone, ".sdp-hscroll-cue", "el => [getComputedStyle(el).display, el.textContent]")
    assert cue[0] == "block" and "sideways" in cue[1]
    assert len(measured.genre_means()) == 6  # the table's rows, one per text
    assert_clean(phone, console)


def _ep2_rest(page):
    """The finished run as the browser shows it: the axis range, and per verify pass or bad
    round inside it whether its label shows."""
    return page.evaluate("""() => {
      const doc = Bokeh.documents[0];
      const fig = doc.get_model_by_name('ep2-figure');
      const more = fig.center.find((r) => r.name === 'ep2-more');
      const d = doc.get_model_by_name('ep2-bars').data;
      const shown = [];
      for (let i = 0; i < d.start.length; i++) {
        if (!['verify', 'bad'].includes(d.status[i])) continue;
        if (d.start[i] >= fig.x_range.start && d.end[i] <= fig.x_range.end)
          shown.push([d.status[i], d.label[i], d.label_alpha[i]]);
      }
      return {start: fig.x_range.start, end: fig.x_range.end, more: more.visible, shown};
    }""")


def _play_to_the_end(page) -> None:
    """The page opens at the run's start (nothing given away before Play); with reduced motion,
    Play jumps straight to the finished run."""
    page.get_by_role("button", name="Play").click()
    page.wait_for_function(
        "() => Bokeh.documents[0].get_model_by_name('ep2-play').label === 'Play'", timeout=20_000)


def test_ep2_finished_run_is_whole_and_its_rounds_keep_their_marks_on_a_phone(phone, site, console,
                                                                              artifacts):
    """The finished lanes fit the whole run on a phone too; a verify pass too narrow there for its
    "+n" hides it, and the list of rounds under the lanes keeps every round's marks, readable."""
    phone.emulate_media(reduced_motion="reduce")
    phone.goto(f"{site.url}/{ep2.EPISODE.slug}")
    wait_for_bokeh(phone, "ep2-bars", timeout=60_000)
    _play_to_the_end(phone)
    phone.wait_for_timeout(500)
    rest = _ep2_rest(phone)
    assert rest["start"] == 0 and rest["end"] == pytest.approx(model_data(phone, "ep2-view")["x_end"][0])
    assert rest["more"] is False  # no "earlier rounds (drag)": nothing is left out
    n_rounds = sum(1 for s, _, _ in rest["shown"] if s == "verify")
    rounds = phone.evaluate("""() => {
      const find = (root) => { const el = root.querySelector('.ep2-rounds');
        if (el) return el;
        for (const e of root.querySelectorAll('*')) if (e.shadowRoot) { const f = find(e.shadowRoot); if (f) return f; }
        return null; };
      const box = find(document);
      return [...box.querySelectorAll('li')].map(li => { const r = li.getBoundingClientRect();
        const sw = li.querySelector('.sw');
        return {hidden: li.hidden, left: r.left, right: r.right, text: li.textContent,
                font: parseFloat(getComputedStyle(sw).fontSize), w: sw.getBoundingClientRect().width,
                h: sw.getBoundingClientRect().height}; });
    }""")
    assert len(rounds) == n_rounds and n_rounds > 0
    for r in rounds:
        assert not r["hidden"] and 0 <= r["left"] and r["right"] <= 390, r
        assert r["font"] >= 12 and r["w"] >= 14 and r["h"] >= 14, r  # a mark you can read
        assert re.search(r"round \d+: \d+ drafts? of \d+ accepted", r["text"]), r
    bad = [r for r in rounds if "a bad round" in r["text"]]
    assert bad and all("bad" in r["text"].rsplit("+", 1)[-1] for r in bad)
    phone.screenshot(path=artifacts / "phone-ep2-lanes.png", full_page=True)
    assert_clean(phone, console)


def test_ep2_finished_run_is_shown_whole_on_a_desktop(page, site, console):
    page.set_viewport_size({"width": 1280, "height": 900})
    page.emulate_media(reduced_motion="reduce")
    page.goto(f"{site.url}/{ep2.EPISODE.slug}")
    wait_for_bokeh(page, "ep2-bars")
    _play_to_the_end(page)
    page.wait_for_timeout(500)
    rest = _ep2_rest(page)
    assert rest["start"] == 0 and rest["more"] is False
    assert all(alpha == 1 for _, _, alpha in rest["shown"])
    assert_clean(page, console)


#: Each key item on the page (a chart key's item, Episode 2's key's item): its box, its first
#: mark's box and the box of the first word after the mark, as drawn.
_KEY_ITEMS = """() => {
  const out = [];
  const box = (r) => ({left: r.left, right: r.right, top: r.top, bottom: r.bottom});
  const walk = (root) => {
    for (const it of root.querySelectorAll('.sdp-key .it, .ep2-legend span.i')) {
      const mark = it.querySelector('.sw, .glyph');
      const texts = document.createTreeWalker(it, NodeFilter.SHOW_TEXT);
      let node = null;
      while (texts.nextNode()) {
        const n = texts.currentNode;
        if (!mark.contains(n) && n.textContent.trim()) { node = n; break; }
      }
      const start = node.textContent.search(/\\S/);
      const range = document.createRange();
      range.setStart(node, start);
      range.setEnd(node, start + node.textContent.slice(start).search(/\\s|$/));
      out.push({text: it.textContent.trim().slice(0, 40), item: box(it.getBoundingClientRect()),
                mark: box(mark.getBoundingClientRect()), word: box(range.getClientRects()[0])});
    }
    for (const el of root.querySelectorAll('*')) if (el.shadowRoot) walk(el.shadowRoot);
  };
  walk(document);
  return out;
}"""


@pytest.mark.parametrize("episode", [ep2, ep3, ep5], ids=["ep2", "ep3", "ep5"])
def test_a_key_swatch_sits_on_the_line_of_its_first_word_on_a_phone(phone, site, console, artifacts,
                                                                   episode):
    phone.goto(f"{site.url}/{episode.EPISODE.slug}")
    wait_for_bokeh(phone, timeout=60_000)
    items = phone.evaluate(_KEY_ITEMS)
    assert len(items) >= 3
    for it in items:
        mark, word = it["mark"], it["word"]
        middle = (mark["top"] + mark["bottom"]) / 2
        # On the word's line, just before it.
        assert word["top"] <= middle <= word["bottom"], it
        assert mark["right"] <= word["left"] + 1 and word["left"] - mark["right"] < 16, it
        assert 0 <= it["item"]["left"] and it["item"]["right"] <= 390, it
    name = episode.EPISODE.slug.split("_")[0]
    phone.locator(".sdp-key, .ep2-legend").first.screenshot(path=artifacts / f"phone-{name}-key.png")
    assert_clean(phone, console)


def test_ep2_key_is_one_column_on_a_phone(phone, site, console):
    """One item a line, every item starting at the key's left edge: no item beside another."""
    phone.goto(f"{site.url}/{ep2.EPISODE.slug}")
    wait_for_bokeh(phone, "ep2-bars", timeout=60_000)
    items = [it["item"] for it in phone.evaluate(_KEY_ITEMS)]
    assert len(items) == 8
    assert max(it["left"] for it in items) - min(it["left"] for it in items) <= 1, items
    assert all(b["top"] >= a["bottom"] - 1 for a, b in zip(items, items[1:])), items
    assert_clean(phone, console)


#: The rendered boxes of the slider handles and of the buttons named in the argument.
_BOXES = """names => {
  const out = {handles: [], buttons: []};
  const walk = (root) => {
    for (const el of root.querySelectorAll('.noUi-handle, button')) {
      const r = el.getBoundingClientRect();
      if (r.width === 0) continue;
      if (el.matches('.noUi-handle')) out.handles.push({w: r.width, h: r.height});
      else if (names.includes(el.textContent.trim()))
        out.buttons.push({name: el.textContent.trim(), w: r.width, h: r.height});
    }
    for (const el of root.querySelectorAll('*')) if (el.shadowRoot) walk(el.shadowRoot);
  };
  walk(document);
  return out;
}"""
#: A finger's target (WCAG 2.2, success criterion 2.5.5, target size, enhanced), in CSS px.
FINGER_PX = 44


def _wait_for_buttons(page, names: list[str]) -> None:
    """Wait until every named answer button is drawn: the questions are built when the visitor
    scrolls near them, and drawn a moment after the server has built them."""
    reveal_all(page)
    page.wait_for_function(
        f"names => new Set(({_BOXES})(names).buttons.map(b => b.name)).size === names.length",
        arg=names, timeout=30_000)


def _choices(episode) -> list[str]:
    return sorted({c for q in episode.EPISODE.questions for c in q.choices})


@pytest.mark.parametrize("episode", [ep3, ep5], ids=["ep3", "ep5"])
def test_answer_buttons_and_slider_handles_are_44px_on_a_phone_and_32px_on_a_desktop(
        phone, page, site, console, episode):
    url, names = f"{site.url}/{episode.EPISODE.slug}", _choices(episode)
    phone.goto(url)
    wait_for_bokeh(phone, timeout=60_000)
    _wait_for_buttons(phone, names)
    got = phone.evaluate(_BOXES, names)
    assert len(got["handles"]) >= 2 and {b["name"] for b in got["buttons"]} == set(names), got
    small = [b for b in got["handles"] + got["buttons"]
             if b["w"] < FINGER_PX - 0.01 or b["h"] < FINGER_PX - 0.01]
    assert small == [], f"targets under {FINGER_PX} px on a phone: {small}"
    assert phone.evaluate("document.documentElement.scrollWidth") <= 390
    # A desktop keeps its look: 32 px handles and buttons.
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(url)
    wait_for_bokeh(page, timeout=60_000)
    _wait_for_buttons(page, names)
    got = page.evaluate(_BOXES, names)
    assert {(b["w"], b["h"]) for b in got["handles"]} == {(32, 32)}
    assert got["buttons"] and all(b["h"] == pytest.approx(32, abs=0.5) for b in got["buttons"]), got
    assert_clean(phone, console)


def test_q_is_set_to_0_30_in_one_drag_on_a_phone(phone, site, console, artifacts):
    """One drag of the handle from its centre to the track's point for q = 0.30 sets 0.30; the
    arrow keys still step it by 0.01 (the handle's size does not change its steps)."""
    phone.goto(f"{site.url}/{ep5.EPISODE.slug}")
    wait_for_bokeh(phone, "ep5-you", timeout=60_000)
    handle = phone.locator(".noUi-handle").first
    handle.scroll_into_view_if_needed()
    lo, hi = ep5.EPISODE.state.param.q.bounds
    track = phone.locator(".noUi-base").first.bounding_box()
    grip = handle.bounding_box()
    x0, y0 = grip["x"] + grip["width"] / 2, grip["y"] + grip["height"] / 2
    x1 = track["x"] + track["width"] * (0.30 - lo) / (hi - lo)
    phone.mouse.move(x0, y0)
    phone.mouse.down()
    phone.mouse.move(x1, y0, steps=12)
    phone.mouse.up()
    assert handle.get_attribute("aria-valuetext") == "0.30"
    wait_data(phone, "ep5-you", "Math.abs(d.q[0] - 0.30) < 1e-9")
    handle.focus()
    handle.press("ArrowRight")
    assert handle.get_attribute("aria-valuetext") == "0.31"
    handle.press("ArrowLeft")
    assert handle.get_attribute("aria-valuetext") == "0.30"
    wait_data(phone, "ep5-you", "Math.abs(d.q[0] - 0.30) < 1e-9")
    phone.screenshot(path=artifacts / "phone-ep5-q-0.30.png")
    assert_clean(phone, console)
