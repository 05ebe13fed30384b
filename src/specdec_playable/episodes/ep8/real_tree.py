"""Episode 8's third part: the real model's token trees, measured (the table of tree shapes against
the chain, per prompt) and one verify step drawn with its attention mask."""

from __future__ import annotations

import numpy as np
import panel as pn
from bokeh.models import ColumnDataSource, FixedTicker, HoverTool, LinearColorMapper, Range1d
from bokeh.plotting import figure

from ...data import tree_table
from ...data.tree_table import TreeVsChain
from ...lm.tree_step import TreeStep
from ...sim import trees
from .words import (memory_trees_sentence, own_poem_sentence, real_mask_words, real_tree_words, step_sentence,
                    table_sentence)
from ...kit import theme
from ...kit.theme import STATUS
from ...kit.a11y import describe
from ...kit.keys import KEYS_CSS, chart_key, swatch
from ...kit.page import esc, page_css, prose
from ...kit.tokens import token_label


_CSS = f"{__package__}:ep8.css"

REAL_TREE_KEY = chart_key(
    "A real tree, one verify pass",
    swatch("bar", "ink") + "the last accepted token (root)",
    swatch("bar", "accepted") + "✓ drafted, accepted",
    swatch("bar", "rejected") + "✗ drafted, checked, rejected",
    swatch("bar", "discarded") + "– not checked: under a rejected guess",
    swatch("bar", "gold") + "★ or + the big model's own token",
    note=" In the mask, row i may look at column j where the cell is filled; the kept path's "
         "rows are green and marked ✓ in the row labels.",
)


def table_html(table: TreeVsChain, cost: np.ndarray) -> str:
    """Every shape, pooled over the prompts: what a verify pass held, wrote and cost."""
    head = ('<tr><th class="l">verified positions</th><th class="l">shape</th>'
            "<th>candidates checked per pass</th>"
            "<th>accepted share</th><th>tokens per pass</th>"
            "<th>a round costs (plain steps: pass + drafting)</th></tr>")
    body = []
    for n, ix in tree_table.pooled(table).items():
        for j, i in enumerate(ix):
            top = ' class="group"' if j == 0 else ""
            body.append(
                f'<tr{top}><td class="l">{n if j == 0 else ""}</td><td class="l">{esc(table.label[i])}</td>'
                f"<td>{table.nodes_per_pass[i]:.2f}</td><td>{table.q[i]:.3f}</td>"
                f"<td>{table.tokens_per_pass[i]:.2f}</td><td>{cost[i]:.2f}</td></tr>")
    return _scrolling(head + "".join(body), "Every tree shape, pooled over the prompts")


def _scrolling(rows: str, label: str) -> str:
    """A table that scrolls sideways on a narrow screen: a region a keyboard can reach and scroll
    (focusable, and named for a screen reader)."""
    return (f'<div class="ep8-scroll" tabindex="0" role="region" aria-label="{esc(label)}">'
            f'<table class="ep8-real">{rows}</table></div>')


def prompts_html(table: TreeVsChain, positions: int) -> str:
    """Per prompt at ``positions``: tokens per pass of the chain and of every tree."""
    rows = [int(i) for i in table.rows() if table.positions[i] == positions]
    labels = [table.label[i] for i in sorted(rows, key=lambda i: table.width[i] != 1)]
    head = '<tr><th class="l">prompt</th>' + "".join(f"<th>{esc(lab)}</th>" for lab in labels) + "</tr>"
    body = []
    for p in table.prompts():
        vals = {table.label[i]: table.tokens_per_pass[i] for i in table.rows(p)
                if table.positions[i] == positions}
        top = max(vals.values())
        cells = "".join(
            (f"<td><strong>{vals[lab]:.2f}</strong></td>" if vals[lab] == top and top > min(vals.values())
             else f"<td>{vals[lab]:.2f}</td>") for lab in labels)
        body.append(f'<tr><td class="l">{esc(p)}</td>{cells}</tr>')
    return _scrolling(head + "".join(body), f"Tokens per pass by prompt, {positions} positions")


