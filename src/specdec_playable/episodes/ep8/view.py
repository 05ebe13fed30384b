"""Episode 8's view: speculation at a batch size, chains against trees, and the real model's
token trees.

Figures are built once and updated through their sources. The sentences are plain functions of
the state (:func:`busy_html`, :func:`split_rows`, :func:`tree_html`, :func:`table_html`) that a
test calls without a browser.
"""

from __future__ import annotations

import math

import numpy as np
import panel as pn
import param
from bokeh.models import (BoxAnnotation, CDSView, ColumnDataSource, FixedTicker, HoverTool,
                          IndexFilter, Label, LinearColorMapper, Range1d, Span)
from bokeh.plotting import figure

from ..data import hardware
from ..data.machine import this_machine
from ..data import tree_table
from ..data.tree_table import TreeVsChain
from ..lm.tree_step import TreeStep
from ..prose.words import faster_or_slower, noun, plural
from ..sim import trees
from ..state.ep8 import (ANCHORS, BATCH_MAX, BATCHES, K_SLIDER_MAX, N_ROUNDS, Q_GRID, BusyAndTrees,
                         real_tree_drafts, real_tree_step, real_tree_table)
from .kit import theme
from .kit.theme import STATUS
from .kit.a11y import describe
from .kit.deferred import when_near
from .kit.inputs import control_help
from .kit.keys import KEYS_CSS, chart_key, glyph, swatch
from .kit.livehtml import LiveHTML
from .kit.page import StateView, beside, esc, page_css, prose, slider, stat
from .kit.roofline import roofline_html
from .kit.tokens import token_label

_CSS = "ep8.css"

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


def table_sentence(table: TreeVsChain, cost: np.ndarray, draft: str = "the draft head") -> str:
    """What the table says: the tree against the chain, and whether either pays on this CPU
    (``cost``: each row's round in plain steps, :func:`data.tree_table.pass_costs`; ``draft``: the table's draft
    in words, :func:`specdec_playable.data.tree_table.draft_words`)."""
    groups = sorted(tree_table.pooled(table))
    parts = []
    for n in groups:
        chain, best = tree_table.best_tree(table, n)
        gain = table.tokens_per_pass[best] - table.tokens_per_pass[chain]
        if round(gain, 2) > 0:
            parts.append(f"at {n} positions the best tree ({esc(table.label[best])}) wrote "
                         f"{table.tokens_per_pass[best]:.2f} tokens per pass against the chain's "
                         f"{table.tokens_per_pass[chain]:.2f}")
        else:
            parts.append(f"at {n} positions no tree beat the chain's "
                         f"{table.tokens_per_pass[chain]:.2f} tokens per pass")
    chain, _ = tree_table.best_tree(table, groups[0])
    q = table.q[chain]
    gains = [table.tokens_per_pass[b] - table.tokens_per_pass[c]
             for c, b in (tree_table.best_tree(table, n) for n in groups)]
    tpp = table.tokens_per_pass[table.rows()]
    cost = np.asarray(cost)[table.rows()]
    paying = tpp > cost
    if paying.all():
        pays = "Every shape wrote more tokens per pass than a pass costs in plain steps, so all of them pay here."
    elif not paying.any():
        pays = (f"None pays on this CPU: a round costs {cost.min():.2f} to {cost.max():.2f} plain "
                f"steps and writes at most {tpp.max():.2f} tokens, so plain decoding is faster.")
    else:
        pays = (f"{int(paying.sum())} of {paying.size} shapes wrote more tokens per pass than a "
                "round costs in plain steps.")
    if q < 0.25:
        reach = ("so a chain rarely gets past its first guess, and spare candidates at the first "
                 "level are what a tree adds")
    elif max(round(g, 2) for g in gains) > 0:
        reach = "and a tree's spare candidates catch some of the guesses the chain misses"
    else:
        reach = "and spare candidates did not catch what the chain misses"
    return (f"Pooled over the prompts, {'; '.join(parts)}. {esc(draft).capitalize()}'s top guess "
            f"was accepted {q:.1%} of the times the big model checked it, {reach}. {pays}")


