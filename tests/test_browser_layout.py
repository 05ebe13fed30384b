"""Browser tier: layout and access on every page, on a phone (Playwright's iPhone 13 emulation,
390 px) and on a 1280 px desktop.

Every page is opened once per width (one browser, two contexts) and measured by one script that
walks every shadow root; the tests then check the measurements:

- prose wraps: no text panel (a Panel HTML pane, a paragraph, a list item, a heading) has words
  running past its edge, and no element that clips or scrolls sideways is wider than its box, except code
  (``white-space: pre``: it keeps its lines and scrolls inside its own box) and the tables that
  scroll in a ``.sdp-hscroll`` / ``*-wrap`` / ``*-scroll`` box and say so; every box that keeps a
  text's own line breaks for prose (``pre-wrap``) breaks a long word where it must;
- code keeps its lines: a code block is ``white-space: pre`` in a box that scrolls sideways,
  and each of its source lines is one line on screen;
- the "Try this" steps are at least 15 px;
- on the phone every visible tap target (links, buttons, selects, inputs, text areas,
  disclosures, slider handles, chart toolbar buttons) is at least 32 x 32 CSS px. Excluded, as
  WCAG 2.2's success criterion 2.5.8 exempts them: a link inside running prose or a chart key's
  line (an inline ``a`` whose line, its nearest ancestor that is not inline-level, has words
  besides it), whose size is set by the line of text around it;
- one font family: the body text (paragraphs, list items, definitions) of every page, episodes,
  guide and summary alike, is set in the same family.

Episode 4's own-text box is checked with a long pasted e-mail (scored by the real model), and
Episode 7's reply box with a code reply and a prose reply built by the page's own HTML builder.
"""

from __future__ import annotations

import re

import pytest
from conftest import assert_clean, wait_for_bokeh
from ep7_fakes import fake_comparison

from specdec_playable.episodes import EPISODES
from specdec_playable.episodes.ep4.view import looks_like_code
from specdec_playable.episodes.ep7.view import reply_is_code, text_html
from specdec_playable.kit import theme
from specdec_playable.kit.resources import stylesheet

PAGES = ["/", "/summary", "/glossary", "/data", "/guide"] + [f"/{e.slug}" for e in EPISODES]
WIDTHS = ("phone", "desktop")
#: The smallest tap target on a phone, in CSS px (WCAG 2.2 asks for 24; a finger needs more).
TAP_PX = 32
#: The smallest "Try this" text, in CSS px (the body text is 17 px).
TRY_PX = 15

