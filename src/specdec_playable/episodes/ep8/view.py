"""Episode 8's view: speculation at a batch size, chains against trees, and the real model's
token trees.

Figures are built once and updated through their sources. The sentences are in ``words.py``; the
HTML parts here (:func:`busy_html`, :func:`tree_html`, :func:`table_html`) are plain functions of
the state that a test calls without a browser.
"""

from __future__ import annotations


import numpy as np
import panel as pn
import param
from bokeh.models import CustomJSTickFormatter

from ...data.machine import this_machine
from ...kit.words import faster_or_slower, noun, plural
from ...sim import trees
from .state import (ANCHORS, BATCH_MAX, Q_GRID, BusyAndTrees, batching_speedups, real_tree_drafts, real_tree_step, real_tree_table)
from .charts import (BATCH_KEY, COST_KEY, SPLIT_KEY, TREE_KEY, BatchChart, CostChart, SplitChart,
                     TreeCurves, TreePicture)
from .real_tree import real_tree_part
from .words import batch_limit_sentence, best_k_sentence, plain_positions
from ...kit.deferred import when_near
from ...kit.inputs import control_help
from ...kit.keys import KEYS_CSS
from ...kit.livehtml import LiveHTML
from ...kit.page import StateView, beside, esc, page_css, prose, slider, stat
from ...kit.roofline import roofline_html

_CSS = f"{__package__}:ep8.css"


#: Where Episode 5's map lives, for the link that puts this batch's effective cost on it.
EP5_SLUG = "ep5_the_break_even_map"


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
    # The measured H200 times dip by noise (under 0.4% of a step) where a pass is memory-bound:
    # a verify pass may then time a hair under a plain step and the exact cost fall below 0.
    c_eff = max(s.effective_cost, 0.0)
    link = ""
    if c_eff <= 1.0 and s.k <= 16:
        link = (f' <a href="./{EP5_SLUG}?q={s.q:.2f}&amp;k={s.k}&amp;c={c_eff:.3f}">'
                "Open Episode 5 at that cost</a>.")
    out.append(
        f'<p class="sdp-note">In Episode 5’s formula the busy verify pass acts like a dearer draft: '
        f"this batch gives the speedup of a draft cost c = {c_eff:.3f} instead of {s.c:.3f}.{link}</p>")
    return "".join(out)


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


#: The batch sizes the batch slider steps through: the powers of two up to the largest batch, so
#: each step is one step along the chart's log axis and 2, 4 and 8 are as easy to hit as 256.
BATCH_STEPS = tuple(int(b) for b in 2 ** np.arange(int(np.log2(BATCH_MAX)) + 1))

#: The CSS class of a slider whose handle should be announced by the value its title shows (the
#: page's a11y script reads it) rather than by the position noUiSlider reports.
SHOWN_VALUE_CLASS = "sdp-shown-value"


def batch_steps(batch: int) -> tuple[int, ...]:
    """The batch slider's stops while the state holds ``batch``: the powers of two, and ``batch``
    itself in its place when a link or the API set one between them."""
    return tuple(sorted(set(BATCH_STEPS) | {int(batch)}))


class BatchSlider:
    """The batch size as a slider that steps by powers of two, bound both ways to a state's
    ``batch``. Its handle moves over the index of a stop and its title shows the stop's batch
    size; a batch between two powers (from a link) is one more stop, so the page never shows a
    batch size the state does not hold."""

    def __init__(self, state: BusyAndTrees):
        self.state = state
        self.stops = batch_steps(state.batch)
        self.format = CustomJSTickFormatter(
            args=dict(stops=list(self.stops)),
            code="return stops[Math.round(tick)].toLocaleString('en-US');")
        p = state.param["batch"]
        self.widget = pn.widgets.IntSlider(
            label=p.label, start=0, end=len(self.stops) - 1, value=self.stops.index(state.batch),
            format=self.format, sizing_mode="stretch_width", css_classes=[SHOWN_VALUE_CLASS])
        self.widget.param.watch(self._moved, "value")
        state.param.watch(self._set, "batch")

    def _moved(self, event) -> None:
        self.state.batch = self.stops[event.new]

    def _set(self, event) -> None:
        stops = batch_steps(event.new)
        if stops != self.stops:
            self.stops = stops
            with pn.io.hold():
                self.format.args = dict(stops=list(stops))
                self.widget.param.update(end=len(stops) - 1, value=stops.index(event.new))
        elif self.stops[self.widget.value] != event.new:
            self.widget.value = stops.index(event.new)


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
        # the visitor scrolls near them (kit/deferred.py). Until a part is built its charts
        # and texts are None and the watchers skip them; building one brings it up to date.
        self.batch_chart = BatchChart()
        self.batch_slider = BatchSlider(s)
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
            prose(roofline_html(s.cpu_formats["f32"], s.cpu_formats["q4"], s.curve,
                                q4_source=None if not s.cpu_q4.here else s.cpu_q4.source), _CSS),
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
            self.batch_slider.widget,
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