def step_sentence(step: TreeStep, draft: str = "the draft head") -> str:
    """The drawn step in words: what was drafted, checked and kept."""
    n = len(step.tokens)
    kept = "".join(step.texts[i] for i in step.path)
    levels = int(step.depths.max()) if n else 0
    own = ("a bonus token, because the path reached a leaf" if step.mark == "bonus"
           else "its correction where the path's guesses ran out" if step.mark == "correction"
           else "its own token, as a plain step would")
    if step.path:
        kept_words = (f"It agreed with the path <code>{esc(token_label(kept))}</code> "
                      f"({len(step.path)} drafted {noun(len(step.path), 'token')})")
    else:
        kept_words = "It agreed with none of the candidates"
    return (f"After <code>{esc(token_label(step.root_text))}</code> {esc(draft)} offered {n} "
            f"{noun(n, 'candidate')} over {plural(levels, 'level')}, and the big model scored all "
            f"of them and the root in one pass of {n + 1} positions. {kept_words}, and wrote "
            f"<code>{esc(token_label(step.text))}</code>, {own}: "
            f"{plural(len(step.path) + 1, 'token')} from one pass.")


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


def real_mask_words(step: TreeStep) -> str:
    """The real step's mask as words: how many cells are filled, which rows are the kept path's."""
    size = step.mask.shape[0]
    return (f"The attention mask of that pass, {size} × {size}: row i may look at column j where the "
            f"cell is filled, its own token and its ancestors; {int(step.mask.sum())} of "
            f"{size * size} cells are filled, and the {len(step.path) + 1} rows of the kept path, "
            "root included, are marked ✓.")


def real_tree_words(step: TreeStep) -> str:
    """The real tree's text alternative: what the pass did with each guess, in words."""
    acc = [token_label(t) for t, a in zip(step.texts, step.accepted) if a]
    rej = int(sum(bool(j) and not a for a, j in zip(step.accepted, step.judged)))
    unchecked = int(sum(not j for j in step.judged))
    kept = " ".join(f"“{t}”" for t in acc) or "none"
    return (f"One verify pass of the real model over a tree of {plural(len(step.texts), 'guess', 'guesses')} "
            f"after “{token_label(step.root_text)}”: {len(acc)} accepted, on the kept path ({kept}); "
            f"{rej} checked and rejected; {unchecked} not checked, under a rejected guess; then the "
            f"big model's own token “{token_label(step.text)}” ({step.mark}). Marks: ✓ accepted, "
            "✗ rejected, – not checked, ★ or + the big model's own token.")


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
                     f'positions (the best in bold):</p>{prompts_html(table, positions)}',
                     stylesheets=css, sizing_mode="stretch_width", name="ep8-real-table"),
        pn.pane.HTML(f'<p class="sdp-econ">{step_sentence(step, step_draft)}</p>', stylesheets=css,
                     sizing_mode="stretch_width", name="ep8-real-step"),
        prose(REAL_TREE_KEY, KEYS_CSS, _CSS),
        pn.FlexBox(pn.pane.Bokeh(pic.figure, sizing_mode="stretch_width", styles={"flex": "2 1 320px"}),
                   pn.pane.Bokeh(pic.mask_figure), sizing_mode="stretch_width", flex_wrap="wrap"),
        prose(note),
        sizing_mode="stretch_width",
    )


#: Where Episode 5's map lives, for the link that puts this batch's effective cost on it.
EP5_SLUG = "ep5_the_break_even_map"

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
    swatch("dot", "ember-open") + "same, llama.cpp, 4-bit",
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


