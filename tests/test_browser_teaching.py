"""Browser tier: what a class is taught from. Answers count (the first try kept, the question
locked, the score kept in the browser across a reload and added up on the summary, and
forgotten on request), the feedback is readable (WCAG AA contrast) and nothing covers the other
answers on a phone; the teacher's guide is served, accessible and links into the docs; every
chart saves as PNG and SVG; a pasted Episode 4 text travels in the link; the short path's next
links; no console error on Episode 7 while a run plays."""

from __future__ import annotations

import importlib

import json
import re
import urllib.parse

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError
from conftest import assert_clean, page_text, wait_for_bokeh, wait_for_text

from specdec_playable.episodes import EPISODES, ep1, ep3, ep4, ep5
from specdec_playable.kit.exercises import questions_of
from specdec_playable.kit.site import course, guide
ep1_page = importlib.import_module("specdec_playable.episodes.ep1.page")
ep3_page = importlib.import_module("specdec_playable.episodes.ep3.page")
ep4_page = importlib.import_module("specdec_playable.episodes.ep4.page")
ep5_page = importlib.import_module("specdec_playable.episodes.ep5.page")

pytestmark = pytest.mark.browser

AA = 4.5
STORE = "sdp-answers"

#: The first element matching a selector anywhere in the page (shadow roots included), passed to
#: a function body.
_DEEP = """([sel, all]) => {
  const out = [];
  const todo = [document];
  while (todo.length) {
    const root = todo.pop();
    out.push(...root.querySelectorAll(sel));
    for (const e of root.querySelectorAll('*')) if (e.shadowRoot) todo.push(e.shadowRoot);
  }
  return all ? out : out[0] || null;
}"""

#: Contrast of an element's text against the first opaque background behind it (WCAG formula).
_CONTRAST = """(el) => {
  const rgb = (c) => c.match(/[\\d.]+/g).map(Number);
  const lum = ([r, g, b]) => {
    const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
    return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
  };
  let bg = null;
  for (let n = el; n; n = n.parentElement || (n.getRootNode() && n.getRootNode().host)) {
    const c = getComputedStyle(n).backgroundColor;
    const v = rgb(c);
    if (v.length === 3 || v[3] > 0.99) { bg = v.slice(0, 3); break; }
  }
  bg = bg || [255, 255, 255];
  const fg = rgb(getComputedStyle(el).color).slice(0, 3);
  const [hi, lo] = [lum(fg), lum(bg)].sort((a, b) => b - a);
  return (hi + 0.05) / (lo + 0.05);
}"""


def deep(page, selector: str, all_: bool = False):
    return page.evaluate_handle(_DEEP, [selector, all_])


def contrast(page, selector: str) -> float:
    return page.evaluate(f"([sel]) => ({_CONTRAST})(({_DEEP})([sel, false]))", [selector])


def stored(page) -> dict:
    text = page.evaluate(f"() => localStorage.getItem('{STORE}')")
    return json.loads(text) if text else {}


def choice(page, text: str):
    return page.locator("button", has_text=re.compile(rf"^\s*{re.escape(text)}\s*$")).first


