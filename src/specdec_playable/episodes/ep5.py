"""Episode 5: the break-even map — where speculation backfires.

Speedup against acceptance rate q, one theory curve per draft length k, with
the region below 1× shaded. Simulate drops fresh Monte-Carlo rounds onto the
map as a point with its 95% interval; presets put real systems on it.
"""

from __future__ import annotations

import panel as pn

from . import Exercise, TryStep, neighbours
from ..state.ep5 import BreakEvenMap, break_even_table
from ..views.deferred import after_first_paint
from ..views.ep5_break_even import BreakEvenView
from ..views.page import episode_shell, prose, steps_html
from ..views.exercises import exercises_section
from ..views.urlstate import bind_url

NUMBER = 5
SLUG = "ep5_the_break_even_map"
TITLE = "The break-even map: where speculation backfires"
SUMMARY = ("Speedup against acceptance rate for every draft length on one chart, the line where "
           "speculating stops paying, simulated points to check the theory, and real systems placed on it.")
#: Controls kept in the URL query, so a link restores the setup.
URL_PARAMS = ("q", "k", "c")

LEDE = ("One chart for the whole trade-off: the acceptance rate q (the share of drafted tokens the "
        "big model accepts) along the bottom, speedup up the side, one theory curve for each draft "
        "length k, all at one draft cost c (one draft step's time over one big-model pass). Below "
        "the dashed 1× line, speculative decoding is slower than letting the big model write alone.")
#: Step 2 of "Try this" leaves the draft cost here.
TRY_C = 0.5
TRY_STEPS = (
    TryStep("Press <em>Simulate</em> a dozen times and see the measured dots scatter around the "
            "blue curve, most of their whiskers across it."),
    TryStep(f"Then drag <em>Draft cost c</em> to the right, to {TRY_C:g} say, and watch every "
            "break-even diamond slide towards q = 1: the dearer a draft step, the better the draft "
            "must be to pay.", {"c": TRY_C}),
)
TRY_THIS = steps_html([s.html for s in TRY_STEPS])

CHART_NOTE = """
<p class="sdp-note">Curves and diamonds are theory; each dot is a measurement with its 95% interval as a
whisker, and an ✗ marks one whose interval misses its curve. Dots simulated at the same q are spread
sideways a little so they do not hide one another. Changing c moves every curve, so it clears the dots.</p>
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


#: Question 1's choices of q, and question 2's draft costs.
_BE_CHOICES = (0.15, 0.40, 0.70)
_C1, _C2 = 0.15, 0.30


def _answer_break_even(s: BreakEvenMap):
    q = s.break_even(s.k)
    right = min(range(len(_BE_CHOICES)), key=lambda i: abs(_BE_CHOICES[i] - q))
    return right, (f"With k = {s.k} and c = {s.c:.2f} the curve crosses 1× at q = {q:.2f} "
                   f"(theory): below that, speculating is slower than not speculating.")


def _answer_dearer(s: BreakEvenMap):
    before = float(break_even_table(_C1)[s.k - 1])
    now = s.break_even(s.k)
    right = 0 if now < before - 0.005 else (1 if abs(now - before) <= 0.005 else 2)
    return right, (f"At c = {s.c:.2f}, k = {s.k} breaks even at q = {now:.2f}, against {before:.2f} "
                   f"at c = {_C1:.2f}: every draft step costs more, so more drafts must be right "
                   "to pay for them.")


EXERCISES = (
    Exercise(f"With k = 4 and c = {_C1:.2f}, above roughly which acceptance rate q does speculation "
             "start to pay?", tuple(f"about {q:.2f}" for q in _BE_CHOICES), {"k": 4, "c": _C1},
             _answer_break_even),
    Exercise(f"Double the draft cost to c = {_C2:.2f}. Where does k = 4 break even now?",
             ("at a lower q", "at the same q", "at a higher q"), {"k": 4, "c": _C2}, _answer_dearer),
)

def page(state: BreakEvenMap | None = None) -> pn.Column:
    """A fresh Episode 5 page (one per session or notebook cell)."""
    state = state or BreakEvenMap()
    notice = bind_url(state, URL_PARAMS)
    view = after_first_paint(
        lambda: BreakEvenView(state=state, chart_note=CHART_NOTE, presets_intro=PRESETS_INTRO),
        name="ep5-view-slot")
    return episode_shell(
        number=NUMBER, title=TITLE, neighbours=neighbours(NUMBER), name="ep5",
        lede=LEDE, try_this=TRY_THIS,
        body=[notice, view, prose(OUTRO), exercises_section(state, EXERCISES, name="ep5")],
    )
