"""Episode 2: the relay — draft fast, verify in one pass.

A small draft model proposes k tokens, one quick step each; the big model checks
them all in one pass, keeps the matching start, rejects the first miss and writes
its own token there. The page plays one seeded run (``views/ep2_relay.py``).
"""

from __future__ import annotations

import panel as pn

from . import Exercise, TryStep, neighbours
from ..sim import theory
from ..state.ep2 import BIG_PASS_MS, DRAFT_STEP_MS, TOKENS, Relay
from ..views.deferred import after_first_paint
from ..views.ep2_relay import RelayView
from ..views.page import episode_shell, prose, steps_html
from ..views.exercises import exercises_section
from ..views.urlstate import bind_url
from ..views.words import faster_or_slower, ms, plural, times

NUMBER = 2
SLUG = "ep2_the_relay"
TITLE = "The relay — draft fast, verify in one pass"
SUMMARY = ("A small model drafts a few tokens, the big model checks them all in one pass: "
           "watch the text grow, the two clocks race, and the output stay exactly the big model's.")
#: Controls kept in the URL query, so a link restores the setup.
URL_PARAMS = ("k", "q", "seed")
#: Older links named q "quality"; they still work.
URL_ALIASES = {"quality": "q"}

LEDE = ("A small draft model proposes the next k tokens (the draft length k), one quick step each, "
        "and the big model checks them all in a single pass, keeping the ones it agrees with and "
        "writing its own token at the first miss. How often it agrees is the draft quality q: the "
        "share of drafted tokens the big model accepts.")
#: The weak setup "Try this" suggests, and what theory expects of it.
TRY_Q, TRY_K = 0.3, 8
TRY_THEORY = theory.expected_speedup(TRY_Q, TRY_K, DRAFT_STEP_MS / BIG_PASS_MS)
TRY_STEPS = (
    TryStep("Press <em>Play</em> and watch the clocks: the relay finishes well ahead of the big "
            "model alone."),
    TryStep(f"Then set <em>Draft quality q</em> to {TRY_Q:g} and <em>k</em> to {TRY_K} and play "
            "again: the red bad rounds pile up and the speedup usually falls below 1× (theory "
            f"expects {TRY_THEORY:.2f}×), yet the text is still the big model’s, word for word.",
            {"q": TRY_Q, "k": TRY_K}),
)
TRY_THIS = steps_html([s.html for s in TRY_STEPS])
NOTE = ("<p class=\"sdp-note\">Colour is never the only cue: each verdict has its own mark (✓ ✗ – ★ +), "
        "and in the lanes its own pattern. In the text, accepted drafts are underlined, a rejected guess is "
        "struck through, the big model’s own tokens sit on gold with ★ (bonus tokens with +), and blue italic "
        "words are drafts waiting for the check. Hover a box in the lanes for details; while the run plays "
        "the lanes follow the clock, and at the end they show the whole run.</p>")

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


def _answer_perfect(s: Relay):
    made = s.result.rounds["tokens"].tolist()
    top, last = max(made), made[-1]
    return ("1", str(s.k), str(s.k + 1)).index(str(top)), (
        f"In this run every round wrote {plural(top, 'token')}"
        + (f" (the last round only {last}, where the text ran out)" if last < top else "")
        + f": all {s.k} drafts accepted, plus the bonus token the same pass adds. "
        f"{plural(s.result.n_rounds, 'round')} for {len(TOKENS)} tokens: {times(s.result.speedup)}.")


def _answer_hopeless(s: Relay):
    r = s.result
    word = faster_or_slower(r.speedup)
    full = int((r.rounds["drafted"] == s.k).sum())
    return ("faster", "as fast", "slower").index(word), (
        f"This run took {ms(r.wall_ms)} for {len(TOKENS)} tokens; the big model alone takes "
        f"{ms(r.baseline_ms)}: {times(r.speedup)}. {full} of its {plural(r.n_rounds, 'round')} "
        f"paid {s.k} draft steps and one pass, {ms(s.k * DRAFT_STEP_MS + BIG_PASS_MS)}, for the "
        "single token the big model wrote itself"
        + (" (the last drafted fewer, where the text ran out)." if full < r.n_rounds else "."))


EXERCISES = (
    Exercise("With a perfect draft (q = 1) and k = 4, how many tokens does each round write?",
             ("1", "4", "5"), {"q": 1.0, "k": 4}, _answer_perfect),
    Exercise("With a draft that is always wrong (q = 0) and k = 4, is the relay faster or slower "
             "than the big model alone?", ("faster", "as fast", "slower"), {"q": 0.0, "k": 4},
             _answer_hopeless),
)

def page(state: Relay | None = None) -> pn.Column:
    """A fresh Episode 2 page (one per session or notebook cell)."""
    state = state or Relay()
    notice = bind_url(state, URL_PARAMS, URL_ALIASES)
    return episode_shell(
        number=NUMBER, title=TITLE, neighbours=neighbours(NUMBER), name="ep2",
        lede=LEDE, try_this=TRY_THIS,
        body=[notice,
              after_first_paint(lambda: RelayView(state=state, note=NOTE), name="ep2-view-slot"),
              prose(OUTRO),
              exercises_section(state, EXERCISES, name="ep2")],
    )
