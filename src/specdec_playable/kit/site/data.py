"""The data page: every shipped file a visitor may download (``/assets/<name>``), its size, and
where it comes from, with the provenance notes themselves (``assets/PROVENANCE.md``)."""

from __future__ import annotations

import panel as pn
from markdown_it import MarkdownIt

from ...data.provenance import PROVENANCE, file_size, notes_for, provenance, served_files
from ..figures import file_href
from ..page import esc, site_shell

_MD = MarkdownIt("commonmark", {"html": False})


def section_id(names: str) -> str:
    """The anchor of a provenance section (``prov-pass_cost_h200.csv``)."""
    return "prov-" + names.split(",")[0].strip()


def _size(n: int) -> str:
    return f"{n:,} bytes" if n < 10_000 else f"{n / 1000:,.0f} kB"


def _unserved_html(names) -> str:
    """What a section says of the files it describes that are not served (binary tables)."""
    left = [n for n in names if n not in served_files()]
    if not left:
        return ""
    return (f'<p class="sdp-small">Not served here: {esc(", ".join(left))} (binary arrays the '
            "model's drafts read), in the project's <code>assets/</code> folder.</p>")


def data_html() -> str:
    """The data page's body."""
    prov = provenance()
    sections: dict[str, list[str]] = {}
    for name, body in prov.items():
        sections.setdefault(body, []).append(name)
    rows = []
    for name in served_files():
        notes = notes_for(name)
        if notes == PROVENANCE:
            first = next(n for n in sections[prov[name]])
            where = f'<a href="#{esc(section_id(first))}">provenance below</a>'
        elif notes:
            where = f'<a href="{esc(file_href(notes))}">{esc(notes)}</a>'
        else:
            where = "this page's notes"
        rows.append(f'<tr id="{esc(name)}"><td><a href="{esc(file_href(name))}" download>{esc(name)}</a>'
                    f'</td><td class="n">{_size(file_size(name))}</td><td>{where}</td></tr>')
    notes = "".join(
        f'<h2 id="{esc(section_id(names[0]))}">{esc(", ".join(names))}</h2>{_unserved_html(names)}'
        f"{_MD.render(body)}" for body, names in sections.items())
    return (
        '<p class="sdp-kicker">Speculative Decoding, Playable</p>'
        '<h1 class="sdp-title">The data behind the figures</h1>'
        '<p class="sdp-lede">Every measurement a page draws from, as the file it ships in, to open or '
        'cite. Each figure drawn from one links to it. The files are served as they are in the '
        f'project\'s <code>assets/</code> folder, read-only, at <code>/assets/&lt;name&gt;</code>; '
        f'<a href="{esc(file_href(PROVENANCE))}">PROVENANCE.md</a> says where each comes from.</p>'
        '<div class="sdp-hscroll"><table class="sdp-files"><thead><tr><th>file</th><th>size</th>'
        f'<th>where it comes from</th></tr></thead><tbody>{"".join(rows)}</tbody></table></div>'
        f'<div class="sdp-markdown">{notes}</div>')


def data_page() -> pn.Column:
    """The data page, for one session."""
    return site_shell(data_html(), "course.css", name="data")