def test_answers_count_lock_survive_a_reload_and_add_up_on_the_summary(page, site, console, artifacts):
    page.goto(f"{site.url}/{ep1.EPISODE.slug}")
    wait_for_bokeh(page)
    q1, q2 = ep1.EPISODE.questions
    keys = [k for k, _ in questions_of(ep1.EPISODE.questions)]
    wrong = next(c for c in q1.choices if c != "The same: one pass")
    b = choice(page, wrong)
    b.scroll_into_view_if_needed()
    b.click()
    wait_for_text(page, "✗ Not quite:")
    # The feedback is readable on its box, the question is locked, the first try is kept.
    assert contrast(page, ".sdp-ex-answer .no") >= AA
    assert contrast(page, ".sdp-ex-answer") >= AA
    for c in q1.choices:
        assert choice(page, c).is_disabled()
    assert choice(page, q2.choices[0]).is_enabled()
    page.wait_for_function(f"() => (localStorage.getItem('{STORE}') || '').includes('{keys[0]}')")
    assert stored(page)["pages"]["ep1"] == {keys[0]: [q1.choices.index(wrong), 0]}
    choice(page, "The same: one pass").click(force=True)  # a disabled button sends nothing
    page.wait_for_timeout(500)
    assert "you said " + wrong in page_text(page)
    assert stored(page)["pages"]["ep1"] == {keys[0]: [q1.choices.index(wrong), 0]}
    right = choice(page, "6,000 ms")
    right.click()
    wait_for_text(page, "✓ Right: 6,000 ms.")
    assert contrast(page, ".sdp-ex-answer .ok") >= AA
    wait_for_text(page, "Your score here: 1 of 2 answered right at the first try.")
    assert contrast(page, ".sdp-ex-score") >= AA
    page.screenshot(path=artifacts / "answers-ep1.png", full_page=True)

    page.reload()
    wait_for_bokeh(page)
    wait_for_text(page, "Your score here: 1 of 2 answered right at the first try.")
    text = page_text(page)
    assert "you said " + wrong in text and "You answered this earlier in this browser" in text
    assert all(choice(page, c).is_disabled() for c in q1.choices + q2.choices)
    # "Show this setting" moves the controls there again and says why; the record stays.
    page.get_by_role("button", name="Show this setting").first.click()
    wait_for_text(page, "Checking 16 tokens takes")
    assert stored(page)["pages"]["ep1"][keys[0]] == [q1.choices.index(wrong), 0]

    page.goto(f"{site.url}/summary")
    wait_for_bokeh(page, "summary")
    total = sum(len(e.questions) for e in EPISODES)
    wait_for_text(page, f"The series so far: 1 of 2 answered right at the first try; {total - 2} "
                        f"of the {total} questions still open.")
    assert "1 of 2 right at the first try" in page_text(page)
    page.screenshot(path=artifacts / "answers-summary.png", full_page=True)
    page.get_by_role("button", name="Forget my answers in this browser").click()
    wait_for_text(page, "No answers kept in this browser yet")
    page.wait_for_function(f"() => localStorage.getItem('{STORE}') === null")
    page.goto(f"{site.url}/{ep1.EPISODE.slug}")
    wait_for_bokeh(page)
    page.wait_for_timeout(800)
    assert choice(page, q1.choices[0]).is_enabled() and "Your score here" not in page_text(page)
    assert_clean(page, console)


def test_untrusted_storage_is_ignored(page, site, console):
    page.goto(f"{site.url}/{ep3.EPISODE.slug}")
    wait_for_bokeh(page)
    keys = [k for k, _ in questions_of(ep3.EPISODE.questions)]
    page.evaluate(f"""() => localStorage.setItem('{STORE}', JSON.stringify({{v: 1, pages: {{
        ep3: {{'{keys[0]}': [99, 0], '<img src=x onerror=window.__pwned=1>': [0, 0]}},
        '__proto__': {{}}}}}}))""")
    page.reload()
    wait_for_bokeh(page)
    page.wait_for_timeout(800)
    text = page_text(page)
    assert "Your score here" not in text and "earlier in this browser" not in text
    assert all(choice(page, c).is_enabled() for c in ep3.EPISODE.questions[0].choices)
    assert page.evaluate("() => window.__pwned") is None
    assert_clean(page, console)


def test_on_a_phone_the_answer_stays_on_screen_and_nothing_covers_the_other_choices(phone, site, console,
                                                                                  artifacts):
    phone.goto(f"{site.url}/{ep5.EPISODE.slug}")
    wait_for_bokeh(phone, timeout=60_000)
    ex = ep5.EPISODE.questions[0]
    first = choice(phone, ex.choices[0])
    first.scroll_into_view_if_needed()
    first.tap()
    wait_for_text(phone, "Not quite:")  # the first choice is not the nearest break-even
    phone.wait_for_timeout(600)
    # No tooltip is left over the other answers (none is drawn for the choices at all).
    tips = phone.evaluate(f"""() => ({_DEEP})(['[role=tooltip], .bk-tooltip, .bk-Tooltip', true])
        .filter(el => {{ const r = el.getBoundingClientRect(); return r.width > 0 && r.height > 0; }}).length""")
    assert tips == 0
    box = phone.evaluate(f"""() => {{ const el = ({_DEEP})(['.sdp-ex-answer', false]);
        const r = el.getBoundingClientRect(); return [r.left, r.right]; }}""")
    assert box[0] >= 0 and box[1] <= 390
    for c in ex.choices:
        r = choice(phone, c).bounding_box()
        assert r["x"] >= 0 and r["x"] + r["width"] <= 390 and r["height"] >= 24 and r["width"] >= 24
    assert contrast(phone, ".sdp-ex-answer .no, .sdp-ex-answer .ok") >= AA
    phone.screenshot(path=artifacts / "answers-phone-ep5.png", full_page=False)
    assert_clean(phone, console)