def busy_html(s: BusyAndTrees) -> str:
    """What the chosen batch does to one round, and where speculation stops paying."""
    h = s.here
    b, k = s.batch, s.k
    plain, verify = float(h.plain_step_ms), float(h.verify_ms)
    speed = float(h.speedup)
    rnd = float(h.round_ms) / plain
    n_verify = b * (k + 1)
    fitted = " (roofline fit: beyond the measured 512 positions)" if bool(h.verify_fitted) else ""
    how = faster_or_slower(speed)
    out = [
        stat(f"{speed:.2f}×", f"speedup at batch {b:,}, k = {k} (H200 curve)",
             css_class="slower" if how == "slower" else ""),
        stat(f"{float(h.tokens_per_round):.2f}", "tokens per user per round (theory)"),
        stat(f"{verify / plain:.2f}×", "a verify pass, in plain steps"),
        f'<p class="sdp-econ">At batch {b:,} a plain decode step scores {plain_positions(b)} in '
        f"{plain:.2f} ms. A verify pass scores {b:,} × {k + 1} = {plural(n_verify, 'position')} in "
        f"{verify:.2f} ms{fitted}, {verify / plain:.2f} times a plain step. With the draft steps, "
        f"a round takes {rnd:.2f} plain steps and yields {float(h.tokens_per_round):.2f} tokens per "
        "user, so "
        + (f"speculation and plain decoding are level: <strong>{speed:.2f}×</strong>.</p>"
           if how == "as fast" else
           f"speculation is {how}: <strong>{speed:.2f}×</strong> as fast as plain decoding.</p>"),
    ]
    out.append(f'<p class="sdp-econ">{batch_limit_sentence(s)} {best_k_sentence(s)}</p>')
    c_eff = s.effective_cost
    link = ""
    if c_eff <= 1.0 and s.k <= 16:
        link = (f' <a href="./{EP5_SLUG}?q={s.q:.2f}&amp;k={s.k}&amp;c={c_eff:.3f}">'
                "Open Episode 5 at that cost</a>.")
    out.append(
        f'<p class="sdp-note">In Episode 5’s formula the busy verify pass acts like a dearer draft: '
        f"this batch gives the speedup of a draft cost c = {c_eff:.3f} instead of {s.c:.3f}.{link}</p>")
    return "".join(out)


def plain_positions(batch: int) -> str:
    return plural(batch, "position") + (" (one per user)" if batch > 1 else "")


def batch_limit_sentence(s: BusyAndTrees) -> str:
    """Where the chosen k stops paying, over the chart's batch sizes."""
    edge = s.break_even_batch
    if edge is None:
        return (f"With k = {s.k}, speculation still pays at every batch size up to "
                f"{BATCH_MAX:,} at this q and c.")
    if edge == 1:
        return f"With k = {s.k}, speculation does not pay even for a single user at this q and c."
    return (f"With k = {s.k}, speculation stops paying at batch {edge:,}: from there on the verify "
            "pass costs more than its extra tokens are worth.")


def best_k_sentence(s: BusyAndTrees) -> str:
    """The best draft length at the chosen batch, or that not speculating is best."""
    best = s.best
    i = s.batch - 1
    bk, bs = int(best.k[i]), float(best.speedup[i])
    if not bool(best.speculate[i]):
        return (f"At batch {s.batch:,} no draft length from 1 to {K_SLIDER_MAX} beats plain decoding (the best, k = {bk}, gives {bs:.2f}×): the best choice here "
                "is not to speculate.")
    if bk == s.k:
        return f"At batch {s.batch:,}, k = {s.k} is also the best draft length ({bs:.2f}×)."
    return f"At batch {s.batch:,} the best draft length is k = {bk} ({bs:.2f}×)."


def anchors_html(s: BusyAndTrees) -> str:
    """The published points beside this model's speedup at the same batch sizes and your knobs."""
    batches = [a.batch for a in ANCHORS]
    model = batching_speedups(s, batches)
    rows = "".join(
        f"<tr><td>{a.batch}</td><td>{a.speedup:.1f}×</td><td>{m:.2f}×</td></tr>"
        for a, m in zip(ANCHORS, model))
    first, last = ANCHORS[0], ANCHORS[-1]
    pub_fall = 1 - last.speedup / first.speedup
    model_fall = 1 - model[-1] / model[0]
    if model_fall < pub_fall:
        gist = (f"From batch {first.batch} to {last.batch} the published speedup falls by "
                f"{pub_fall:.0%}; the pass-time model alone, at your q, k and c, falls by "
                f"{max(model_fall, 0):.0%}. So the cost of scoring more positions explains only part "
                "of the fall. A real server also pays for attention over every user's context, for "
                "drafting and checking a tree of 16 tokens per user, and for scheduling, which "
                "this model leaves out.")
    else:
        gist = (f"From batch {first.batch} to {last.batch} the published speedup falls by "
                f"{pub_fall:.0%}; the pass-time model, at your q, k and c, falls by {model_fall:.0%}.")
    return (f'<table class="ep8-anchors"><thead><tr><th>batch</th><th>published</th>'
            f'<th>this model, your settings</th></tr></thead><tbody>{rows}</tbody></table>'
            f'<p class="sdp-econ">{gist}</p><p class="sdp-note">Source: {esc(first.source)}</p>')


