"""Episode 1's view: the two lanes (writing token by token, checking all at once) and the finish times.

:func:`lane_timeline` and :func:`summary_html` are plain functions of the state's
clock comparison; the view shows them through a :class:`LanePlayer`.
"""

from __future__ import annotations

import panel as pn
import param

from ..core.clocks import ClockComparison
from ..state.ep1 import WritingVsChecking
from . import theme
from .lanes import Box, Lane, LanePlayer, Timeline
from .page import StateView, page_css, stat

WRITE_Y, CHECK_TOP = 1.2, 0.45
LANES = (
    Lane("sequential", "Writing: one pass per token", WRITE_Y, theme.BIG, clock_dy=0.3, title_dy=-0.45),
    Lane("parallel", "Checking: one pass for all", 0.0, theme.ACCEPTED, clock_dy=0.5, title_dy=-0.69),
)
#: The checking lane stacks one thin row per position in this much height.
_STACK = 0.9
#: Position labels in the checking lane are shown up to this many tokens.
_MAX_LABELLED = 8


def lane_timeline(comp: ClockComparison) -> Timeline:
    """One box per writing pass, and one thin row per position scored in the single checking pass."""
    seq, par = comp.sequential, comp.parallel.of_kind("score")
    n = comp.n_tokens
    rows = _STACK / n
    small = "11px" if n <= 6 else "9px"
    writing = [Box("sequential", s, e, WRITE_Y, 0.45, t.strip(), "generate",
                   tip=f"pass {i + 1}: writes “{t.strip()}”", label_size="13px")
               for i, (s, e, t) in enumerate(zip(seq.start_ms, seq.end_ms, seq.text))]
    checking = [Box("parallel", s, e, CHECK_TOP - rows * (i + 0.5), rows * 0.88,
                    t.strip() if n <= _MAX_LABELLED else "", "score",
                    tip=f"scores position {i + 1} (“{t.strip()}”) in the same pass", label_size=small)
                for i, (s, e, t) in enumerate(zip(par.start_ms, par.end_ms, par.text))]
    return Timeline(tuple(writing + checking))


def summary_html(comp: ClockComparison) -> str:
    """The two finish times and their ratio."""
    n = comp.n_tokens
    return (stat(f"{comp.sequential_ms:,.0f} ms", f"writing {n} tokens: {n} passes, one after another")
            + stat(f"{comp.parallel_ms:,.0f} ms", f"checking {n} tokens: 1 pass, all positions at once")
            + stat(f"{comp.ratio:.1f}×", "longer to write than to check"))


class WritingVsCheckingView(StateView):
    """The lanes, the controls and the finish times, bound to one state object."""

    state = param.ClassSelector(class_=WritingVsChecking)

    def __init__(self, **params):
        super().__init__(**params)
        self.player = LanePlayer(LANES, name="ep1", height=320, y_pad=(0.7, 0.55))
        self.summary = pn.pane.HTML(stylesheets=[page_css()], name="ep1-summary",
                                    styles={"flex": "1 1 300px"}, min_width=280)
        self.state.param.watch(self._redraw, "comparison")
        self._redraw()

    def _redraw(self, *_):
        comp = self.state.comparison
        # One held batch: the page gets the lanes and the numbers in one message and paints
        # them in the same frame.
        with pn.io.hold():
            self.player.show(lane_timeline(comp))
            self.summary.object = summary_html(comp)

    def layout(self):
        controls = pn.Param(
            self.state, parameters=["n_tokens", "big_pass_ms"], show_name=False,
            widgets={"n_tokens": {"type": pn.widgets.IntSlider, "name": "Tokens (N)"},
                     "big_pass_ms": {"type": pn.widgets.IntSlider, "step": 50}},
            width=320, name="ep1-controls",
        )
        return pn.Column(
            pn.FlexBox(controls, self.summary, sizing_mode="stretch_width", flex_wrap="wrap"),
            pn.pane.Bokeh(self.player.controls),
            pn.pane.Bokeh(self.player.figure, sizing_mode="stretch_width"),
            sizing_mode="stretch_width",
        )
