"""State tier: the glossary, and every page's use of it.

Every page is built as a notebook builds it (every part at once); every glossary term its text
uses must be linked to the glossary there, each link must point at an entry, and the glossary's
"See it in Episode N" must name episodes that use the term. The linker leaves tags, links, code
and headings alone. No browser.
"""

from __future__ import annotations

import re

import panel as pn
import pytest
from bokeh.document import Document

from specdec_playable.episodes import EPISODES
from specdec_playable.app import site
from specdec_playable.kit.site import course, glossary
from specdec_playable.kit import terms

PAGES = [(e.number, e.slug, e.page) for e in EPISODES]
HREF = re.compile(r'href="\./glossary#([\w-]+)"')


@pytest.fixture(scope="module", autouse=True)
def _panel():
    pn.extension()


@pytest.fixture(scope="module")
def built():
    """Per episode: (its prose as plain text, the glossary anchors it links to)."""
    out = {}
    for number, _, build in PAGES:
        root = build()
        Document().add_root(root.get_root(Document()))
        markup = course.page_markup(root)
        text = " ".join(course.plain_text(m) for m in markup)
        out[number] = (text, set(HREF.findall(" ".join(markup))))
    return out


def test_every_term_a_page_uses_is_linked_to_the_glossary(built):
    keys = {t.key for t in terms.TERMS}
    for number, (text, linked) in built.items():
        used = set(terms.find_terms(text))
        assert used <= linked, f"Episode {number} uses {sorted(used - linked)} without a link"
        assert linked <= keys, f"Episode {number} links to no entry: {sorted(linked - keys)}"


def test_every_listed_term_of_the_issue_is_in_the_glossary():
    names = {t.key for t in terms.TERMS}
    assert {"memory-bound", "compute-bound", "roofline", "kv-cache", "cuda-graph", "eager",
            "degrees-of-freedom", "token-tree", "spine", "in-fifths"} <= names
    # and the words a class found missing: goodput, bootstrap, EAGLE, float32, bf16, 4-bit,
    # llama.cpp, and the weight formats they name
    for word in ("goodput", "bootstrap", "EAGLE", "float32", "bf16", "4-bit", "llama.cpp",
                 "weight format"):
        assert terms.find_terms(f"a {word} here"), word


def test_see_it_in_names_episodes_that_use_the_term(built):
    for t in terms.TERMS:
        for n in t.see:
            text, _ = built[n]
            assert not t.patterns or t.key in terms.find_terms(text), (t.key, n)


def test_the_glossary_page_has_an_entry_per_term_and_links_each_episode():
    body = glossary.glossary_html(EPISODES)
    for t in terms.TERMS:
        assert body.count(f'<dt id="{t.key}">') == 1
    slugs = {e.slug for e in EPISODES}
    assert set(re.findall(r'href="\./(ep\d[\w]*)"', body)) <= slugs


def test_every_page_links_the_glossary_and_the_summary():
    for name, build in [("index", site.index_page)] + [(s, b) for _, s, b in PAGES]:
        markup = " ".join(course.page_markup(build()) + [p.object for p in build().select(pn.pane.HTML)
                                                           if str(p.object).startswith("<nav")])
        assert 'href="./glossary"' in markup and 'href="./summary"' in markup, name


@pytest.mark.parametrize("markup, linked", [
    ("<p>the KV cache</p>", ["kv-cache"]),
    ('<p title="KV cache">x</p>', []),                              # inside an attribute
    ("<p><a href='x'>KV cache</a> and a KV cache</p>", ["kv-cache"]),  # not inside a link
    ("<code>roofline</code> <h3>roofline</h3>", []),                # code, headings
    ("<p>over-eager, eager PyTorch</p>", ["eager"]),                # whole words only
    ("<p>roofline, roofline</p>", ["roofline"]),                    # the first use only
])
def test_link_terms_links_text_only_once(markup, linked):
    out = terms.link_terms(markup)
    assert HREF.findall(out) == linked
    assert re.sub(r"<[^>]+>", "", out) == re.sub(r"<[^>]+>", "", markup)


def test_a_term_is_found_as_a_whole_word():
    assert terms.find_terms("memory-bound and over-eager") == ["memory-bound"]
    assert terms.find_terms("a spine of 3 and two CUDA graphs") == ["cuda-graph", "spine"]


def test_the_term_list_is_in_the_glossary_and_every_word_of_it_is_linked_where_used(built):
    keys = {t.key for t in terms.TERMS}
    assert set(terms.WORDS.values()) <= keys and set(terms.SYMBOLS.values()) <= keys
    # The issue's own list, at least.
    for word in ("acceptance", "draft", "verify pass", "goodput", "speedup", "round", "token",
                 "big model", "plain decoding", "tokens per pass"):
        assert word in terms.WORDS, word
    for word, key in terms.WORDS.items():
        # Found as that entry (not as a shorter, more general one), so a page using it links it.
        assert terms.find_terms(f"and {word} here") == [key], word
        out = terms.link_terms(f"<p>and {word} here</p>")
        assert HREF.findall(out) == [key], word
    # The list is the pages' own: every word of it is used somewhere in the series, but for two
    # that only a finished run (Episode 7's verdict: its bootstrap interval) or the docs and the
    # command line (the weight format) write, which a freshly built page does not show.
    used = set().union(*(terms.find_terms(text) for text, _ in built.values()))
    elsewhere = {"bootstrap", "weight-format"}
    assert set(terms.WORDS.values()) - elsewhere <= used, sorted(set(terms.WORDS.values()) - used)


def test_every_symbol_a_page_sets_has_its_entry(built):
    # A symbol a page writes with a value ("q = 0.60", "B ≥ 64"), or as p_big / p_draft.
    found = set()
    for text, _ in built.values():
        found |= set(re.findall(r"(?<![\w-])([A-Za-z])(?:\([a-z]\))? ?[=≤≥<>] ?[\d(]", text))
        found |= {f"p_{w}" for w in re.findall(r"(?<![\w-])p ?(big|draft)\b", text)}
    assert {"q", "k", "c", "B", "p_big", "p_draft"} <= found
    assert found <= set(terms.SYMBOLS), sorted(found - set(terms.SYMBOLS))
    for sym, key in terms.SYMBOLS.items():
        name = terms.term(key).name
        assert sym in name, (sym, name)