#: The smallest visible control (width, height, what it is) on the page.
_SMALLEST = f"""() => {{
  const els = ({_DEEP})(['a, button, input, select, textarea, .noUi-handle', true]);
  let best = null;
  for (const el of els) {{
    const r = el.getBoundingClientRect();
    if (r.width === 0 || r.height === 0) continue;
    const area = r.width * r.height;
    if (!best || area < best[0]) best = [area, r.width, r.height, el.tagName + ' ' + el.textContent.trim().slice(0, 30)];
  }}
  return best;
}}"""


@pytest.mark.parametrize("where", ["desktop", "phone"])
def test_the_guide_is_served_accessible_and_links_into_the_docs(page, phone, site, console, artifacts,
                                                                where):
    p = page if where == "desktop" else phone
    p.goto(f"{site.url}/guide")
    wait_for_bokeh(p, "guide")
    text = page_text(p)
    for minutes in (course.CLASS_MINUTES, course.LONG_CLASS_MINUTES):
        assert f"A {minutes}-minute class" in text
    for e in EPISODES:
        assert f"Episode {e.number}:" in text
    violations = Axe().run(p).response["violations"]
    bad = [(v["impact"], v["id"], [n["html"][:100] for n in v["nodes"][:3]])
           for v in violations if v["impact"] in ("serious", "critical")]
    assert bad == []
    area, w, h, what = p.evaluate(_SMALLEST)
    (artifacts / f"guide-smallest-{where}.txt").write_text(f"{w:.1f} x {h:.1f} px: {what}\n")
    if where == "phone":
        assert p.evaluate("document.documentElement.scrollWidth") <= 390
    p.screenshot(path=artifacts / f"guide-{where}.png", full_page=True)
    if where == "desktop":
        with p.expect_navigation():
            p.locator(f'a[href="{guide.SERVING_HREF}"]').first.click()
        assert p.url.endswith("/docs/serving.md#serving-a-class")
        assert p.evaluate("() => document.getElementById('serving-a-class') !== null")
        assert p.evaluate("() => document.getElementById('serving-a-class').getBoundingClientRect().top") < 200
    assert_clean(p, console)


def test_every_chart_saves_as_png_and_svg(browser, site, artifacts):
    context = browser.new_context(viewport={"width": 1280, "height": 800}, accept_downloads=True)
    page = context.new_page()
    errors = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    for e in EPISODES:
        page.goto(f"{site.url}/{e.slug}")
        wait_for_bokeh(page)
        plots = page.evaluate("""() => [...Bokeh.documents[0].all_models]
            .filter(m => m.html_id && m.html_id.startsWith('fig-') && m.name).map(m => m.name).sort()""")
        # The page's listener adds the buttons once each figure has drawn: wait for them.
        query = f"""() => ({_DEEP})(['button.sdp-save', true])
            .map(b => b.dataset.plot + ' ' + b.dataset.sdpSave).sort()"""
        try:
            page.wait_for_function(f"() => ({query})().length >= {2 * len(plots)}", timeout=15_000)
        except PlaywrightTimeoutError:
            pass  # the assertion below says which buttons are missing
        buttons = page.evaluate(query)
        assert buttons == sorted(f"{n} {k}" for n in plots for k in ("png", "svg")), e.slug
        if e.number == 7:
            continue  # its lanes appear with a finished run (tests/test_figures.py builds them)
        assert plots, e.slug
        name = plots[0]
        for kind, magic in (("png", b"\x89PNG"), ("svg", b"<svg")):
            btn = page.locator(f'button.sdp-save[data-plot="{name}"][data-sdp-save="{kind}"]')
            btn.scroll_into_view_if_needed()
            with page.expect_download(timeout=30_000) as dl:
                btn.click()
            assert dl.value.suggested_filename == f"fig-{name.removesuffix('-figure').removesuffix('-fig')}.{kind}"
            data = open(dl.value.path(), "rb").read()
            assert data.startswith(magic) and len(data) > 2000, (e.slug, kind)
    assert errors == []
    context.close()