_MEASURE = """() => {
  const out = {overflow: [], prosebox: [], code: [], tries: [], targets: [], fonts: {}};
  const tapSel = 'a[href], button, select, input, textarea, summary, [role=button], .noUi-handle, ' +
                 '.bk-OnOffButton, .bk-ClickButton';
  const name = (el) => `${el.tagName.toLowerCase()}.${(el.className || '').toString().trim()
      .replace(/\\s+/g, '.')} "${(el.getAttribute('aria-label') || el.textContent || '').trim().slice(0, 40)}"`;
  const shown = (el) => {
    const r = el.getBoundingClientRect();
    const cs = getComputedStyle(el);
    return r.width > 0 && r.height > 0 && cs.visibility !== 'hidden' && el.type !== 'hidden'
      && !el.closest('[aria-hidden=true], .sdp-sr');
  };
  // A link in running text: inline, and its line (its nearest ancestor that is a block, not
  // inline-level: a chart key's item is inline-flex inside the key's line) has words besides it.
  const inProse = (el) => {
    if (el.tagName !== 'A' || getComputedStyle(el).display !== 'inline') return false;
    let line = el.parentElement;
    while (line && getComputedStyle(line).display.startsWith('inline')) line = line.parentElement;
    return line !== null && line.textContent.trim().length > el.textContent.trim().length;
  };
  const walk = (root) => {
    for (const el of root.querySelectorAll('*')) {
      if (el.shadowRoot) walk(el.shadowRoot);
      if (!shown(el)) continue;
      const cs = getComputedStyle(el);
      const ws = cs.whiteSpace;
      if (['auto', 'scroll', 'hidden'].includes(cs.overflowX) && el.scrollWidth > el.clientWidth + 1
          && el.textContent.trim().length > 20) {
        const table = el.querySelector('table') !== null;
        out.overflow.push({what: name(el), ws, table, sw: el.scrollWidth, cw: el.clientWidth,
                           code: ws === 'pre' || el.querySelector('.mono, .ep7-code, pre') !== null});
      }
      // A text panel (a Panel HTML pane, a paragraph, a list item) whose words run past its edge.
      if (el.matches('.bk-panel-models-markup-HTML, p, li, dd, dt, h1, h2, h3')
          && cs.overflowX === 'visible' && el.scrollWidth > el.clientWidth + 1
          && el.querySelector('pre, .mono, .ep7-code') === null)
        out.overflow.push({what: name(el), ws, table: false, sw: el.scrollWidth, cw: el.clientWidth,
                           code: false});
      if ((ws === 'pre-wrap' || ws === 'break-spaces') && el.textContent.trim().length > 20)
        out.prosebox.push({what: name(el), wrap: cs.overflowWrap, wordBreak: cs.wordBreak});
      if (ws === 'pre' && el.textContent.includes('\\n') && el.textContent.trim().length > 20
          && el.closest('.sdp-hscroll, table') === null) {
        let box = el;
        while (box && !['auto', 'scroll'].includes(getComputedStyle(box).overflowX)) box = box.parentElement;
        out.code.push({what: name(el), lines: el.textContent.replace(/\\n$/, '').split('\\n').length,
                       height: el.getBoundingClientRect().height,
                       lineHeight: parseFloat(cs.lineHeight) || 1.2 * parseFloat(cs.fontSize),
                       scrolls: box !== null});
      }
      if (el.matches('.sdp-try, .sdp-try li')) out.tries.push(parseFloat(cs.fontSize));
      if (el.matches(tapSel) && !inProse(el)) {
        const r = el.getBoundingClientRect();
        out.targets.push({what: name(el), w: r.width, h: r.height});
      }
      if (el.matches('p, li, dd') && el.textContent.trim().length > 30 && !el.closest('pre, code, .mono')) {
        out.fonts[cs.fontFamily] = (out.fonts[cs.fontFamily] || 0) + 1;
      }
    }
  };
  walk(document);
  return out;
}"""


@pytest.fixture(scope="module")
def measured(browser, playwright, site):
    """Every page measured once on the phone and once on the desktop: ``{(width, path): data}``."""
    contexts = {"phone": browser.new_context(**playwright.devices["iPhone 13"]),
                "desktop": browser.new_context(viewport={"width": 1280, "height": 900})}
    out = {}
    try:
        for width, context in contexts.items():
            page = context.new_page()
            errors = []
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            for path in PAGES:
                page.goto(site.url + path)
                wait_for_bokeh(page, timeout=90_000)
                page.wait_for_timeout(800)  # late widgets take their stylesheets
                out[width, path] = page.evaluate(_MEASURE)
                out[width, path]["errors"] = list(errors)
                errors.clear()
    finally:
        for context in contexts.values():
            context.close()
    return out


@pytest.mark.browser
@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("path", PAGES)
def test_prose_wraps_and_code_keeps_its_lines(measured, width, path):
    m = measured[width, path]
    # Only code and a table may be wider than their box; they scroll inside it.
    wide = [o for o in m["overflow"] if not (o["code"] or o["table"])]
    assert wide == [], f"prose wider than its box on {path} ({width}): {wide}"
    # A box that keeps the text's own line breaks breaks a long word (a URL) where it must.
    stiff = [b for b in m["prosebox"] if b["wrap"] not in ("anywhere", "break-word")
             and b["wordBreak"] != "break-all"]
    assert stiff == [], f"prose boxes that do not break long words on {path} ({width}): {stiff}"
    for c in m["code"]:
        assert c["scrolls"], f"code on {path} is not in a box that scrolls sideways: {c}"
        # One line on screen per line of the source: nothing is broken mid-statement.
        assert c["height"] <= (c["lines"] + 1) * c["lineHeight"] + 24, c
    assert m["errors"] == [], m["errors"]


