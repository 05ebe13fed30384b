"""Browser tier: the pages around the episodes. The glossary and the summary are reachable from
every page's navigation; a glossary term on an episode page leads to its entry; a link to a
figure (``#fig-...``) scrolls to it even in a part built on scroll; the summary prints on one
A4 page; the data page's links download the shipped files."""

from __future__ import annotations

import re

import pytest
from conftest import assert_clean, page_text, wait_for_bokeh

from specdec_playable.episodes import EPISODES, ep8
from specdec_playable.kit.site import summary

pytestmark = pytest.mark.browser

_TOP = """id => { const todo = [document];
  while (todo.length) { const r = todo.pop(); const el = r.getElementById ? r.getElementById(id) : r.querySelector('#' + id);
    if (el) return el.getBoundingClientRect().top;
    for (const e of r.querySelectorAll('*')) if (e.shadowRoot) todo.push(e.shadowRoot); }
  return null; }"""


def _top(page, element_id: str):
    return page.evaluate(_TOP, element_id)


def test_glossary_and_summary_are_one_click_from_an_episode(page, site, console, artifacts):
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(f"{site.url}/{EPISODES[0].slug}")
    wait_for_bokeh(page)
    page.get_by_role("link", name="Glossary").first.click()
    page.wait_for_url(re.compile(r"/glossary$"))
    wait_for_bokeh(page, "glossary")
    assert "degrees of freedom" in page_text(page) and "KV cache" in page_text(page)
    page.screenshot(path=artifacts / "glossary.png", full_page=True)
    page.get_by_role("link", name="Summary").first.click()
    page.wait_for_url(re.compile(r"/summary$"))
    wait_for_bokeh(page, "summary")
    assert "E = (1 − q" in page_text(page)
    page.screenshot(path=artifacts / "summary.png", full_page=True)
    assert_clean(page, console)


def test_a_term_on_an_episode_page_leads_to_its_entry(page, site, console):
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(f"{site.url}/{ep8.EPISODE.slug}")
    wait_for_bokeh(page)
    page.locator('a.sdp-term[href="./glossary#roofline"]').first.click()
    page.wait_for_url(re.compile(r"/glossary#roofline$"))
    wait_for_bokeh(page, "glossary")
    # At the top of the window, or as near as the end of the page lets it come.
    page.wait_for_function(f"""() => {{ const t = ({_TOP})('roofline');
        const end = window.scrollY + window.innerHeight >= document.documentElement.scrollHeight - 2;
        return t !== null && t >= 0 && (t < 60 || (end && t < window.innerHeight - 40)); }}""",
                           timeout=15_000)
    assert_clean(page, console)


def test_a_link_to_a_figure_in_a_part_built_on_scroll_finds_it(page, site, console):
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(f"{site.url}/{ep8.EPISODE.slug}#fig-ep8-real-tree")
    page.wait_for_function("() => window.Bokeh && Bokeh.documents.length > 0", timeout=30_000)
    page.wait_for_function(f"() => {{ const t = ({_TOP})('fig-ep8-real-tree'); return t !== null && t > -5 && t < 300; }}",
                           timeout=40_000)
    page.wait_for_timeout(1500)
    top = _top(page, "fig-ep8-real-tree")
    assert -5 < top < 450, top
    assert page.evaluate("window.scrollY") > 2000
    assert_clean(page, console)


def test_the_summary_prints_on_one_page_and_links_into_each_episode(page, site, console, artifacts):
    page.goto(f"{site.url}/summary")
    wait_for_bokeh(page, "summary")
    hrefs = page.evaluate("""() => { const out = []; const todo = [document];
      while (todo.length) { const r = todo.pop();
        for (const a of r.querySelectorAll('ol.sdp-summary a')) out.push(a.getAttribute('href'));
        for (const e of r.querySelectorAll('*')) if (e.shadowRoot) todo.push(e.shadowRoot); }
      return out; }""")
    assert hrefs == [summary.link(e) for e in EPISODES]
    pdf = page.pdf(format="A4", print_background=True)
    (artifacts / "summary.pdf").write_bytes(pdf)
    assert len(re.findall(rb"/Type\s*/Page\b", pdf)) == 1
    page.goto(site.url + hrefs[2].lstrip("."))
    wait_for_bokeh(page, "ep3-hist")
    assert "q = 0.80" in page_text(page) or "0.80" in page_text(page)
    assert "was clamped" not in page_text(page) and "ignored" not in page_text(page)
    assert_clean(page, console)


def test_the_data_page_links_download_the_files(page, site, console, artifacts):
    page.goto(f"{site.url}/data")
    wait_for_bokeh(page, "data")
    assert "PROVENANCE.md" in page_text(page)
    page.screenshot(path=artifacts / "data.png", full_page=True)
    with page.expect_download() as dl:
        page.locator('a[href="./assets/pass_cost_h200.csv"]').first.click()
    assert dl.value.suggested_filename == "pass_cost_h200.csv"
    assert_clean(page, console)
