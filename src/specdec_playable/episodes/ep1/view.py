"""Episode 1's view: the two lanes (writing token by token, checking all at once) and the finish times.

:func:`lane_timeline` and :func:`summary_html` are plain functions of the state's
clock comparison; the view shows them through a :class:`LanePlayer`, whose clock also
runs the two big clocks of the summary while a run plays (its live fields).
"""

from __future__ import annotations

import uuid

import panel as pn
import param

from ...sim.clocks import ClockComparison
from .state import WritingVsChecking
from .words import lanes_words
from ...kit import theme
from ...kit.a11y import describe
from ...kit.lanes import Box, Lane, LanePlayer, Timeline
from ...kit.inputs import control_help
from ...kit.page import StateView, page_css, session_doc, slider, stat
from ...kit.words import ms, plural

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


def summary_html(comp: ClockComparison, uid: str = "ep1", *, at_start: bool = False) -> str:
    """The two clocks and their ratio, at the end of the run (or, ``at_start``, before it:
    clocks at zero and the ratio still hidden).

    While the lanes play, the player (live fields ``uid``) runs each clock up to its
    finish time, and the ratio shows once writing is done.
    """
    n, seq, par = comp.n_tokens, comp.sequential_ms, comp.parallel_ms
    tokens = plural(n, "token")
    return (
        f'<div data-sdp-live="{uid}">'
        + stat(ms(0 if at_start else seq), f"writing {tokens}: {plural(n, 'pass')}, one after another",
               value_data={"clock": f"{seq:g}"})
        + stat(ms(0 if at_start else par), f"checking {tokens}: 1 pass, all positions at once",
               value_data={"clock": f"{par:g}"})
        + stat(f"{comp.ratio:.1f}×", "writing takes this many times as long as checking",
               data={"after": f"{seq:g}"}, hidden=at_start)
        + stat("…", "how many times as long writing takes: press Play, it shows once writing is done",
               data={"before": f"{seq:g}"}, hidden=not at_start)
        + "</div>")


class WritingVsCheckingView(StateView):
    """The lanes, the controls and the finish times, bound to one state object."""

    state = param.ClassSelector(class_=WritingVsChecking)

    def __init__(self, **params):
        super().__init__(**params)
        self.uid = "ep1-" + uuid.uuid4().hex[:8]
        # The lanes' clocks show the wall clock, so the cursor needs no label of its own.
        self.player = LanePlayer(LANES, name="ep1", height=320, y_pad=(0.7, 0.55), min_label_px=6,
                                 cursor_label=False, live=self.uid, opens_at_start=True)
        self.player.fit_on_ready(session_doc())
        self.summary = pn.pane.HTML(stylesheets=[page_css()], name="ep1-summary",
                                    styles={"flex": "1 1 300px"}, min_width=280)
        self.state.param.watch(self._redraw, "comparison")
        # The page opens on the start of the run: the result shows when it is played.
        self._redraw(at_start=True)

    def _redraw(self, *_, at_start: bool = False):
        comp = self.state.comparison
        # One held batch: the page gets the lanes and the numbers in one message and paints
        # them in the same frame.
        with pn.io.hold():
            self.player.show(lane_timeline(comp), at_start=at_start)
            describe(self.player.figure, lanes_words(comp))
            self.summary.object = summary_html(comp, self.uid, at_start=at_start)

    def layout(self):
        s = self.state
        names = ["n_tokens", "big_pass_ms"]
        controls = pn.Column(
            slider(s.param.n_tokens), slider(s.param.big_pass_ms, step=50, format="0,0"),
            control_help(s, names), width=320, name="ep1-controls",
        )
        return pn.Column(
            pn.FlexBox(controls, self.summary, sizing_mode="stretch_width", flex_wrap="wrap"),
            pn.pane.Bokeh(self.player.controls),
            pn.pane.Bokeh(self.player.figure, sizing_mode="stretch_width"),
            sizing_mode="stretch_width",
        )