@pytest.mark.browser
def test_episode4_code_is_shown_as_code(measured):
    """Episode 4 opens with code on one side: it keeps its lines and scrolls on a phone."""
    code = measured["phone", f"/{EPISODES[3].slug}"]["code"]
    assert any("ep4-tokens.mono" in c["what"] for c in code), code
    assert any(o["code"] and o["ws"] == "pre" for o in measured["phone", f"/{EPISODES[3].slug}"]["overflow"])


@pytest.mark.browser
@pytest.mark.parametrize("width", WIDTHS)
def test_try_this_is_at_least_15px(measured, width):
    for e in EPISODES:
        sizes = measured[width, f"/{e.slug}"]["tries"]
        assert sizes and min(sizes) >= TRY_PX, (e.slug, sizes)


@pytest.mark.browser
@pytest.mark.parametrize("path", PAGES)
def test_every_tap_target_is_32px_on_a_phone(measured, path):
    targets = measured["phone", path]["targets"]
    assert targets, path
    small = [t for t in targets if t["w"] < TAP_PX - 0.01 or t["h"] < TAP_PX - 0.01]
    assert small == [], f"tap targets under {TAP_PX} px on {path}: {small[:8]}"


@pytest.mark.browser
@pytest.mark.parametrize("width", WIDTHS)
def test_one_font_family_for_body_text(measured, width):
    fonts = {path: set(measured[width, path]["fonts"]) for path in PAGES}
    episode = fonts[f"/{EPISODES[0].slug}"]
    assert len(episode) == 1, episode
    (family,) = episode
    assert "system-ui" in family, family  # the theme's font (kit/theme.FONT), not Bokeh's default
    assert {p: f for p, f in fonts.items() if f != episode} == {}


@pytest.mark.browser
def test_show_this_setting_is_a_button(phone, site, console):
    """Once a question is answered, "Show this setting" appears, drawn as a button (a border
    and a fill of its own) and as big as any other target."""
    ep = EPISODES[0]
    phone.goto(f"{site.url}/{ep.slug}")
    wait_for_bokeh(phone, timeout=60_000)
    phone.get_by_role("button", name=ep.questions[0].choices[0], exact=True).click()
    again = phone.get_by_role("button", name="Show this setting").first
    again.wait_for(timeout=10_000)
    look = again.evaluate("""el => { const cs = getComputedStyle(el); const r = el.getBoundingClientRect();
        return {border: parseFloat(cs.borderTopWidth), color: cs.borderTopColor, bg: cs.backgroundColor,
                w: r.width, h: r.height}; }""")
    assert look["border"] >= 1 and look["color"] not in ("rgba(0, 0, 0, 0)", "transparent"), look
    assert look["w"] >= TAP_PX and look["h"] >= TAP_PX, look
    again.click()
    assert_clean(phone, console)


#: A pasted e-mail: prose, with a long address in it that has no space to break at.
EMAIL = (
    "Hello Maria,\n\nThanks for sending the quarterly numbers over so quickly. I went through "
    "every sheet this morning and the totals match what finance reported, apart from the travel "
    "line, which looks about twelve percent higher than last quarter; could you check whether the "
    "conference trip was booked twice? The shared folder is at "
    "https://example.org/shared/finance/quarterly-review/2026/q3/drafts/final-final-v2-with-comments "
    "if you need it.\n\nBest wishes,\nTom")

_BOX = """el => ({ws: getComputedStyle(el).whiteSpace, wrap: getComputedStyle(el).overflowWrap,
                 sw: el.scrollWidth, cw: el.clientWidth, mono: el.classList.contains('mono')})"""


