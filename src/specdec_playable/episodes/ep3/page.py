"""Episode 3: the quality dial — when does the draft pay for itself?

Three sliders (acceptance probability q, draft length k, draft cost c). Every move
runs fresh Monte-Carlo rounds and shows the measured speedup with its 95% interval
beside the closed-form theory, the round's economics in numbers, the histogram of
accepted drafts against the theory, and the best k for q and c.
"""

from __future__ import annotations

import panel as pn

from ..nav import neighbours
from .practice import EXERCISES, TRY_THIS
from .state import N_ROUNDS, QualityDial
from ...kit.deferred import after_first_paint
from .view import QualityDialView
from ...kit.page import episode_shell, prose
from ...kit.exercises import exercises_section
from ...kit.urlstate import bind_url

NUMBER = 3
SLUG = "ep3_the_quality_dial"
TITLE = "The quality dial: when does the draft pay for itself?"
SUMMARY = (f"Three knobs (how good the draft is, how far it guesses, what a guess costs) and {N_ROUNDS:,} "
           "simulated rounds per move: find the best draft length, then the cliff where speculating "
           "gets slower than not speculating.")
#: What a student can do after this episode, each completing "After this episode you can"
#: (the page's first line and the teacher's guide).
OBJECTIVES = (
    ("name the three numbers that decide the speedup: the acceptance rate q, the draft length "
     "k and the draft cost c"),
    ("work out the tokens per round and the speedup from q, k and c, and check them against a "
     "simulation"),
    "find the best draft length for a draft, and the q below which speculating is slower",
)
#: The state the page wires (the teacher's guide answers the questions on a fresh one).
STATE = QualityDial
#: Controls kept in the URL query, so a link restores the setup.
URL_PARAMS = ("q", "k", "c")

LEDE = ("Three numbers decide whether speculative decoding pays: the draft quality q (the "
        "acceptance rate: the share of drafted tokens the big model accepts), the draft length k "
        "(how many tokens are drafted per round), and the draft cost c (what one draft step costs "
        "next to one big-model pass). Every time you move a slider this page simulates "
        f"{N_ROUNDS:,} new rounds, measures the speedup, and prints the theory beside it.")
OUTRO = """
<h2>Where the cliff comes from</h2>
<p class="sdp-lede">A round always pays for one big-model pass plus k draft steps, but the drafts only
earn tokens until the first wrong guess. With a good draft, a longer k keeps earning; with a poor one,
the extra guesses are nearly always thrown away while their cost is still paid. So each q and c has a
best k, and a long, costly draft of a weak model lands below 1×: the big model would have been faster
on its own. This is why serving systems pick draft models that imitate the target closely, and keep
tuning k while they run.</p>
<p class="sdp-note">Theory: Leviathan, Kalman and Matias, “Fast Inference from Transformers via
Speculative Decoding” (ICML 2023), with each draft token accepted independently with probability q.
Measured values come from the simulation on this page; the 95% intervals use the normal approximation
over the simulated rounds.</p>
"""


def page(state: QualityDial | None = None, *, service=None) -> pn.Column:
    """A fresh Episode 3 page (one per session or notebook cell; it runs no model,
    so ``service`` is unused)."""
    state = state or QualityDial()
    notice = bind_url(state, URL_PARAMS)
    return episode_shell(
        number=NUMBER, title=TITLE, objectives=OBJECTIVES,
        neighbours=neighbours(NUMBER), name="ep3",
        lede=LEDE, try_this=TRY_THIS,
        body=[notice,
              after_first_paint(lambda: QualityDialView(state=state), name="ep3-view-slot"),
              prose(OUTRO),
              exercises_section(state, EXERCISES, name="ep3")],
    )
