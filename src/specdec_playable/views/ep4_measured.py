"""Episode 4's measured numbers: the histogram of per-token acceptance per text, the table of
means, the sentence that says whether the genres differ, and the paste's progress.

Plain functions of ``data.measured`` and the state, so tests can call them; the one figure is
built once and updated through its source.
"""

from __future__ import annotations

import numpy as np
from bokeh.models import ColumnDataSource, FactorRange, HoverTool, NumeralTickFormatter, Range1d
from bokeh.plotting import figure

from ..data import measured
from ..state.ep4 import BoilerplateVsPoetry
from . import theme
from .page import esc

#: Bins of the histograms: equal fifths of [0, 1].
BINS = 5
#: What each text is called in the histogram and the table (short, to fit a phone).
SHORT = {"code": "JavaScript", "json": "JSON", "letter": "form letter", "translation": "translation",
         "poem": "poem", "python": "Python", "pasted": "your text"}
#: Acceptance at least this high counts as "the draft is usually right here".
HIGH = 0.5


def bin_labels(bins: int = BINS) -> list[str]:
    """``["0–0.2", "0.2–0.4", ...]`` for ``bins`` equal bins of [0, 1]."""
    edges = np.linspace(0.0, 1.0, bins + 1)
    return [f"{a:g}–{b:g}" for a, b in zip(edges[:-1], edges[1:])]


def short_name(kind: str, title: str = "") -> str:
    return SHORT.get(kind, title or kind)


def in_prose(kind: str) -> str:
    """A text's short name inside a sentence ("the poem", but "JSON")."""
    name = short_name(kind)
    return f"the {name}" if kind in ("letter", "translation", "poem", "pasted") else name


def histogram_data(items) -> dict:
    """Rows of the histogram: for each ``(name, alpha array)``, the share of its tokens in each
    bin, most likely first reading down (the highest bin on top of each group)."""
    labels = bin_labels()
    cols = dict(y=[], share=[], count=[], name=[], bin=[], mean=[])
    for name, alpha in items:
        alpha = np.asarray(alpha, dtype=float)
        shares = measured.histogram(alpha, BINS)
        counts = np.rint(shares * alpha.size).astype(int)
        for b in reversed(range(BINS)):
            cols["y"].append((name, labels[b]))
            cols["share"].append(float(shares[b]))
            cols["count"].append(int(counts[b]))
            cols["name"].append(name)
            cols["bin"].append(labels[b])
            cols["mean"].append(float(alpha.mean()) if alpha.size else float("nan"))
    return cols


def histogram_items(pasted=None) -> list[tuple[str, np.ndarray]]:
    """``(name, alpha)`` of every measured text, then the visitor's scored paste if any."""
    items = [(short_name(t.kind, t.title), t.alpha) for t in measured.load_measured().texts.values()]
    if pasted is not None and len(pasted):
        items.append((SHORT["pasted"], np.asarray(pasted.q)))
    return items


def histogram_factors(data: dict) -> list:
    """The histogram's rows bottom to top, so that it reads top down in the table's order."""
    return list(reversed(data["y"]))


def histogram_figure(source: ColumnDataSource, factors) -> figure:
    """Share of each text's tokens in each fifth of acceptance, one group of bars per text
    (``factors`` from :func:`histogram_factors`)."""
    fig = figure(
        name="ep4-hist-figure", height=40 + 15 * len(factors), sizing_mode="stretch_width",
        y_range=FactorRange(*factors, group_padding=0.9, factor_padding=0.05, name="ep4-hist-y"),
        x_range=Range1d(0, 1, bounds=(0, 1)), tools="", toolbar_location=None,
        x_axis_label="share of the text's tokens",
    )
    bars = fig.hbar(y="y", left=0, right="share", height=0.8, source=source,
                    fill_color=theme.DRAFT, line_color=theme.DRAFT)
    fig.add_tools(HoverTool(renderers=[bars], tooltips=[
        ("text", "@name"), ("acceptance", "@bin"), ("tokens", "@count (@share{0%})"),
        ("mean acceptance", "@mean{0.000}")]))
    fig.xaxis.formatter = NumeralTickFormatter(format="0%")
    fig.yaxis.major_label_text_font_size = "11px"
    fig.yaxis.group_text_font_size = "13px"
    fig.yaxis.group_text_color = theme.INK
    fig.yaxis.major_label_text_color = theme.MUTED
    fig.ygrid.grid_line_color = None
    fig.xgrid.grid_line_color = theme.GRID
    fig.outline_line_color = None
    theme.lean(fig)
    return fig


#: The drafts of the comparison columns, in order, and what the table calls them.
COMPARED = {"head": "head", "learned": "n-gram", "lookup": "lookup"}


def _compared_cells(m: dict, key: str, fmt: str) -> str:
    cells = []
    for d in COMPARED:
        v = m.get("compare", {}).get(d, {}).get(key)
        cells.append(f'<td class="n" data-draft="{d}">{"–" if v is None else format(v, fmt)}</td>')
    return "".join(cells)