def cpu_html(s: BusyAndTrees) -> str:
    """What the same knobs give on this server's CPU, where even one user's verify pass is dear."""
    h = s.cpu
    k = s.k
    ratio = float(h.verify_ms / h.plain_step_ms)
    speed = float(h.speedup)
    how = faster_or_slower(speed)
    cpu = s.cpu_passes
    measured = (f"Both were {cpu.where} ({cpu.details})" if s.cpu_measured else
                f"The pass over {k + 1} is interpolated between points {cpu.where} ({cpu.details})")
    q_star = s.cpu_break_even_q
    if not np.isfinite(q_star):
        need = f"Here no acceptance rate makes k = {k} at c = {s.c:.3f} pay"
    elif q_star <= 0.0:
        need = (f"Here even a draft that is never right breaks even at k = {k} and c = {s.c:.3f}: "
                f"the verify pass and the drafts cost no more than a plain step")
    else:
        need = (f"Here speculation needs an acceptance rate of at least q = {q_star:.2f} at k = {k} "
                f"and c = {s.c:.3f} just to break even")
    return (
        f'<p class="sdp-econ">On this server there is one user and no GPU: the real model of '
        f"Episode 7 runs on {esc(this_machine().describe())}. A pass over {k + 1} positions takes "
        f"{float(h.verify_ms):.1f} ms against {float(h.plain_step_ms):.1f} ms for one: "
        f"<strong>{ratio:.2f}×</strong>, where the H200 needs "
        f"{float(s.curve.time_ms(k + 1) / s.curve.time_ms(1)):.2f}×. {esc(measured)}. "
        + ("Verification is not free even for a single user, so " if ratio >= 1.1 else
           "Verification is nearly free here too, so ")
        + f"the same q, k and c give {speed:.2f}× here "
        + ("(a draw)" if how == "as fast" else f"({how})") + f". {need}.</p>")


def batching_speedups(s: BusyAndTrees, batches) -> list[float]:
    """The chosen k's speedup at the given batch sizes."""
    costs = s.costs
    return [float(costs.speedup[b - 1]) for b in batches]


def split_rows(s: BusyAndTrees) -> dict:
    """Time per generated token of one user, in ms: plain decoding, and speculation's two parts."""
    h = s.here
    e = float(h.tokens_per_round)
    return dict(
        row=["plain decoding", "speculative"],
        plain=[float(h.plain_step_ms), 0.0],
        draft=[0.0, float(h.draft_ms) / e],
        verify=[0.0, float(h.verify_ms) / e],
    )


