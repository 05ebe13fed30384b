"""The glossary page: the series' symbols, then every term of :data:`kit.terms.TERMS`, each
at its own anchor (``glossary#kv-cache``) with links to the episodes that show it."""

from __future__ import annotations

from collections.abc import Sequence

import panel as pn

from ..page import EpisodeRef, esc, site_shell
from ..terms import TERMS

#: The symbols every page uses, with their meaning (trusted package HTML).
SYMBOLS = (
    ("q", "the acceptance rate (“draft quality q”): the share of drafted tokens the big model "
          "accepts"),
    ("k", "the draft length: tokens drafted per round"),
    ("c", "the cost of one draft step over one big-model pass"),
    ("p<sub>big</sub>(x)", "the big model's next-token distribution"),
    ("p<sub>draft</sub>(x)", "the draft model's next-token distribution"),
    ("E", "tokens per round: (1 − q<sup>k+1</sup>) / (1 − q)"),
    ("B", "batch size: users' sequences in one pass (Episode 8)"),
)


def glossary_html(episodes: Sequence[EpisodeRef]) -> str:
    """The glossary's body: the symbols, then the terms in alphabetical order."""
    symbols = "".join(f'<tr><th scope="row">{s}</th><td>{meaning}</td></tr>' for s, meaning in SYMBOLS)
    entries = []
    for t in sorted(TERMS, key=lambda t: t.name.lower()):
        see = [e for e in episodes if e.number in t.see or t.key in getattr(e, "terms", ())]
        where = ("" if not see else '<span class="where">See it in ' + ", ".join(
            f'<a href="./{esc(e.slug)}">Episode {e.number}</a>' for e in see) + ".</span>")
        entries.append(f'<dt id="{esc(t.key)}"><a class="self" href="#{esc(t.key)}">{esc(t.name)}</a>'
                       f'</dt><dd>{t.definition} {where}</dd>')
    return (
        '<p class="sdp-kicker">Speculative Decoding, Playable</p>'
        '<h1 class="sdp-title">Glossary</h1>'
        '<p class="sdp-lede">The words and symbols the episodes use, each with one meaning across the '
        'whole series. A dotted underline on an episode page links a term here.</p>'
        '<h2 id="symbols">Symbols</h2>'
        f'<table class="sdp-symbols"><tbody>{symbols}</tbody></table>'
        f'<h2 id="terms">Terms</h2><dl class="sdp-glossary">{"".join(entries)}</dl>')


def glossary_page(episodes: Sequence[EpisodeRef]) -> pn.Column:
    """The glossary, for one session."""
    return site_shell(glossary_html(episodes), "course.css", name="glossary")
