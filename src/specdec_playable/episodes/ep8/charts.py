"""Episode 8's charts, each built once and updated through its source: the speedup against the
batch size, the pass cost against positions (the H200 and this CPU), one user's time per token
split, the chain's and the tree's tokens per pass against q, and a tree drawn."""

from __future__ import annotations

import math

import numpy as np
from bokeh.models import (BoxAnnotation, ColumnDataSource, FixedTicker, HoverTool, Label,
                          LinearColorMapper, Range1d, Span)
from bokeh.plotting import figure

from ...kit.words import plural
from ...sim import trees
from .state import ANCHORS, BATCH_MAX, BATCHES, N_ROUNDS, Q_GRID, BusyAndTrees, split_rows
from .words import batch_words, cost_words, split_words, tree_curve_words
from ...kit import theme
from ...kit.a11y import describe
from ...kit.keys import chart_key, glyph, swatch
from ...kit.labels import GAP_PX, Box, Frame, Tag, place, slid_inside, text_width


_CSS = f"{__package__}:ep8.css"

BATCH_KEY = chart_key(
    "Speedup against batch size",
    swatch("line", "you") + "your k, measured H200 pass times",
    swatch("dot", "draft") + "the ring: your batch B",
    swatch("line", "dashed") + "your k, beyond 512 positions (fit)",
    swatch("line", "best") + "best k at each batch",
    swatch("line", "edge") + "where your k stops paying",
    glyph("◆", "big") + "published: EAGLE-3 on an H100",
    swatch("zone") + "below 1×: slower",
)


COST_KEY = chart_key(
    "Cost of one pass against the positions it scores",
    swatch("dot", "big") + "H200, 8B shape",
    swatch("line", "dashed") + "H200, fit beyond 512",
    swatch("dot", "ember") + "this CPU, real model, float32",
    swatch("dot", "ember-open") + "same model, 4-bit weights",
    glyph("▲", "draft") + "your plain step and verify pass",
)


SPLIT_KEY = chart_key(
    "Time per generated token, per user, at your batch",
    swatch("bar", "big") + "plain decode step",
    swatch("bar", "draft") + "drafting",
    swatch("bar", "accepted") + "verifying",
)


TREE_KEY = chart_key(
    "Tokens per verify pass against acceptance rate",
    swatch("line", "you") + "chain (theory)",
    swatch("line", "tree") + "tree (theory)",
    swatch("dot") + f"measured, {N_ROUNDS:,} rounds, 95% CI",
)


#: The batch chart's plotting area at its narrowest (a 390 px phone), in pixels, and its x range.
BATCH_FRAME_PX = 300.0
_BATCH_X = (0.85, BATCH_MAX * 1.15)
#: The note in the slower zone: its text and size (px); it stays clear of the dotted line at the
#: break-even batch, at the right, else at the left, in one line or else in two.
SLOWER_TEXT, _SLOWER_PX = "slower than plain decoding", 12.0


def slower_note_at(edge: float | None) -> tuple[float, str, str]:
    """Where the slower zone's note goes (its batch, alignment and text) so that the dotted line
    at the break-even batch ``edge`` (None: not drawn) does not run through it, laid out for the
    narrowest frame (:data:`BATCH_FRAME_PX`)."""
    lo, hi = (math.log(v) for v in _BATCH_X)

    def px(b: float) -> float:
        return (math.log(b) - lo) / (hi - lo) * BATCH_FRAME_PX

    at_edge = px(edge) if edge is not None and _BATCH_X[0] < edge < _BATCH_X[1] else None
    right, left = BATCH_MAX * 1.1, 0.9
    for text in (SLOWER_TEXT, SLOWER_TEXT.replace(" plain", "\nplain")):
        w = text_width(text, _SLOWER_PX) + 2 * GAP_PX
        if at_edge is None or not px(right) - w < at_edge < px(right) + GAP_PX:
            return right, "right", text
        if not px(left) - GAP_PX < at_edge < px(left) + w:
            return left, "left", text
    return right, "right", SLOWER_TEXT