def tree_html(s: BusyAndTrees) -> str:
    """Chain against tree at the visitor's q: theory, measured, and where the winner changes."""
    n, w, d = s.positions, s.width, s.depth
    ch, tr = s.chain_sim, s.tree_sim
    out = [
        stat(f"{ch.tokens_per_round:.2f}", f"chain of {n}: tokens per pass, measured "
             f"(theory {s.chain_theory:.2f})"),
        stat(f"{tr.tokens_per_round:.2f}", f"tree {w} × {d}: tokens per pass, measured "
             f"(theory {s.tree_theory:.2f})"),
    ]
    intro = (f"Both ask the big model to score {plural(n, 'position')} in one pass: the chain "
             f"guesses {plural(n, 'token')} in a row; the tree guesses {plural(w, 'candidate')} at "
             f"each of {plural(d, 'level')}, all hanging under the previous level’s top guess.")
    if w == 1:
        out.append(f'<p class="sdp-econ">{intro} With one candidate per level the tree is the '
                   "chain, so the two curves are one.</p>")
        return "".join(out)
    gap = s.tree_theory - s.chain_theory
    if abs(gap) < 0.005:
        now = f"At q = {s.tree_q:.2f} the two yield the same in theory."
    else:
        winner = "tree" if gap > 0 else "chain"
        now = (f"At q = {s.tree_q:.2f} the {winner} yields {abs(gap):.2f} more "
               f"{noun(round(abs(gap), 2), 'token')} per pass in theory.")
    chain_curve, tree_curve = s.tree_curves()
    xs = trees.crossings(chain_curve, tree_curve, Q_GRID)
    if len(xs) == 1:
        where = (f"The tree wins below q ≈ {xs[0]:.2f}, the chain above: when guesses are poor, "
                 "spare candidates rescue a position; when they are good, depth pays more.")
    elif not xs:
        where = "Over every q the same one wins." if gap else ""
    else:
        where = "The lead changes at q ≈ " + ", ".join(f"{x:.2f}" for x in xs) + "."
    out.append(f'<p class="sdp-econ">{intro} {now} {where}</p>')
    return "".join(out)


def batch_words(s: BusyAndTrees) -> str:
    """The batch chart's text alternative: your k's speedup across batch sizes and at yours."""
    speed = np.asarray(s.costs.speedup, dtype=float)
    edge = s.break_even_batch
    stops = (f"it stops paying at batch {edge:,}" if edge is not None else
             f"it pays at every batch up to {BATCH_MAX:,}")
    return (f"Line chart of the speedup over plain decoding against the batch size B (log scale), "
            f"for q = {s.q:.2f}, k = {s.k}, c = {s.c:.3f} on the H200's measured pass times: "
            f"{speed[0]:.2f}× at B = 1, {speed[-1]:.2f}× at B = {BATCH_MAX:,}; {stops}. The ring, "
            f"your batch B = {s.batch:,}: {float(s.here.speedup):.2f}×. The dashed line is the best "
            f"k at each batch ({float(np.asarray(s.best.speedup).max()):.2f}× at best).")


def split_words(s: BusyAndTrees) -> str:
    """The split chart's text alternative: one user's time per token, plain and speculative."""
    r = split_rows(s)
    return (f"Bars of the time per generated token for one user at batch {s.batch:,}: plain decoding "
            f"{r['plain'][0]:.2f} ms; speculative {r['draft'][1] + r['verify'][1]:.2f} ms, of which "
            f"{r['draft'][1]:.2f} ms drafting and {r['verify'][1]:.2f} ms verifying.")


def cost_words(s: BusyAndTrees, curve, base: float) -> str:
    """The cost chart's text alternative: where your plain step and verify pass sit on it."""
    n = [s.batch, s.batch * (s.k + 1)]
    r = [float(curve.time_ms(x)) / base for x in n]
    return (f"Time of one pass relative to scoring one position, against the positions it scores, "
            f"both axes logarithmic, for an H200 with an 8B model shape and for this CPU with the real "
            f"model. At your batch the plain step scores {n[0]:,} positions ({r[0]:.2f}× one position) "
            f"and the verify pass {n[1]:,} ({r[1]:.2f}×).")