def test_a_pasted_text_travels_in_the_link(page, site, console, artifacts):
    text = "def area(r):\n    return 3.14159 * r * r  # <b>not bold</b>"
    query = urllib.parse.urlencode({"right": "pasted", "paste": text})
    page.goto(f"{site.url}/{ep4.EPISODE.slug}?{query}")
    wait_for_bokeh(page, "ep4-bars-right")
    page.locator("textarea").wait_for()
    assert page.locator("textarea").input_value() == text
    said = page_text(page)
    assert "Your text from the link is in the box under the two texts: press Score and run my text" in said
    assert "Run my text." not in said.replace("Score and run my text", "")
    assert "Some settings in the link were changed" not in said
    page.screenshot(path=artifacts / "ep4-paste-link.png", full_page=True)
    # Too long for the box: left out of the link, and said so.
    page.goto(f"{site.url}/{ep4.EPISODE.slug}?" + urllib.parse.urlencode({"paste": "x" * 2001}))
    wait_for_bokeh(page, "ep4-bars-right")
    page.locator("textarea").wait_for()
    assert page.locator("textarea").input_value() == ""
    assert "longer than 2,000 characters, so it was left out" in page_text(page)
    # Sending a text puts it in the address (then the scoring is cancelled).
    page.locator("textarea").fill("SELECT name FROM users WHERE id = 1;")
    page.get_by_role("button", name="Score and run my text").click()
    page.wait_for_function("() => new URLSearchParams(location.search).get('paste') === "
                           "'SELECT name FROM users WHERE id = 1;'", timeout=15_000)
    # The scoring may end on its own before the click lands (a fast machine): then the
    # button hides itself, which is as good as a cancel here.
    cancel = page.get_by_role("button", name="Cancel")
    try:
        cancel.click(timeout=5_000)
    except PlaywrightTimeoutError:
        assert not cancel.is_visible(), "Cancel stayed visible but could not be pressed"
    assert_clean(page, console)


def test_the_short_paths_next_links_lead_1_2_3_5(page, site, console):
    path = course.SHORT_PATH
    slugs = {e.number: e.slug for e in EPISODES}
    page.goto(f"{site.url}/{slugs[path[0]]}")
    for n in path[1:]:
        wait_for_bokeh(page)
        link = page.locator('nav a[rel="next"]').first
        with page.expect_navigation():
            link.click()
        assert page.url.endswith(f"/{slugs[n]}"), (n, page.url)
    wait_for_bokeh(page)
    assert_clean(page, console)


def test_episode7_plays_a_run_without_console_errors(page, site, console):
    page.goto(f"{site.url}/ep7_real_models_real_text?task=repeat&draft=lookup&max_new=12")
    wait_for_bokeh(page)
    page.bring_to_front()
    page.get_by_role("button", name="Run").click()
    wait_for_text(page, "Both runs have ended.", timeout=300)
    page.wait_for_function("() => Bokeh.documents[0].get_model_by_name('ep7-figure') !== null")
    page.get_by_role("button", name="Play").first.click()
    page.wait_for_timeout(2500)
    for _ in range(3):
        page.get_by_role("button", name="Step one pass").first.click()
        page.wait_for_timeout(300)
    box = page.evaluate("""() => { const m = Bokeh.documents[0].get_model_by_name('ep7-figure');
        return m ? m.html_id : null; }""")
    assert box == "fig-ep7"
    assert page.locator('button.sdp-save[data-plot="ep7-figure"]').count() == 2
    page.wait_for_timeout(1000)
    assert_clean(page, console)