class BatchChart:
    """Speedup against batch size: your k (measured range solid, fitted range dashed), best k, anchors."""

    def __init__(self):
        self.you = ColumnDataSource(dict(b=[], s=[]), name="ep8-you-line")
        self.you_fit = ColumnDataSource(dict(b=[], s=[]), name="ep8-you-fit")
        self.best = ColumnDataSource(dict(b=[], s=[], k=[]), name="ep8-best")
        self.here = ColumnDataSource(dict(b=[1], s=[1.0], text=[""]), name="ep8-here")
        self.anchors = ColumnDataSource(dict(
            b=[a.batch for a in ANCHORS], s=[a.speedup for a in ANCHORS],
            system=[a.system for a in ANCHORS]), name="ep8-anchors")
        self.y_range = Range1d(0, 4, name="ep8-batch-y")
        fig = figure(
            name="ep8-batch-fig", height=340, sizing_mode="stretch_width", tools="",
            toolbar_location=None, x_axis_type="log", x_range=Range1d(*_BATCH_X),
            y_range=self.y_range, x_axis_label="batch size B (users decoded together, log scale)",
            y_axis_label="speedup over plain decoding (×)",
        )
        fig.add_layout(BoxAnnotation(top=1.0, fill_color=theme.SLOWER, fill_alpha=1.0, level="underlay"))
        fig.add_layout(Span(location=1.0, dimension="width", line_dash="dashed",
                            line_color=theme.REJECTED, line_width=1.5))
        self.slower = Label(x=BATCH_MAX * 1.1, y=0.08, text=SLOWER_TEXT, text_align="right",
                            text_font_size=f"{_SLOWER_PX:g}px", text_color=theme.REJECTED,
                            name="ep8-slower")
        fig.add_layout(self.slower)
        self.edge = Span(location=BATCH_MAX * 2, dimension="height", line_dash="dotted",
                         line_color=theme.REJECTED, line_width=2, name="ep8-edge")
        fig.add_layout(self.edge)
        best = fig.line("b", "s", source=self.best, line_color=theme.INK, line_dash="dashed",
                        line_width=1.5)
        you = fig.line("b", "s", source=self.you, line_color=theme.DRAFT, line_width=3.5)
        fig.line("b", "s", source=self.you_fit, line_color=theme.DRAFT, line_width=3.5,
                 line_dash=[6, 4])
        # "You" is a ring drawn under the published diamonds and wide enough to hold one, so a
        # diamond at your batch size stays visible inside it.
        fig.scatter("b", "s", source=self.here, size=20, fill_alpha=0.0,
                    line_color=theme.DRAFT, line_width=3)
        anchors = fig.scatter("b", "s", source=self.anchors, marker="diamond", size=13,
                              fill_color=theme.BIG, line_color=theme.INK)
        fig.add_tools(HoverTool(renderers=[you, best], tooltips=[
            ("batch", "@b"), ("speedup", "@s{0.00}×")], mode="vline"))
        fig.add_tools(HoverTool(renderers=[anchors], tooltips=[
            ("published", "@system"), ("batch", "@b"), ("speedup", "@s{0.0}×")]))
        fig.xaxis.ticker = FixedTicker(ticks=[1, 2, 4, 8, 16, 32, 64, 128, 256])
        theme.style_figure(fig)
        self.figure = fig

    def update(self, s: BusyAndTrees) -> None:
        costs = s.costs
        speed = np.asarray(costs.speedup, dtype=float)
        fitted = np.asarray(costs.verify_fitted, dtype=bool)
        b = BATCHES.astype(float)
        solid = np.where(fitted, np.nan, speed)
        # The dashed part starts at the last measured point, so the two pieces join.
        first_fit = int(np.argmax(fitted)) if fitted.any() else len(b)
        dashed = np.full_like(speed, np.nan)
        dashed[max(first_fit - 1, 0):] = speed[max(first_fit - 1, 0):]
        if not fitted.any():
            dashed[:] = np.nan
        best = s.best
        # NaN (not None) breaks a line: the arrays travel as typed arrays that keep it.
        self.you.data = dict(b=b, s=solid)
        self.you_fit.data = dict(b=b, s=dashed)
        self.best.data = dict(b=b.tolist(), s=best.speedup.tolist(), k=best.k.tolist())
        here = float(s.here.speedup)
        self.here.data = dict(b=[s.batch], s=[here], text=[f"{here:.2f}×"])
        edge = s.break_even_batch
        self.edge.location = float(edge) if edge is not None else BATCH_MAX * 2.0
        x, align, text = slower_note_at(edge)
        if (self.slower.x, self.slower.text_align, self.slower.text) != (x, align, text):
            self.slower.update(x=x, text_align=align, text=text)
        top = max(float(speed.max()), float(best.speedup.max()), max(a.speedup for a in ANCHORS), 1.0)
        self.y_range.end = math.ceil((top * 1.12) * 2) / 2
        describe(self.figure, batch_words(s))