def tree_nodes(step: TreeStep) -> dict:
    """Columns for the drawing: the root, every drafted node and the big model's own token."""
    depth = step.depths.astype(float)
    y = trees.places(step.depths)
    fill = [theme.ACCEPTED if a else theme.REJECTED if j else theme.DISCARDED
            for a, j in zip(step.accepted, step.judged)]
    what = ["accepted" if a else "checked, rejected" if j else "not checked: its parent was rejected"
            for a, j in zip(step.accepted, step.judged)]
    # Each verdict has its own mark, as in Episode 2's lanes: colour is never the only cue.
    marks = [STATUS["accepted"]["mark"] if a else STATUS["rejected"]["mark"] if j else
             STATUS["discarded"]["mark"] for a, j in zip(step.accepted, step.judged)]
    own = STATUS.get(step.mark, STATUS["correction"])["mark"]
    end = step.path[-1] if step.path else -1
    end_x = 0.0 if end < 0 else depth[end]
    end_y = 0.0 if end < 0 else y[end]
    taken = y[depth == end_x + 1]
    if taken.size and np.isclose(taken, end_y).any():  # a drafted node holds that place
        end_y = float(taken.min()) - 1.0
    xs = [0.0, *depth.tolist(), end_x + 1]
    ys = [0.0, *y.tolist(), end_y]
    labels = [token_label(step.root_text), *[f"{m} {token_label(t)}" for m, t in zip(marks, step.texts)],
              f"{own} {token_label(step.text)}"]
    return dict(
        x=xs, y=ys, text=labels,
        fill=[theme.INK, *fill, theme.GOLD],
        ink=[theme.PAPER, *[theme.INK if f == theme.DISCARDED else theme.PAPER for f in fill],
             theme.INK],
        what=["root: the last accepted token", *what, f"the big model's own token ({step.mark})"],
        prob=[float("nan"), *step.probs.tolist(), float("nan")],
    )


