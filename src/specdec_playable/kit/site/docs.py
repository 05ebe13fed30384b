"""The project's documentation (``docs/*.md``) as plain pages of the site (``/docs/serving.md``),
so the teacher's guide can link into the serving guide wherever the site runs.

A page is one HTML document rendered from the Markdown, without a Panel session (nothing to
interact with): raw HTML in the Markdown is escaped, and every heading gets the id GitHub gives
it, so links between the files (``performance.md#the-server``) and into them work as on GitHub.
"""

from __future__ import annotations

import re
import unicodedata
from functools import cache

from markdown_it import MarkdownIt

from ...shipped import doc_text
from ..page import VIEWPORT, esc
from ..resources import stylesheet
from ..theme import css_variables
from .index import SITE_TITLE

#: Where the docs are served, relative to the site's root.
DOCS_PREFIX = "docs"


def heading_id(text: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens
    (``"`specdec-playable serve`"`` -> ``"specdec-playable-serve"``)."""
    text = unicodedata.normalize("NFKC", text).strip().lower()
    kept = "".join(ch for ch in text if ch.isalnum() or ch in " -_")
    return kept.replace(" ", "-")


def render(markdown: str) -> str:
    """The Markdown as HTML (raw HTML escaped, tables on), each heading with its GitHub id."""
    md = MarkdownIt("commonmark", {"html": False}).enable("table")
    tokens = md.parse(markdown)
    seen: dict[str, int] = {}
    for i, tok in enumerate(tokens):
        if tok.type == "heading_open" and i + 1 < len(tokens):
            inline = tokens[i + 1]
            plain = "".join(c.content for c in (inline.children or []) if c.type in ("text", "code_inline"))
            base = heading_id(plain)
            n = seen.get(base, 0)
            seen[base] = n + 1
            tok.attrSet("id", base if n == 0 else f"{base}-{n}")
    return md.renderer.render(tokens, md.options, {})


def _title(markdown: str, name: str) -> str:
    m = re.search(r"^# (.+)$", markdown, re.MULTILINE)
    return m.group(1).strip() if m else name


@cache
def doc_page(name: str) -> str:
    """The whole HTML document of ``docs/<name>`` (a name of ``shipped.doc_names``)."""
    text = doc_text(name)
    body = render(text)
    css = css_variables(":root") + stylesheet("docs.css")
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="{VIEWPORT}">'
            f"<title>{esc(_title(text, name))} · {esc(SITE_TITLE)}</title><style>{css}</style></head>"
            f'<body><nav class="sdp-nav" aria-label="Site"><a href="../">← All episodes</a>'
            f'<a href="../guide">Teacher\'s guide</a><a href="../summary">Summary</a></nav>'
            f'<main class="sdp-doc"><p class="sdp-kicker">{esc(SITE_TITLE)} · docs/{esc(name)}</p>'
            f"{body}</main></body></html>")