@pytest.mark.browser
def test_episode4_pasted_prose_wraps_at_both_widths(page, site, console):
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(f"{site.url}/{EPISODES[3].slug}?seed=5")
    wait_for_bokeh(page, "ep4-bars-right")
    page.locator("textarea").fill(EMAIL)
    page.get_by_role("button", name="Score and run my text").click()
    page.wait_for_function("() => Bokeh.documents[0].get_model_by_name('ep4-bars-right')"
                           ".data.text_id[0] === 'pasted'", timeout=300_000)
    pre = page.locator('pre.ep4-tokens[data-side="right"]')
    for width in (1280, 390):
        page.set_viewport_size({"width": width, "height": 900})
        page.wait_for_timeout(300)
        box = pre.evaluate(_BOX)
        assert not box["mono"] and box["ws"] == "pre-wrap" and box["wrap"] == "anywhere", box
        assert box["sw"] <= box["cw"] + 1, f"the pasted e-mail runs wider than its box at {width} px: {box}"
    assert pre.text_content() == EMAIL
    assert_clean(page, console)


#: A reply of code with lines longer than a phone's width.
CODE = ("def order_total(lines, discount_rate, shipping_fee, tax_rate):\n"
        "    subtotal = sum(line.price * line.quantity for line in lines if line.quantity > 0)\n"
        "    return round((subtotal * (1 - discount_rate) + shipping_fee) * (1 + tax_rate), 2)\n")
PROSE = ("The sky looks blue because air scatters the short blue wavelengths of sunlight far more "
         "than the long red ones, so blue reaches your eye from every part of the sky at once.")


def _reply(text: str, code: bool) -> str:
    tokens = re.findall(r"\n|[ ]*[^ \n]+", text)
    c = fake_comparison([(0, 0)] * (len(tokens) - 1), texts=lambda pos: tokens[pos] if pos < len(tokens) else "")
    css = (theme.css_variables(":root") + stylesheet("page.css", "relay.css")
           + stylesheet("specdec_playable.episodes.ep7:ep7.css"))
    return (f"<!doctype html><html><head><style>{css} body {{ margin: 0; }}</style></head>"
            f'<body><div style="width: 358px">{text_html(c, "t", code=code)}</div></body></html>')


@pytest.mark.browser
def test_episode7_code_reply_keeps_its_lines_and_prose_reply_wraps(page):
    page.set_viewport_size({"width": 390, "height": 844})
    page.set_content(_reply(CODE, code=True))
    got = page.evaluate("""() => { const t = document.querySelector('.ep7-spec');
        const stack = t.parentElement; const cs = getComputedStyle(t);
        return {ws: cs.whiteSpace, lh: parseFloat(cs.lineHeight), h: t.getBoundingClientRect().height,
                text: t.textContent, sw: stack.scrollWidth, cw: stack.clientWidth,
                ox: getComputedStyle(stack).overflowX}; }""")
    assert got["text"] == CODE
    assert got["ws"] == "pre" and got["ox"] == "auto" and got["sw"] > got["cw"], got
    lines = CODE.rstrip("\n").count("\n") + 1
    assert got["h"] <= (lines + 1) * got["lh"] + 1, f"a line of code was broken: {got}"
    page.set_content(_reply(PROSE, code=False))
    got = page.evaluate("""() => { const t = document.querySelector('.ep7-spec');
        return {ws: getComputedStyle(t).whiteSpace, sw: t.scrollWidth, cw: t.clientWidth,
                h: t.getBoundingClientRect().height, lh: parseFloat(getComputedStyle(t).lineHeight)}; }""")
    assert got["ws"] == "pre-wrap" and got["sw"] <= got["cw"] + 1 and got["h"] > 2 * got["lh"], got


def test_which_texts_are_code():
    assert looks_like_code(CODE) and not looks_like_code(EMAIL) and not looks_like_code(PROSE)
    assert looks_like_code('{\n  "name": "Ada",\n  "age": 36\n}')
    assert reply_is_code("sum-function", "") and reply_is_code("json-person", "")
    assert not reply_is_code("sky", PROSE) and reply_is_code("custom", "Here:\n```python\nx = 1\n```")