#: Positions past which a pass mark's label ends at the mark instead of starting there (the last
#: quarter of the cost chart's log axis).
RIGHT_ALIGN_FROM = 600
#: The cost chart's plotting area at its narrowest (a 390 px phone), in pixels; its marks' labels.
COST_FRAME_PX = (300.0, 245.0)
_MARK_PX, _MARK_DY = 11.0, 10.0


def _cpu_series(fig, curve, name: str, label: str, *, hollow: bool) -> None:
    """One of the CPU's pass-time curves, relative to its own step: a line through squares,
    solid (float32) or hollow and dotted (4-bit), with a hover saying which."""
    src = ColumnDataSource(dict(n=curve.n_positions.tolist(),
                                r=(curve.median_ms / float(curve.time_ms(1))).tolist(),
                                ms=curve.median_ms.tolist()), name=name)
    fig.line("n", "r", source=src, line_color=theme.EMBER, line_width=2,
             line_dash="dotted" if hollow else "solid")
    dots = fig.scatter("n", "r", source=src, marker="square", size=7, line_width=2 if hollow else 1,
                       fill_color=theme.PAPER if hollow else theme.EMBER, line_color=theme.EMBER)
    fig.add_tools(HoverTool(renderers=[dots], tooltips=[
        (label, "@n"), ("time", "@ms{0.0} ms"), ("relative", "@r{0.00}×")]))


