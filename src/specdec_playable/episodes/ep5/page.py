"""Episode 5: the break-even map — where speculation backfires.

Speedup against acceptance rate q, one theory curve per draft length k, with
the region below 1× shaded. Simulate drops fresh Monte-Carlo rounds onto the
map as a point with its 95% interval; presets put real systems on it.
"""

from __future__ import annotations

import panel as pn

from ..nav import neighbours
from .practice import EXERCISES, TRY_THIS
from .state import BreakEvenMap
from .words import pooled_miss_sentence
from ...kit.deferred import after_first_paint
from .view import BreakEvenView
from ...kit.page import episode_shell, prose
from ...kit.exercises import exercises_section
from ...kit.urlstate import bind_url

NUMBER = 5
SLUG = "ep5_the_break_even_map"
TITLE = "The break-even map: where speculation backfires"
SUMMARY = ("Speedup against acceptance rate for every draft length on one chart, the line where "
           "speculating stops paying, simulated points to check the theory, and real systems placed on it.")
#: What a student can do after this episode, each completing "After this episode you can"
#: (the page's first line and the teacher's guide).
OBJECTIVES = (
    "read the break-even acceptance rate for any draft length and cost off one chart",
    "check a theory curve against simulated measurements and their intervals",
    "place a real system on the map and say when it should stop speculating",
)
#: The state the page wires (the teacher's guide answers the questions on a fresh one).
STATE = BreakEvenMap
#: Controls kept in the URL query, so a link restores the setup.
URL_PARAMS = ("q", "k", "c")

LEDE = ("One chart for the whole trade-off: the acceptance rate q (the share of drafted tokens the "
        "big model accepts) along the bottom, speedup up the side, one theory curve for each draft "
        "length k, all at one draft cost c (one draft step's time over one big-model pass). Below "
        "the dashed 1× line, speculative decoding is slower than letting the big model write alone.")

CHART_NOTE = f"""
<p class="sdp-note">Curves and diamonds are theory; each dot is a measurement with its 95% interval as a
whisker, and an ✗ marks one whose interval misses its curve. Once there are two or more dots at one
q, k and c, they fade and stand aside, either side of an open square on their q: all their rounds
pooled into one measurement, with its own (narrower) 95% interval. {pooled_miss_sentence()}
Changing c moves every curve, so it clears the dots.</p>
"""

PRESETS_INTRO = """
<h2>Real systems on the map</h2>
<p class="sdp-lede">Published and measured draft costs, so you can see where real pairs of models
sit. Each shows where its numbers come from.</p>
"""

OUTRO = """
<h2>How production systems stay off the cliff</h2>
<p class="sdp-lede">A serving system cannot know q in advance: it depends on the text being written, and
it changes from one request to the next and within a single answer. So servers watch it. They count how
many drafted tokens the big model accepts as they go, and when that rate drops they draft fewer tokens per
round; if it sinks towards the break-even line they stop drafting and decode plainly until it recovers.
Some keep more than one draft model and pick per request. A headline “2–3× faster” is a point in the
upper right of this map; the same system on unpredictable text may sit below the dashed line.</p>
<p class="sdp-note">Theory: Leviathan, Kalman and Matias (ICML 2023), with each drafted token accepted
independently with probability q. A round costs 1 + k·c big-model passes and yields (accepted + 1)
tokens.</p>
"""


def page(state: BreakEvenMap | None = None, *, service=None) -> pn.Column:
    """A fresh Episode 5 page (one per session or notebook cell; it runs no model,
    so ``service`` is unused)."""
    state = state or BreakEvenMap()
    notice = bind_url(state, URL_PARAMS)
    view = after_first_paint(
        lambda: BreakEvenView(state=state, chart_note=CHART_NOTE, presets_intro=PRESETS_INTRO),
        name="ep5-view-slot")
    return episode_shell(
        number=NUMBER, title=TITLE, objectives=OBJECTIVES,
        neighbours=neighbours(NUMBER), name="ep5",
        lede=LEDE, try_this=TRY_THIS,
        body=[notice, view, prose(OUTRO), exercises_section(state, EXERCISES, name="ep5")],
    )