def tree_curve_words(s: BusyAndTrees) -> str:
    """The tree chart's text alternative: both curves at your q, and the measured dots."""
    ch, tr = s.chain_sim, s.tree_sim
    return (f"Lines of the tokens per verify pass against each candidate's acceptance rate q, theory, "
            f"for a chain of {s.positions} and a tree of {s.width} × {s.depth} (the same "
            f"{s.positions} positions). At q = {s.tree_q:.2f}: chain {s.chain_theory:.2f} (measured "
            f"{ch.tokens_per_round:.2f}), tree {s.tree_theory:.2f} (measured {tr.tokens_per_round:.2f}).")


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
            toolbar_location=None, x_axis_type="log", x_range=Range1d(0.85, BATCH_MAX * 1.15),
            y_range=self.y_range, x_axis_label="batch size B (users decoded together, log scale)",
            y_axis_label="speedup over plain decoding (×)",
        )
        fig.add_layout(BoxAnnotation(top=1.0, fill_color=theme.SLOWER, fill_alpha=1.0, level="underlay"))
        fig.add_layout(Span(location=1.0, dimension="width", line_dash="dashed",
                            line_color=theme.REJECTED, line_width=1.5))
        fig.add_layout(Label(x=BATCH_MAX * 1.1, y=0.08, text="slower than plain decoding",
                             text_align="right", text_font_size="12px", text_color=theme.REJECTED))
        self.edge = Span(location=BATCH_MAX * 2, dimension="height", line_dash="dotted",
                         line_color=theme.REJECTED, line_width=2, name="ep8-edge")
        fig.add_layout(self.edge)
        best = fig.line("b", "s", source=self.best, line_color=theme.INK, line_dash="dashed",
                        line_width=1.5)
        you = fig.line("b", "s", source=self.you, line_color=theme.DRAFT, line_width=3.5)
        fig.line("b", "s", source=self.you_fit, line_color=theme.DRAFT, line_width=3.5,
                 line_dash=[6, 4])
        anchors = fig.scatter("b", "s", source=self.anchors, marker="diamond", size=13,
                              fill_color=theme.BIG, line_color=theme.INK)
        fig.scatter("b", "s", source=self.here, size=12, fill_color=theme.PAPER,
                    line_color=theme.DRAFT, line_width=3)
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
        top = max(float(speed.max()), float(best.speedup.max()), max(a.speedup for a in ANCHORS), 1.0)
        self.y_range.end = math.ceil((top * 1.12) * 2) / 2
        describe(self.figure, batch_words(s))


#: Positions past which a pass mark's label ends at the mark instead of starting there (the last
#: quarter of the cost chart's log axis).
RIGHT_ALIGN_FROM = 600


class CostChart:
    """Pass time over positions scored, relative to one position, with your two passes marked."""

    def __init__(self, s: BusyAndTrees):
        curve = s.curve
        base = float(curve.time_ms(1))
        n = curve.n_positions.astype(float)
        fit_n = np.geomspace(curve.n_max, BATCH_MAX * 17, 24)
        q4 = hardware.llamacpp_curve()
        q4_top = float(q4.median_ms[-1] / q4.time_ms(1))
        top = max(float(curve.fit_ms(fit_n[-1])) / float(curve.time_ms(1)), q4_top)
        self.marks = ColumnDataSource(dict(n=[1, 5], r=[1.0, 1.0], text=["", ""],
                                           align=["left", "left"], dx=[-4, -4]), name="ep8-marks")
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
        cpu = s.cpu_curve
        cpu_src = ColumnDataSource(dict(n=cpu.n_positions.tolist(),
                                        r=(cpu.median_ms / float(cpu.time_ms(1))).tolist(),
                                        ms=cpu.median_ms.tolist()), name="ep8-cpu")
        fig.line("n", "r", source=cpu_src, line_color=theme.EMBER, line_width=2)
        cpu_dots = fig.scatter("n", "r", source=cpu_src, marker="square", size=7,
                               fill_color=theme.EMBER, line_color=theme.EMBER)
        fig.add_tools(HoverTool(renderers=[cpu_dots], tooltips=[
            ("this CPU, float32, positions", "@n"), ("time", "@ms{0.0} ms"), ("relative", "@r{0.00}×")]))
        q4_src = ColumnDataSource(dict(n=q4.n_positions.tolist(),
                                       r=(q4.median_ms / float(q4.time_ms(1))).tolist(),
                                       ms=q4.median_ms.tolist()), name="ep8-q4")
        fig.line("n", "r", source=q4_src, line_color=theme.EMBER, line_width=2, line_dash="dotted")
        q4_dots = fig.scatter("n", "r", source=q4_src, marker="square", size=7, line_width=2,
                              fill_color=theme.PAPER, line_color=theme.EMBER)
        fig.add_tools(HoverTool(renderers=[q4_dots], tooltips=[
            ("llama.cpp 4-bit, positions", "@n"), ("time", "@ms{0.0} ms"), ("relative", "@r{0.00}×")]))
        fig.scatter("n", "r", source=self.marks, marker="triangle", size=13,
                    fill_color=theme.DRAFT, line_color=theme.INK)
        # "plain" under its mark and "verify" over its own, so they never collide, even when
        # k = 1 puts the two marks side by side; each starts at its mark, or ends there in the
        # right part of the axis, so none is cut at the plot's edge.
        for i, (baseline, dy) in enumerate((("top", 10), ("bottom", -10))):
            fig.text("n", "r", text="text", source=self.marks, text_font_size="11px",
                     text_color=theme.DRAFT, text_baseline=baseline, text_align="align",
                     x_offset="dx", y_offset=dy,
                     view=CDSView(filter=IndexFilter([i])))
        fig.add_tools(HoverTool(renderers=[dots], tooltips=[
            ("positions", "@n"), ("time", "@ms{0.00} ms"), ("relative", "@r{0.00}×")]))
        fig.xaxis.ticker = FixedTicker(ticks=[1, 4, 16, 64, 256, 1024, 4096])
        fig.yaxis.ticker = FixedTicker(ticks=[1, 2, 4, 8, 16, 32])
        theme.style_figure(fig)
        self.figure = fig
        self._curve, self._base = curve, base

    def update(self, s: BusyAndTrees) -> None:
        n = [s.batch, s.batch * (s.k + 1)]
        r = [float(self._curve.time_ms(x)) / self._base for x in n]
        right = [x > RIGHT_ALIGN_FROM for x in n]
        self.marks.data = dict(n=n, r=r, text=["plain", "verify"],
                               align=["right" if f else "left" for f in right],
                               dx=[4 if f else -4 for f in right])
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


