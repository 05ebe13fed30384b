"""Episode 2: the relay — draft fast, verify in one pass.

A small draft model proposes k tokens, one quick step each; the big model checks
them all in one pass, keeps the matching start, rejects the first miss and writes
its own token there. The page plays one seeded run (``episodes/ep2/view.py``).
"""

from __future__ import annotations

import panel as pn

from ..nav import neighbours
from .practice import EXERCISES, TRY_THIS
from .state import BIG_PASS_MS, DRAFT_STEP_MS, Relay
from ...kit.deferred import after_first_paint
from .view import RelayView
from ...kit.page import episode_shell, prose
from ...kit.exercises import exercises_section
from ...kit.urlstate import bind_url

NUMBER = 2
SLUG = "ep2_the_relay"
TITLE = "The relay — draft fast, verify in one pass"
SUMMARY = ("A small model drafts a few tokens, the big model checks them all in one pass: "
           "watch the text grow, the two clocks race, and the output stay exactly the big model's.")
#: What a student can do after this episode, each completing "After this episode you can"
#: (the page's first line and the teacher's guide).
OBJECTIVES = (
    ("trace one round of speculative decoding: the draft guesses k tokens, one pass checks "
     "them, the agreeing guesses are kept and the big model adds a token of its own"),
    "explain why the text is exactly the big model's whatever the draft guesses",
    "spot a bad round, where the first guess is rejected and the drafting was wasted",
)
#: The state the page wires (the teacher's guide answers the questions on a fresh one).
STATE = Relay
#: Controls kept in the URL query, so a link restores the setup.
URL_PARAMS = ("k", "q", "seed")
#: Older links named q "quality"; they still work.
URL_ALIASES = {"quality": "q"}

LEDE = ("A small draft model proposes the next k tokens (the draft length k), one quick step each, "
        "and the big model checks them all in a single pass, keeping the ones it agrees with and "
        "writing its own token at the first miss. How often it agrees is the draft quality q: the "
        "share of drafted tokens the big model accepts.")
NOTE = ("<p class=\"sdp-note\">Colour is never the only cue: each verdict has its own mark (✓ ✗ – ★ +), "
        "and in the lanes its own pattern. In the text, accepted drafts are underlined, a rejected guess is "
        "struck through, the big model’s own tokens sit on gold with ★ (bonus tokens with +), and blue italic "
        "words are drafts waiting for the check. Hover a box in the lanes for details; while the run plays "
        "the lanes follow the clock, and at the end they show the whole run; under them every round is "
        "listed with its marks, which stay readable on any screen.</p>")

_STEP, _PASS = f"{DRAFT_STEP_MS:,.0f} ms", f"{BIG_PASS_MS:,.0f} ms"
OUTRO = f"""
<h2>Why it is a free lunch, sometimes</h2>
<p class="sdp-lede">An accepted draft token costs one {_STEP} draft step instead of a {_PASS} pass of the big
model. When several drafts in a row are right, one pass settles all of them, and the text arrives two or
three times faster, still exactly the big model’s text. Every round writes at least one token, because the
big model’s own token at the first miss is never wasted: that is the safety net.</p>
<p class="sdp-lede">The safety net is not free, though. In a bad round the very first draft is wrong, so the
page paid k draft steps and a full pass for a single token, more than the {_PASS} plain decoding would have
cost. Lower the draft quality q or raise k and watch these rounds eat the gain.</p>
<p class="sdp-note">Simulated costs: one big-model pass {_PASS}, one draft step {_STEP}. Each drafted token
matches the big model’s with probability q, the draft quality, drawn afresh for every run and pinned
by the seed. Every clock and speedup on this page is measured from that run, not taken from a formula.</p>
"""


def page(state: Relay | None = None, *, service=None) -> pn.Column:
    """A fresh Episode 2 page (one per session or notebook cell; it runs no model,
    so ``service`` is unused)."""
    state = state or Relay()
    notice = bind_url(state, URL_PARAMS, URL_ALIASES)
    return episode_shell(
        number=NUMBER, title=TITLE, objectives=OBJECTIVES,
        neighbours=neighbours(NUMBER), name="ep2",
        lede=LEDE, try_this=TRY_THIS,
        body=[notice,
              after_first_paint(lambda: RelayView(state=state, note=NOTE), name="ep2-view-slot"),
              prose(OUTRO),
              exercises_section(state, EXERCISES, name="ep2")],
    )