def genre_table_html() -> str:
    """Per text: tokens, mean measured acceptance, the share where greedy drafting is kept, how
    probable the big model itself finds the text (mean p of each real token), and, per draft
    compared (the head, the n-gram table, prompt lookup), its first guess kept and its tokens per
    pass at k = 4."""
    rows = []
    for tid, m in measured.genre_means().items():
        rows.append(
            f'<tr data-text="{esc(tid)}"><td>{esc(short_name(m["kind"]))}</td>'
            f'<td class="n">{m["tokens"]}</td><td class="n">{m["alpha"]:.3f}</td>'
            f'<td class="n">{m["greedy"]:.0%}</td><td class="n">{m["p_token"]:.2f}</td>'
            + _compared_cells(m, "greedy", ".0%") + _compared_cells(m, "tau", ".2f") + "</tr>")
    names = "".join(f"<th>{n}</th>" for n in COMPARED.values())
    return ('<div class="ep4-wrap sdp-hscroll"><table class="ep4-rule ep4-means"><thead><tr>'
            '<th rowspan="2">text</th><th rowspan="2">tokens</th><th rowspan="2">acceptance q</th>'
            '<th rowspan="2">greedy kept</th><th rowspan="2">big model’s p<sub>big</sub></th>'
            f'<th colspan="{len(COMPARED)}">first guess kept</th>'
            f'<th colspan="{len(COMPARED)}">tokens per pass, k = 4</th></tr>'
            f'<tr>{names}{names}</tr></thead><tbody>' + "".join(rows) + "</tbody></table></div>"
            '<p class="sdp-hscroll-cue">Swipe the table sideways for all its columns.</p>')


#: How much more often (in mean acceptance) the best boilerplate text must keep the draft than the
#: poem does for "boilerplate flies, poetry stalls" to hold.
TITLE_MARGIN = 0.1
BOILERPLATE = ("code", "json", "letter")


def title_holds() -> bool:
    """Whether the measured means bear the seed's title out: the best of the boilerplate texts
    keeps the draft at least :data:`TITLE_MARGIN` more often than the poem."""
    by_kind = {m["kind"]: m for m in measured.genre_means().values()}
    boiler = [by_kind[k]["alpha"] for k in BOILERPLATE if k in by_kind]
    return bool(boiler) and "poem" in by_kind and max(boiler) - by_kind["poem"]["alpha"] >= TITLE_MARGIN


def genre_story() -> str:
    """What the measured means say about the genres, written from them (plain text)."""
    means = measured.genre_means()
    by_kind = {m["kind"]: m for m in means.values()}
    rank = sorted(means.values(), key=lambda m: -m["alpha"])
    best, worst = rank[0], rank[-1]
    boiler = [by_kind[k] for k in BOILERPLATE if k in by_kind]
    poem = by_kind.get("poem")
    parts = [f"Measured, the draft head is kept most often on {in_prose(best['kind'])} "
             f"(mean acceptance {best['alpha']:.2f}) and least on {in_prose(worst['kind'])} "
             f"({worst['alpha']:.2f})."]
    if poem is not None and boiler:
        top = max(boiler, key=lambda m: m["alpha"])
        if title_holds():
            parts.append(f"Boilerplate does beat the poem here: {top['alpha']:.2f} on "
                         f"{in_prose(top['kind'])} against {poem['alpha']:.2f} on the poem.")
        else:
            parts.append(
                f"So the title does not hold for this draft: on JavaScript, JSON and the form letter "
                f"its mean acceptance is at most {top['alpha']:.2f}, barely more than on the poem "
                f"({poem['alpha']:.2f}).")
    if poem is not None and boiler and min(m["p_token"] for m in boiler) > poem["p_token"]:
        listed = ", ".join(f"{m['p_token']:.2f} on {in_prose(m['kind'])}" for m in boiler)
        parts.append(
            "The big model itself does find every one of these boilerplate texts easier to predict "
            f"than the poem: its mean probability of the real next token is {listed}, against "
            f"{poem['p_token']:.2f} on the poem.")
    return " ".join(parts)


def token_alpha_class(alpha: float) -> str:
    """CSS class of a token's measured acceptance: ``m0`` (below 0.2) to ``m4`` (0.8 and up)."""
    return f"m{min(int(alpha * BINS), BINS - 1)}"


def scoring_html(state: BoilerplateVsPoetry) -> str:
    """Where the pasted text's scoring stands (escaped; empty when there is nothing to say)."""
    st = state.scoring
    if st == "queued":
        ahead = state.position - 1
        line = ("Your text is next in line for the model." if ahead <= 0 else
                f"Your text is waiting for the model: {ahead} run{'s' if ahead != 1 else ''} ahead of it.")
    elif st == "running":
        done, total = state.progress
        line = (f"The model is scoring your text: {done:,} of {total:,} tokens." if total else
                "The model is reading your text.")
    else:
        return ""
    return f'<p class="ep4-scoring" role="status">{esc(line)}</p>'