class CostChart:
    """Pass time over positions scored, relative to one position, with your two passes marked."""

    def __init__(self, s: BusyAndTrees):
        curve = s.curve
        base = float(curve.time_ms(1))
        n = curve.n_positions.astype(float)
        fit_n = np.geomspace(curve.n_max, BATCH_MAX * 17, 24)
        formats = s.cpu_formats
        q4_top = float(formats["q4"].median_ms[-1] / formats["q4"].time_ms(1))
        top = max(float(curve.fit_ms(fit_n[-1])) / float(curve.time_ms(1)), q4_top)
        self.marks = ColumnDataSource(dict(n=[1, 5], r=[1.0, 1.0], text=["", ""],
                                           align=["left", "left"], dx=[-4, -4],
                                           baseline=["top", "bottom"], dy=[_MARK_DY, -_MARK_DY]),
                                      name="ep8-marks")
        fig = figure(
            name="ep8-cost-fig", height=300, sizing_mode="stretch_width", tools="",
            toolbar_location=None, x_axis_type="log", y_axis_type="log",
            x_range=Range1d(0.8, BATCH_MAX * 17 * 1.3), y_range=Range1d(0.62, top * 1.25),
            x_axis_label="positions scored in one pass (log scale)",
            y_axis_label="time of the pass ÷ time for 1 position",
        )
        measured = ColumnDataSource(dict(n=n.tolist(), r=(curve.median_ms / base).tolist(),
                                         ms=curve.median_ms.tolist()), name="ep8-h200")
        fig.line("n", "r", source=measured, line_color=theme.BIG, line_width=2)
        dots = fig.scatter("n", "r", source=measured, size=6, fill_color=theme.BIG,
                           line_color=theme.BIG)
        fig.line(fit_n.tolist(), (curve.fit_ms(fit_n) / base).tolist(), line_color=theme.BIG,
                 line_width=2, line_dash=[6, 4])
        cpu, q4 = formats["f32"], formats["q4"]
        _cpu_series(fig, cpu, "ep8-cpu", "this CPU, float32, positions", hollow=False)
        _cpu_series(fig, q4, "ep8-q4", "this CPU, 4-bit, positions", hollow=True)
        fig.scatter("n", "r", source=self.marks, marker="triangle", size=13,
                    fill_color=theme.DRAFT, line_color=theme.INK)
        # "plain" and "verify" under or over their marks, clear of each other and of every
        # line of the chart (:meth:`mark_labels`); each starts at its mark, or ends there in
        # the right part of the axis, so none is cut at the plot's edge.
        fig.text("n", "r", text="text", source=self.marks, text_font_size=f"{_MARK_PX:g}px",
                 text_color=theme.DRAFT, text_baseline="baseline", text_align="align",
                 x_offset="dx", y_offset="dy")
        # The lines a mark's label must not be drawn across, in log units (x: positions, y: time).
        self._lines = [np.log(np.column_stack([n, curve.median_ms / base])),
                       np.log(np.column_stack([fit_n, curve.fit_ms(fit_n) / base])),
                       np.log(np.column_stack([cpu.n_positions, cpu.median_ms / float(cpu.time_ms(1))])),
                       np.log(np.column_stack([q4.n_positions, q4.median_ms / float(q4.time_ms(1))]))]
        self._frame = Frame(math.log(0.8), math.log(BATCH_MAX * 17 * 1.3), math.log(0.62),
                            math.log(top * 1.25), *COST_FRAME_PX)
        fig.add_tools(HoverTool(renderers=[dots], tooltips=[
            ("positions", "@n"), ("time", "@ms{0.00} ms"), ("relative", "@r{0.00}×")]))
        fig.xaxis.ticker = FixedTicker(ticks=[1, 4, 16, 64, 256, 1024, 4096])
        fig.yaxis.ticker = FixedTicker(ticks=[1, 2, 4, 8, 16, 32])
        theme.style_figure(fig)
        self.figure = fig
        self._curve, self._base = curve, base

    def mark_labels(self, n: list[float], r: list[float]) -> list[Tag]:
        """Where "plain" and "verify" go (in log units): "plain" under its mark and "verify"
        over its own where that is clear of the chart's lines, else the other way, else beside."""
        f = self._frame
        px = [np.column_stack([f.sx(ln[:, 0]), f.sy(ln[:, 1])]) for ln in self._lines]
        marks = [Box(f.sx(math.log(x)) - 7, f.sy(math.log(y)) - 7, f.sx(math.log(x)) + 7,
                     f.sy(math.log(y)) + 7) for x, y in zip(n, r)]
        choices = []
        for i, (x, y, text) in enumerate(zip(n, r, ("plain", "verify"))):
            right = x > RIGHT_ALIGN_FROM
            tag = Tag(math.log(x), math.log(y), text, size=_MARK_PX, align="right" if right else "left",
                      dx=4 if right else -4, baseline="top", dy=_MARK_DY)
            over = tag.moved(baseline="bottom", dy=-_MARK_DY)
            spots = [tag, over] if i == 0 else [over, tag]
            spots += [t.moved(dy=t.dy * 2.2) for t in spots]
            choices.append([slid_inside(t, f) for t in spots])
        placed = place(choices, f, taken=marks, lines=[px, px], required=[True, True])
        return [t for t in placed if t is not None]

    def update(self, s: BusyAndTrees) -> None:
        n = [s.batch, s.batch * (s.k + 1)]
        r = [float(self._curve.time_ms(x)) / self._base for x in n]
        tags = self.mark_labels(n, r)
        self.marks.data = dict(n=n, r=r, text=[t.text for t in tags], align=[t.align for t in tags],
                               dx=[t.dx for t in tags], baseline=[t.baseline for t in tags],
                               dy=[t.dy for t in tags])
        describe(self.figure, cost_words(s, self._curve, self._base))


class SplitChart:
    """Time per generated token of one user: plain decoding against draft + verify."""

    def __init__(self):
        self.source = ColumnDataSource(dict(row=[], plain=[], draft=[], verify=[]), name="ep8-split")
        self.x_range = Range1d(0, 10, name="ep8-split-x")
        fig = figure(
            name="ep8-split-fig", height=150, sizing_mode="stretch_width", tools="",
            toolbar_location=None, y_range=["speculative", "plain decoding"], x_range=self.x_range,
            x_axis_label="ms per generated token, per user",
        )
        bars = fig.hbar_stack(["plain", "draft", "verify"], y="row", height=0.6, source=self.source,
                              color=[theme.BIG, theme.DRAFT, theme.ACCEPTED], line_color=theme.PAPER)
        fig.add_tools(HoverTool(renderers=bars, tooltips=[
            ("plain step", "@plain{0.00} ms"), ("drafting", "@draft{0.00} ms"),
            ("verifying", "@verify{0.00} ms")]))
        fig.ygrid.grid_line_color = None
        theme.style_figure(fig)
        self.figure = fig

    def update(self, s: BusyAndTrees) -> None:
        rows = split_rows(s)
        self.source.data = rows
        top = max(rows["plain"][0], rows["draft"][1] + rows["verify"][1])
        self.x_range.end = top * 1.08
        describe(self.figure, split_words(s))


