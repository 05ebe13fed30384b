"""Episode 1: writing is one-at-a-time, checking is all-at-once.

Two lanes on one wall clock: the big model writing N tokens in N sequential
passes, and the same model checking N given tokens in a single pass.
"""

from __future__ import annotations

import panel as pn
import param

from . import neighbours
from ..state.ep1 import WritingVsChecking
from ..views import theme
from ..views.hardware import hardware_section
from ..views.lanes import Lane, LanePlayer
from ..views.page import episode_shell, page_css, stat
from ..views.urlstate import bind_url

NUMBER = 1
SLUG = "ep1_writing_vs_checking"
TITLE = "Writing is one-at-a-time; checking is all-at-once"
SUMMARY = ("Why a big model needs N passes to write N tokens but only one pass to check them: "
           "the asymmetry speculative decoding stands on.")
#: Controls kept in the URL query, so a link restores the setup.
URL_PARAMS = ("n_tokens", "big_pass_ms")

_LANES = (
    Lane("sequential", "Writing: one pass per token", 1.2, theme.BIG, clock_dy=0.3, title_dy=-0.45),
    Lane("parallel", "Checking: one pass for all", 0.0, theme.ACCEPTED, clock_dy=0.5,
         title_dy=-0.69),
)


class WritingVsCheckingView(pn.viewable.Viewer):
    """The lanes, the controls and the finish times, bound to one state object."""

    state = param.ClassSelector(class_=WritingVsChecking)

    def __init__(self, **params):
        params.setdefault("state", WritingVsChecking())
        super().__init__(**params)
        self.player = LanePlayer(_LANES, name="ep1", height=320, y_pad=(0.7, 0.55))
        self.summary = pn.pane.HTML(stylesheets=[page_css()], name="ep1-summary",
                                    styles={"flex": "1 1 300px"}, min_width=280)
        self.state.param.watch(self._redraw, "comparison")
        self._redraw()

    def _redraw(self, *_):
        comp = self.state.comparison
        seq, par = comp.sequential, comp.parallel.of_kind("score")
        n = comp.n_tokens
        rows = 0.9 / n
        boxes = dict(
            lane=["sequential"] * n + ["parallel"] * n,
            start=[*seq.start_ms, *par.start_ms],
            end=[*seq.end_ms, *par.end_ms],
            y=[1.2] * n + [0.45 - rows * (i + 0.5) for i in range(n)],
            height=[0.45] * n + [rows * 0.88] * n,
            label_size=["13px"] * n + [("11px" if n <= 6 else "9px")] * n,
            label=[t.strip() for t in seq.text] + [t.strip() if n <= 8 else "" for t in par.text],
            status=["generate"] * n + ["score"] * n,
        )
        tips = ([f"pass {i + 1}: writes “{t.strip()}”" for i, t in enumerate(seq.text)]
                + [f"scores position {i + 1} (“{t.strip()}”) in the same pass"
                   for i, t in enumerate(par.text)])
        # One held batch: the page gets the lanes and the numbers in one message and paints
        # them in the same frame.
        with pn.io.hold():
            self.player.show(boxes, tips=tips)
            self.summary.object = (
                stat(f"{comp.sequential_ms:,.0f} ms", f"writing {n} tokens: {n} passes, one after another")
                + stat(f"{comp.parallel_ms:,.0f} ms", f"checking {n} tokens: 1 pass, all positions at once")
                + stat(f"{comp.ratio:.1f}×", "longer to write than to check")
            )

    def __panel__(self):
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


def page(state: WritingVsChecking | None = None) -> pn.Column:
    """A fresh Episode 1 page (one per session or notebook cell)."""
    state = state or WritingVsChecking()
    notice = bind_url(state, URL_PARAMS)
    view = WritingVsCheckingView(state=state)
    outro = pn.pane.HTML(
        """
<h2>The loophole</h2>
<p class="sdp-lede">Writing is slow only because each token must wait for the one before it. Checking
has no such wait: given a finished text, the model scores every position at once, exactly as it does
during training. So if somebody else could propose the next few tokens, the big model could check them
all for the price of one pass. In the next episode that somebody is a much smaller, faster model.</p>
""", sizing_mode="stretch_width", stylesheets=[page_css()])
    return episode_shell(
        number=NUMBER, title=TITLE, neighbours=neighbours(NUMBER), name="ep1",
        lede=("A large language model writes one token per forward pass, and each pass must wait for "
              "the token before it. Checking tokens that already exist takes a single pass. Both lanes "
              "below run on the same wall clock, with a simulated 600 ms per pass."),
        try_this=("press <em>Play</em> and watch the two clocks; then drag <em>Tokens (N)</em> to 16. "
                  "Writing gets 16× slower; checking does not get slower at all."),
        body=[notice, view, outro, hardware_section("ep1-hw")],
    )
