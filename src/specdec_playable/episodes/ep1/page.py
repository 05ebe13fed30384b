"""Episode 1: writing is one-at-a-time, checking is all-at-once.

Two lanes on one wall clock: the big model writing N tokens in N sequential
passes, and the same model checking N given tokens in a single pass.
"""

from __future__ import annotations

import panel as pn

from ..nav import neighbours
from .practice import EXERCISES, TRY_THIS
from .state import WritingVsChecking
from ...kit.deferred import after_first_paint, when_near
from .view import WritingVsCheckingView
from ...kit.exercises import exercises_section
from ...kit.hardware import hardware_section
from ...kit.page import episode_shell, prose
from ...kit.urlstate import bind_url

NUMBER = 1
SLUG = "ep1_writing_vs_checking"
TITLE = "Writing is one-at-a-time; checking is all-at-once"
SUMMARY = ("Why a big model needs N passes to write N tokens but only one pass to check them: "
           "the asymmetry speculative decoding stands on.")
#: What a student can do after this episode, each completing "After this episode you can"
#: (the page's first line and the teacher's guide).
OBJECTIVES = (
    "explain why a model writes a text one pass per token, and what checking a finished one costs",
    "read both clocks for any number of tokens and any pass time",
    "say why a GPU pass over a few positions costs about as much as a pass over one",
)
#: The state the page wires (the teacher's guide answers the questions on a fresh one).
STATE = WritingVsChecking
#: Controls kept in the URL query, so a link restores the setup.
URL_PARAMS = ("n_tokens", "big_pass_ms")

_PASS_MS = WritingVsChecking.param.big_pass_ms.default


def lede_html(pass_ms: int) -> str:
    """The opening sentences, with the pass time the slider is set to."""
    return ("A large language model writes one token per forward pass, and each pass must wait for "
            "the token before it. Checking tokens that already exist takes a single pass. Both lanes "
            f"below run on the same wall clock, with a simulated {pass_ms:,} ms per pass.")


#: The lede at the starting pass time (the page's lede follows the slider).
LEDE = lede_html(_PASS_MS)
OUTRO = """
<h2>The loophole</h2>
<p class="sdp-lede">Writing is slow only because each token must wait for the one before it. Checking
has no such wait: given a finished text, the model scores every position at once, exactly as it does
during training. So if somebody else could propose the next few tokens, the big model could check them
all for the price of one pass. In the next episode that somebody is a much smaller, faster model.</p>
"""


def page(state: WritingVsChecking | None = None, *, service=None) -> pn.Column:
    """A fresh Episode 1 page (one per session or notebook cell; it runs no model,
    so ``service`` is unused)."""
    state = state or WritingVsChecking()
    notice = bind_url(state, URL_PARAMS)
    return episode_shell(
        number=NUMBER, title=TITLE, objectives=OBJECTIVES,
        neighbours=neighbours(NUMBER), name="ep1",
        lede=pn.bind(lede_html, state.param.big_pass_ms), try_this=TRY_THIS,
        body=[notice,
              after_first_paint(lambda: WritingVsCheckingView(state=state), name="ep1-view-slot"),
              prose(OUTRO),
              exercises_section(state, EXERCISES, name="ep1"),
              # Below the fold: built when the visitor scrolls near it.
              when_near(lambda: hardware_section("ep1-hw"), name="ep1-hw-slot")],
    )