class BusyTreesView(StateView):
    """Part 1 (batch) and part 2 (trees), bound to one :class:`BusyAndTrees`."""

    state = param.ClassSelector(class_=BusyAndTrees)
    part1_intro = param.String(default="", doc="Trusted HTML opening part 1.")
    part1_note = param.String(default="", doc="Trusted HTML under part 1's charts.")
    part1_outro = param.String(default="", doc="Trusted HTML closing part 1 (how servers cope).")
    part2_intro = param.String(default="", doc="Trusted HTML opening part 2.")
    part2_note = param.String(default="", doc="Trusted HTML under part 2's charts.")
    part3_intro = param.String(default="", doc="Trusted HTML opening part 3 (the real model's trees).")
    part3_note = param.String(default="", doc="Trusted HTML under part 3.")

    def __init__(self, **params):
        super().__init__(**params)
        s = self.state
        # The top of part 1 is built with the view; the rest of part 1, part 2 and part 3 when
        # the visitor scrolls near them (views/kit/deferred.py). Until a part is built its charts
        # and texts are None and the watchers skip them; building one brings it up to date.
        self.batch_chart = BatchChart()
        css = [page_css(_CSS)]
        self.busy_text = LiveHTML(sizing_mode="stretch_width", stylesheets=css, name="ep8-busy-text")
        self.cost_chart = self.split_chart = self.anchors_text = self.cpu_text = None
        self.tree_curves = self.tree_picture = self.tree_text = None
        s.param.watch(self._on_busy, ["q", "k", "c", "batch"])
        s.param.watch(self._on_tree_shape, ["width", "depth"])
        s.param.watch(self._on_tree_sims, ["tree_sim"])
        with pn.io.hold():
            self._on_busy()
        self.near_parts = (
            when_near(self._part1_rest, name="ep8-part1-rest"),
            when_near(self._part2, name="ep8-part2"),
            when_near(self._part3, name="ep8-part3"),
        )

    def _part3(self):
        """Part 3: the real model's measured trees and one recorded step, naming their drafts."""
        draft, step_draft = real_tree_drafts()
        return real_tree_part(real_tree_table(), real_tree_step(), self.state.cpu_curve,
                              intro=self.part3_intro, note=self.part3_note, draft=draft,
                              step_draft=step_draft)

    def _on_busy(self, *_):
        s = self.state
        with pn.io.hold():
            self.batch_chart.update(s)
            self.busy_text.html = busy_html(s)
            if self.cost_chart is not None:
                self._update_part1_rest()

    def _update_part1_rest(self):
        s = self.state
        self.cost_chart.update(s)
        self.split_chart.update(s)
        self.anchors_text.html = anchors_html(s)
        self.cpu_text.html = cpu_html(s)

    def _on_tree_shape(self, *_):
        if self.tree_picture is not None:
            self.tree_picture.update(self.state)

    def _on_tree_sims(self, *_):
        s = self.state
        if self.tree_curves is None:
            return
        with pn.io.hold():
            self.tree_curves.update(s)
            self.tree_text.html = tree_html(s)

    def _part1_rest(self):
        """Part 1 below its first chart: where the time goes, the CPU and real systems."""
        s = self.state
        css = [page_css(_CSS)]
        self.cost_chart = CostChart(s)
        self.split_chart = SplitChart()
        self.anchors_text = LiveHTML(sizing_mode="stretch_width", stylesheets=css,
                                     name="ep8-anchors-text", margin=(5, 10))
        self.cpu_text = LiveHTML(sizing_mode="stretch_width", stylesheets=css, name="ep8-cpu-text",
                                 margin=(5, 10))
        self._update_part1_rest()
        return pn.Column(
            prose(SPLIT_KEY, KEYS_CSS, _CSS),
            pn.pane.Bokeh(self.split_chart.figure, sizing_mode="stretch_width"),
            prose(COST_KEY, KEYS_CSS, _CSS),
            pn.pane.Bokeh(self.cost_chart.figure, sizing_mode="stretch_width"),
            self.cpu_text,
            prose(roofline_html(s.cpu_curve, s.curve), _CSS),
            prose(self.part1_note, _CSS),
            self.anchors_text,
            prose(self.part1_outro, _CSS),
            sizing_mode="stretch_width",
        )

    def _part2(self):
        """Part 2: a tree of guesses against a chain, with its picture and attention mask."""
        s = self.state
        self.tree_curves = TreeCurves()
        self.tree_picture = TreePicture()
        self.tree_text = LiveHTML(sizing_mode="stretch_width", stylesheets=[page_css(_CSS)],
                                  name="ep8-tree-text")
        with pn.io.hold():
            self._on_tree_shape()
            self._on_tree_sims()
        tree_controls = pn.Column(
            slider(s.param.tree_q, step=0.01, format="0.00"),
            slider(s.param.width),
            slider(s.param.depth),
            pn.widgets.Button.from_param(s.param.resimulate, color="primary", description=None),
            control_help(s, ["tree_q", "width", "depth"]),
            width=300, name="ep8-tree-controls",
        )
        return pn.Column(
            prose(self.part2_intro),
            beside(tree_controls, self.tree_text, basis="420px"),
            prose(TREE_KEY, KEYS_CSS, _CSS),
            pn.pane.Bokeh(self.tree_curves.figure, sizing_mode="stretch_width"),
            pn.FlexBox(pn.pane.Bokeh(self.tree_picture.figure, sizing_mode="stretch_width",
                                     styles={"flex": "2 1 320px"}),
                       pn.pane.Bokeh(self.tree_picture.mask_figure), sizing_mode="stretch_width",
                       flex_wrap="wrap"),
            prose(self.part2_note),
            sizing_mode="stretch_width",
        )

    def layout(self):
        s = self.state
        busy_controls = pn.Column(
            slider(s.param.q, step=0.01, format="0.00"),
            slider(s.param.k),
            slider(s.param.c, step=0.005, format="0.000"),
            slider(s.param.batch),
            control_help(s, ["q", "k", "c", "batch"]),
            width=300, name="ep8-busy-controls",
        )
        return pn.Column(
            prose(self.part1_intro),
            beside(busy_controls, self.busy_text, basis="420px"),
            prose(BATCH_KEY, KEYS_CSS, _CSS),
            pn.pane.Bokeh(self.batch_chart.figure, sizing_mode="stretch_width"),
            *self.near_parts,
            sizing_mode="stretch_width",
        )
