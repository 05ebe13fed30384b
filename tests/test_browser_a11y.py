"""Browser tier: accessibility and layout of every page.

- axe-core (bundled by axe-playwright-python) finds no serious or critical violation;
- keyboard only: Tab reaches every control, in reading order (top to bottom);
- Enter/Space press buttons, arrows move sliders;
- prefers-reduced-motion: Play jumps straight to the end state;
- an 800 x 600 iframe and a 390 px phone need no horizontal scrolling.
"""

from __future__ import annotations

import pytest
from axe_playwright_python.sync_playwright import Axe
from conftest import model_data, wait_for_bokeh

from specdec_playable.episodes import EPISODES

pytestmark = pytest.mark.browser

PATHS = ["/", *(f"/{e.slug}" for e in EPISODES)]

# Every focusable control on a page, through open shadow roots, in document order.
_CONTROLS = """() => {
  const out = [];
  const sel = '.noUi-handle, button, select, input, textarea';
  const walk = (root) => {
    for (const el of root.querySelectorAll('*')) {
      if (el.matches(sel)) {
        const r = el.getBoundingClientRect();
        const hidden = r.width === 0 || r.height === 0 || el.disabled || el.tabIndex < 0;
        if (!hidden) out.push(el);
      }
      if (el.shadowRoot) walk(el.shadowRoot);
    }
  };
  walk(document);
  window.__sdp_controls = out;
  return out.length;
}"""

_FOCUSED_INDEX = """() => {
  let a = document.activeElement;
  while (a && a.shadowRoot && a.shadowRoot.activeElement) a = a.shadowRoot.activeElement;
  return [window.__sdp_controls.indexOf(a), a ? Math.round(a.getBoundingClientRect().top + window.scrollY) : -1];
}"""


def _open(page, path, site):
    page.goto(site.url + path)
    wait_for_bokeh(page)
    page.wait_for_timeout(1500)  # let late widgets render and get their names


@pytest.mark.parametrize("path", PATHS)
def test_axe_finds_no_serious_or_critical_violation(page, site, path):
    _open(page, path, site)
    violations = Axe().run(page).response["violations"]
    bad = [(v["impact"], v["id"], v["help"], [n["html"][:120] for n in v["nodes"][:3]])
           for v in violations if v["impact"] in ("serious", "critical")]
    assert bad == []


@pytest.mark.parametrize("path", PATHS[1:])
def test_tab_reaches_every_control_in_reading_order(page, site, path):
    _open(page, path, site)
    n = page.evaluate(_CONTROLS)
    assert n > 0
    page.locator("body").click(position={"x": 1, "y": 1})
    seen, tops = [], []
    for _ in range(4 * n + 40):
        page.keyboard.press("Tab")
        index, top = page.evaluate(_FOCUSED_INDEX)
        if index >= 0 and index not in seen:
            seen.append(index)
            tops.append(top)
        if len(seen) == n:
            break
    assert sorted(seen) == list(range(n)), f"never reached by Tab: {sorted(set(range(n)) - set(seen))}"
    # Reading order: focus never jumps back up the page by more than one row of controls.
    for a, b in zip(tops, tops[1:]):
        assert b >= a - 60, f"focus moved up the page from y={a} to y={b}"


def test_keyboard_plays_and_moves_sliders_in_episode1(page, site):
    _open(page, "/ep1_writing_vs_checking", site)
    page.bring_to_front()
    handle = page.locator(".noUi-handle").first
    handle.focus()
    handle.press("ArrowRight")
    page.wait_for_function(
        "() => Bokeh.documents[0].get_model_by_name('ep1-clocks').data.lane_end[0] === 4200")
    play = page.get_by_role("button", name="Play")
    play.focus()
    page.keyboard.press("Enter")
    page.wait_for_function("() => Bokeh.documents[0].get_model_by_name('ep1-play').label === 'Pause'")
    # The relabelled button is re-rendered; focus must come back to it for the keyboard to go on.
    page.wait_for_function("""() => {
        let a = document.activeElement;
        while (a && a.shadowRoot && a.shadowRoot.activeElement) a = a.shadowRoot.activeElement;
        return a && a.tagName === 'BUTTON' && a.textContent.trim() === 'Pause';
    }""", timeout=2000)
    # Pause once the clock has moved: a loaded machine may not have drawn a frame yet.
    page.wait_for_function("() => Bokeh.documents[0].get_model_by_name('ep1-clocks').data.x[0] > 0")
    page.keyboard.press("Space")  # the same button, now Pause
    page.wait_for_function("() => Bokeh.documents[0].get_model_by_name('ep1-play').label === 'Play'")
    paused = model_data(page, "ep1-clocks")["x"][0]
    assert 0 < paused < 4200


def test_reduced_motion_jumps_to_the_end(browser, site):
    context = browser.new_context(reduced_motion="reduce")
    page = context.new_page()
    try:
        _open(page, "/ep1_writing_vs_checking", site)
        page.get_by_role("button", name="Restart").click()
        assert model_data(page, "ep1-clocks")["x"] == [0, 0]
        page.get_by_role("button", name="Play").click()
        # No animation: the end state is there at once, and Play never turned into Pause.
        assert model_data(page, "ep1-clocks")["x"] == [3600, 600]
        assert page.evaluate("() => Bokeh.documents[0].get_model_by_name('ep1-play').label") == "Play"
    finally:
        context.close()


@pytest.mark.parametrize("width, height", [(390, 844), (800, 600)], ids=["phone-390", "iframe-800x600"])
@pytest.mark.parametrize("path", PATHS)
def test_no_horizontal_scrolling(browser, site, artifacts, path, width, height):
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    try:
        _open(page, path, site)
        scroll, client = page.evaluate(
            "() => [document.scrollingElement.scrollWidth, document.scrollingElement.clientWidth]")
        name = path.strip("/") or "index"
        page.screenshot(path=artifacts / f"{name}-{width}x{height}.png", full_page=True)
        assert scroll <= client, f"{path} is {scroll} px wide in a {client} px viewport"
    finally:
        context.close()
