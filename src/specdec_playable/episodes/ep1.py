"""Episode 1: writing is one-at-a-time, checking is all-at-once.

Two lanes on one wall clock: the big model writing N tokens in N sequential
passes, and the same model checking N given tokens in a single pass.
"""

from __future__ import annotations

import panel as pn

from . import Exercise, TryStep, neighbours
from ..state.ep1 import SENTENCE, WritingVsChecking
from ..views.deferred import after_first_paint, when_near
from ..views.ep1_writing import WritingVsCheckingView
from ..views.exercises import exercises_section
from ..views.hardware import hardware_section
from ..views.page import episode_shell, prose, steps_html
from ..views.urlstate import bind_url
from ..views.words import ms, plural

NUMBER = 1
SLUG = "ep1_writing_vs_checking"
TITLE = "Writing is one-at-a-time; checking is all-at-once"
SUMMARY = ("Why a big model needs N passes to write N tokens but only one pass to check them: "
           "the asymmetry speculative decoding stands on.")
#: Controls kept in the URL query, so a link restores the setup.
URL_PARAMS = ("n_tokens", "big_pass_ms")

_PASS_MS = WritingVsChecking.param.big_pass_ms.default
_N_MAX = len(SENTENCE)


def lede_html(pass_ms: int) -> str:
    """The opening sentences, with the pass time the slider is set to."""
    return ("A large language model writes one token per forward pass, and each pass must wait for "
            "the token before it. Checking tokens that already exist takes a single pass. Both lanes "
            f"below run on the same wall clock, with a simulated {pass_ms:,} ms per pass.")


#: The lede at the starting pass time (the page's lede follows the slider).
LEDE = lede_html(_PASS_MS)
TRY_STEPS = (
    TryStep("Press <em>Play</em> and watch the two clocks: writing needs one pass per token, "
            "checking the same tokens one pass for all of them."),
    TryStep(f"Then drag <em>Tokens (N)</em> to {_N_MAX}. Writing now takes {_N_MAX} passes, "
            f"{_N_MAX}× as long as checking, which still takes one pass: checking does not get "
            "slower at all.", {"n_tokens": _N_MAX}),
)
TRY_THIS = steps_html([s.html for s in TRY_STEPS])
OUTRO = """
<h2>The loophole</h2>
<p class="sdp-lede">Writing is slow only because each token must wait for the one before it. Checking
has no such wait: given a finished text, the model scores every position at once, exactly as it does
during training. So if somebody else could propose the next few tokens, the big model could check them
all for the price of one pass. In the next episode that somebody is a much smaller, faster model.</p>
"""


def _answer_check_16(s: WritingVsChecking):
    comp = s.comparison
    passes = comp.parallel_ms / s.big_pass_ms
    right = 0 if passes == 1 else (1 if passes == comp.n_tokens / 2 else 2)
    return right, (f"Checking {plural(comp.n_tokens, 'token')} takes {ms(comp.parallel_ms)}: "
                   f"{plural(round(passes), 'pass')}, as for 2 tokens. Writing them takes "
                   f"{ms(comp.sequential_ms)}, {comp.ratio:.0f}× as long.")


_WRITE_N, _WRITE_MS = 10, 600
#: The choices of question 2: 1, 2 and 10 passes.
_WRITE_CHOICES = tuple(ms(n * _WRITE_MS) for n in (1, 2, _WRITE_N))


def _answer_write_10(s: WritingVsChecking):
    comp = s.comparison
    return _WRITE_CHOICES.index(ms(comp.sequential_ms)), (
        f"Writing {plural(comp.n_tokens, 'token')} takes {plural(comp.n_tokens, 'pass')} one "
        f"after another: {comp.n_tokens} × {ms(s.big_pass_ms)} = {ms(comp.sequential_ms)}.")


EXERCISES = (
    Exercise(f"Checking 2 tokens takes one pass. How long does checking {_N_MAX} tokens take?",
             ("The same: one pass", f"{_N_MAX // 2}× as long", f"{_N_MAX}× as long"),
             {"n_tokens": _N_MAX}, _answer_check_16),
    Exercise(f"One pass takes {_WRITE_MS:,} ms. How long does the big model take to write "
             f"{_WRITE_N} tokens?", _WRITE_CHOICES, {"n_tokens": _WRITE_N, "big_pass_ms": _WRITE_MS},
             _answer_write_10),
)

def page(state: WritingVsChecking | None = None) -> pn.Column:
    """A fresh Episode 1 page (one per session or notebook cell)."""
    state = state or WritingVsChecking()
    notice = bind_url(state, URL_PARAMS)
    return episode_shell(
        number=NUMBER, title=TITLE, neighbours=neighbours(NUMBER), name="ep1",
        lede=pn.bind(lede_html, state.param.big_pass_ms), try_this=TRY_THIS,
        body=[notice,
              after_first_paint(lambda: WritingVsCheckingView(state=state), name="ep1-view-slot"),
              prose(OUTRO),
              exercises_section(state, EXERCISES, name="ep1"),
              # Below the fold: built when the visitor scrolls near it.
              when_near(lambda: hardware_section("ep1-hw"), name="ep1-hw-slot")],
    )