class TreeCurves:
    """Tokens per verify pass against q: chain and tree, theory curves and measured dots."""

    def __init__(self):
        self.lines = ColumnDataSource(dict(q=[], chain=[], tree=[]), name="ep8-tree-lines")
        self.dots = ColumnDataSource(dict(q=[], y=[], lo=[], hi=[], color=[], what=[]),
                                     name="ep8-tree-dots")
        self.y_range = Range1d(0.8, 5, name="ep8-tree-y")
        fig = figure(
            name="ep8-tree-fig", height=320, sizing_mode="stretch_width", tools="",
            toolbar_location=None, x_range=Range1d(0, 1), y_range=self.y_range,
            x_axis_label="acceptance rate q of each candidate",
            y_axis_label="tokens per verify pass",
        )
        self.you = Span(location=0.5, dimension="height", line_dash="dotted", line_color=theme.MUTED,
                        line_width=1.5)
        fig.add_layout(self.you)
        chain = fig.line("q", "chain", source=self.lines, line_color=theme.DRAFT, line_width=3)
        tree = fig.line("q", "tree", source=self.lines, line_color=theme.ACCEPTED, line_width=3,
                        line_dash=[8, 3])
        fig.segment("q", "lo", "q", "hi", source=self.dots, line_color="color", line_width=2)
        dots = fig.scatter("q", "y", source=self.dots, size=9, fill_color=theme.PAPER,
                           line_color="color", line_width=2.5)
        fig.add_tools(HoverTool(renderers=[chain, tree], mode="vline", tooltips=[
            ("q", "@q{0.00}"), ("chain", "@chain{0.00}"), ("tree", "@tree{0.00}")]))
        fig.add_tools(HoverTool(renderers=[dots], tooltips=[
            ("", "@what"), ("measured", "@y{0.00}"), ("95% CI", "@lo{0.00}–@hi{0.00}")]))
        theme.style_figure(fig)
        self.figure = fig

    def update(self, s: BusyAndTrees) -> None:
        chain, tree = s.tree_curves()
        self.lines.data = dict(q=Q_GRID.tolist(), chain=chain.tolist(), tree=tree.tolist())
        sims = ((s.chain_sim, theme.DRAFT, f"chain of {s.positions}"),
                (s.tree_sim, theme.ACCEPTED, f"tree {s.width} × {s.depth}"))
        self.dots.data = dict(
            q=[s.tree_q, s.tree_q], y=[r.tokens_per_round for r, _, _ in sims],
            lo=[r.ci_low for r, _, _ in sims], hi=[r.ci_high for r, _, _ in sims],
            color=[c for _, c, _ in sims], what=[w for _, _, w in sims])
        self.you.location = s.tree_q
        self.y_range.end = math.ceil(float(max(chain.max(), tree.max())) + 0.6)
        describe(self.figure, tree_curve_words(s))