class RealTreePicture:
    """The drawn real step: the tree with its verdicts, and the attention mask its pass used."""

    def __init__(self, step: TreeStep):
        nodes = tree_nodes(step)
        self.nodes = ColumnDataSource(nodes, name="ep8-real-nodes")
        parents = step.parents
        n = len(parents)
        px = [0.0 if p < 0 else nodes["x"][p + 1] for p in parents]
        py = [0.0 if p < 0 else nodes["y"][p + 1] for p in parents]
        end = (step.path[-1] + 1) if step.path else 0
        edges = dict(x0=[*px, nodes["x"][end]], y0=[*py, nodes["y"][end]],
                     x1=[*nodes["x"][1:n + 1], nodes["x"][-1]], y1=[*nodes["y"][1:n + 1], nodes["y"][-1]])
        spread = max(float(np.abs(nodes["y"]).max()), 1.0)
        fig = figure(name="ep8-real-tree", height=90 + 46 * int(2 * spread + 1),
                     sizing_mode="stretch_width", tools="", toolbar_location=None,
                     x_range=Range1d(-0.6, max(nodes["x"]) + 0.6),
                     y_range=Range1d(-spread - 0.7, spread + 0.7),
                     x_axis_label="tokens ahead of the last accepted one")
        fig.segment("x0", "y0", "x1", "y1", source=ColumnDataSource(edges), line_color=theme.MUTED,
                    line_width=1.5)
        boxes = fig.rect("x", "y", width=0.8, height=0.62, source=self.nodes, fill_color="fill",
                         line_color=None)
        fig.text("x", "y", text="text", source=self.nodes, text_align="center",
                 text_baseline="middle", text_font_size="11px", text_color="ink")
        fig.add_tools(HoverTool(renderers=[boxes], tooltips=[
            ("token", "@text"), ("", "@what"), ("draft's probability", "@prob{0.000}")]))
        fig.yaxis.visible = False
        fig.ygrid.grid_line_color = None
        fig.xaxis.ticker = FixedTicker(ticks=list(range(0, int(max(nodes["x"])) + 1)))
        theme.style_figure(fig)
        self.figure = fig

        m = step.mask
        size = m.shape[0]
        ii, jj = np.indices(m.shape)
        names = [token_label(step.root_text), *[token_label(t) for t in step.texts]]
        what = [f"{names[i]} {'sees' if v else 'does not see'} {names[j]}"
                for i, j, v in zip(ii.ravel(), jj.ravel(), m.ravel())]
        on_path = np.zeros(size, bool)
        on_path[0] = True
        on_path[[i + 1 for i in step.path]] = True
        v = m.astype(int) * np.where(on_path[:, None], 2, 1)
        self.mask = ColumnDataSource(dict(i=ii.ravel().tolist(), j=jj.ravel().tolist(),
                                          v=v.ravel().tolist(), what=what), name="ep8-real-mask")
        labels = {i: f"{'✓ ' if on_path[i] else ''}{i} {names[i][:8]}" for i in range(size)}
        cell = min(22, 200 // size)        # px per cell: the figure fits a phone's 390 px
        mfig = figure(name="ep8-real-mask-fig", height=60 + cell * size, width=110 + cell * size,
                      tools="", toolbar_location=None, x_range=Range1d(-0.5, size - 0.5),
                      y_range=Range1d(size - 0.5, -0.5), x_axis_label="may look at …")
        mapper = LinearColorMapper(palette=[theme.GRID, theme.BIG, theme.ACCEPTED], low=0, high=2)
        rects = mfig.rect("j", "i", width=0.92, height=0.92, source=self.mask,
                          fill_color={"field": "v", "transform": mapper}, line_color=None)
        mfig.add_tools(HoverTool(renderers=[rects], tooltips=[("", "@what")]))
        mfig.yaxis.ticker = FixedTicker(ticks=list(range(size)))
        mfig.yaxis.major_label_overrides = labels
        mfig.xaxis.ticker = FixedTicker(ticks=list(range(size)))
        mfig.grid.grid_line_color = None
        theme.style_figure(mfig)
        self.mask_figure = mfig
        describe(fig, real_tree_words(step))
        describe(mfig, real_mask_words(step))


def memory_trees() -> TreeVsChain | None:
    """The memory draft's measured table, where it is shipped (None otherwise)."""
    try:
        return tree_table.load_tree_vs_chain(tree_table.MEMORY_CSV_NAME)
    except FileNotFoundError:
        return None


def real_tree_part(table: TreeVsChain, step: TreeStep, curve, *, intro: str, note: str,
                   draft: str = "the draft head", step_draft: str = "the draft head") -> pn.Column:
    """Part 3 of the page: the measured table, the per-prompt table and one real step drawn;
    ``curve`` is this CPU's pass-time curve, which prices the passes; ``draft`` and
    ``step_draft`` name the drafts the table and the step were measured with."""
    css = [page_css(_CSS)]
    cost = tree_table.pass_costs(table, curve)
    pic = RealTreePicture(step)
    positions = max(int(p) for p in table.positions)
    return pn.Column(
        prose(intro),
        pn.pane.HTML(f'<p class="sdp-econ">{table_sentence(table, cost, draft)}</p>{table_html(table, cost)}'
                     f'<p class="sdp-small">Tokens per pass for each prompt at {positions} verified '
                     f'positions (the best in bold):</p>{prompts_html(table, positions)}'
                     + (f'<p class="sdp-small">{esc(poem)}</p>' if (poem := own_poem_sentence(table)) else "")
                     + (f'<p class="sdp-small">{mem}</p>' if (mem := memory_trees_sentence(
                         table, memory_trees())) else ""),
                     stylesheets=css, sizing_mode="stretch_width", name="ep8-real-table"),
        pn.pane.HTML(f'<p class="sdp-econ">{step_sentence(step, step_draft)}</p>', stylesheets=css,
                     sizing_mode="stretch_width", name="ep8-real-step"),
        prose(REAL_TREE_KEY, KEYS_CSS, _CSS),
        pn.FlexBox(pn.pane.Bokeh(pic.figure, sizing_mode="stretch_width", styles={"flex": "2 1 320px"}),
                   pn.pane.Bokeh(pic.mask_figure), sizing_mode="stretch_width", flex_wrap="wrap"),
        prose(note),
        sizing_mode="stretch_width",
    )