class TreePicture:
    """The draft tree (root, candidates by level) and the attention mask its verify pass needs."""

    def __init__(self):
        self.nodes = ColumnDataSource(dict(x=[], y=[], text=[], fill=[], marker=[]), name="ep8-nodes")
        self.edges = ColumnDataSource(dict(x0=[], y0=[], x1=[], y1=[]), name="ep8-edges")
        self.mask = ColumnDataSource(dict(i=[], j=[], v=[], what=[]), name="ep8-mask")
        self.tree_x = Range1d(-0.5, 4.5, name="ep8-tree-x")
        self.tree_y = Range1d(-2.5, 2.5, name="ep8-tree-y2")
        fig = figure(name="ep8-tree-pic", height=260, sizing_mode="stretch_width", tools="",
                     toolbar_location=None, x_range=self.tree_x, y_range=self.tree_y,
                     x_axis_label="level (position ahead of the last accepted token)")
        fig.segment("x0", "y0", "x1", "y1", source=self.edges, line_color=theme.MUTED, line_width=1.5)
        fig.scatter("x", "y", source=self.nodes, size=22, fill_color="fill", line_color=theme.INK,
                    marker="marker")
        fig.text("x", "y", text="text", source=self.nodes, text_align="center",
                 text_baseline="middle", text_font_size="10px", text_color=theme.PAPER)
        fig.yaxis.visible = False
        fig.ygrid.grid_line_color = None
        fig.xaxis.ticker = FixedTicker(ticks=list(range(0, 9)))
        theme.style_figure(fig)
        self.figure = fig

        self.mask_range = Range1d(-0.5, 5.5, name="ep8-mask-range")
        self.mask_y = Range1d(5.5, -0.5, name="ep8-mask-y")
        mfig = figure(name="ep8-mask-fig", height=260, width=280, tools="", toolbar_location=None,
                      x_range=self.mask_range, y_range=self.mask_y,
                      x_axis_label="may look at node …", y_axis_label="node")
        mapper = LinearColorMapper(palette=[theme.GRID, theme.BIG], low=0, high=1)
        rects = mfig.rect("j", "i", width=0.92, height=0.92, source=self.mask,
                          fill_color={"field": "v", "transform": mapper}, line_color=None)
        mfig.add_tools(HoverTool(renderers=[rects], tooltips=[("", "@what")]))
        mfig.grid.grid_line_color = None
        theme.style_figure(mfig)
        self.mask_figure = mfig

    def update(self, s: BusyAndTrees) -> None:
        parents = s.tree
        pos = dict(x=trees.depths(parents).astype(float), y=trees.places(trees.depths(parents)))
        n = len(parents)
        rank = np.zeros(n, dtype=int)          # 0 = the draft's top guess at its level
        for i in range(n):
            siblings = np.flatnonzero(parents[: i] == parents[i])
            rank[i] = siblings.size
        xs = [0.0, *pos["x"].tolist()]
        ys = [0.0, *pos["y"].tolist()]
        text = ["root", *[str(i) for i in range(n)]]
        fill = [theme.INK, *[theme.DRAFT if r == 0 else theme.MUTED for r in rank]]
        # The shape says it too: a level's top guess is round, the other candidates square.
        marker = ["circle", *["circle" if r == 0 else "square" for r in rank]]
        self.nodes.data = dict(x=xs, y=ys, text=text, fill=fill, marker=marker)
        px = [0.0 if p < 0 else pos["x"][p] for p in parents]
        py = [0.0 if p < 0 else pos["y"][p] for p in parents]
        self.edges.data = dict(x0=px, y0=py, x1=pos["x"].tolist(), y1=pos["y"].tolist())
        spread = max(float(np.abs(pos["y"]).max()), 1.0)
        self.tree_x.end = float(pos["x"].max()) + 0.5
        self.tree_y.start, self.tree_y.end = -spread - 0.6, spread + 0.6
        mask = trees.ancestor_mask(parents)
        ii, jj = np.indices(mask.shape)
        what = [f"node {i} {'sees' if v else 'does not see'} node {j}"
                for i, j, v in zip(ii.ravel(), jj.ravel(), mask.ravel())]
        self.mask.data = dict(i=ii.ravel().tolist(), j=jj.ravel().tolist(),
                              v=mask.ravel().astype(int).tolist(), what=what)
        self.mask_range.end = n - 0.5
        self.mask_y.start = n - 0.5
        top = int((rank == 0).sum())
        describe(self.figure, f"The draft tree of {s.width} × {s.depth}: {plural(n, 'node')} on "
                              f"{plural(s.depth, 'level')} under the root; round nodes are each level's "
                              f"top guess ({top}), square ones the other candidates ({n - top}).")
        describe(self.mask_figure, f"The tree's attention mask, {n} × {n}: row i may look at "
                                   f"column j where the cell is filled, its own node and its "
                                   f"ancestors; {int(mask.sum())} of {n * n} cells are filled.")
