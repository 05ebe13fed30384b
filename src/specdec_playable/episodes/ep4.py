"""Episode 4: boilerplate flies, poetry stalls.

How often the draft is right is not a knob but a property of the text. The
same speculative decoder runs over two texts side by side (code and a poem by
default, or the visitor's own): every token is shown in reading order, marked
as kept from the draft or written by the big model, and each run's acceptance
rate, tokens per round and wall clock are measured from ``core.relay``.
"""

from __future__ import annotations

import panel as pn

from . import neighbours
from ..core import texts
from ..state.ep4 import BoilerplateVsPoetry
from ..views.deferred import after_first_paint
from ..views.ep4_texts import BoilerplateVsPoetryView, tier_table_html
from ..views.page import episode_shell, prose
from ..views.urlstate import bind_url

NUMBER = 4
SLUG = "ep4_boilerplate_vs_poetry"
TITLE = "Boilerplate flies, poetry stalls"
SUMMARY = ("The same speculative decoder over code and over a poem: the code comes out two to three "
           "times faster, the poem barely faster, or slower. Paste your own text to try it.")
#: Controls kept in the URL query, so a link restores the setup.
URL_PARAMS = ("left", "right", "k", "c", "seed")
#: Room kept for the view while it is built, after the page's first paint (px, at 1280 px).
VIEW_HEIGHT = 1240

LEDE = ("The same speculative decoder (a small model drafts k tokens, the big model checks them "
        "in one pass) runs over two texts side by side, a piece of code and a poem to start with; "
        "only the text differs between the two sides, and that alone decides how well speculating "
        "pays off on each.")
TRY_THIS = ("with the starting pair of texts (code on the left, a poem on the right) and settings, "
            "press <em>Run again</em> a few times and watch the two pairs of bars: the code stays "
            "well ahead of the big model alone, while the poem hovers around it and often ends "
            "up slower. Then paste some text of your own at the bottom.")
PASTE_INTRO = (
    '<h2>Try your own text</h2><p class="sdp-lede">Paste anything up to '
    f'{texts.PASTE_MAX_CHARS:,} characters and press <strong>Run my text</strong>. It is '
    'cut into tokens, each token gets a probability by the automatic rule described '
    'below, and it runs on the right-hand side (or on whichever side already shows your '
    'text) with the same settings.</p>')
#: What each tier's tokens are, for the table of tiers.
TIER_EXAMPLES = {
    "forced": "closing brackets and quotes, a required ; or , — the second half of a fixed pair",
    "syntax": "code keywords, operators, other punctuation, a name already used",
    "context": "the next word of an idiom, a convention (i = 0), a word already in the source "
               "sentence, translated",
    "function": "the, of, and, le, de; any token with two or three equal options",
    "content": "other words and numbers: one of many reasonable choices",
    "creative": "a poet's image or verb, a person's name, a specific id or date",
}

EXPLAIN_HTML = f"""
<h2>Why boilerplate flies and poetry stalls</h2>
<p class="sdp-lede">The big model keeps a drafted token only if it is exactly the token it would
have written. How often that happens is set by the text, not by the decoder. In code, most tokens are
dictated by what came before: a bracket that was opened gets closed, a name defined on one line is
used on the next, a loop counter is called <code>i</code>. JSON repeats its quotes, colons and commas, a
form letter is built from stock phrases, and a translation follows the sentence it translates. A small
model gets those right almost every time, so a round often keeps all its drafts and the pass that checks
them adds one more token: up to k + 1 tokens for one slow pass.</p>
<p class="sdp-lede">A poem is written to avoid the obvious word. Neither model can predict it, so the
draft usually misses within its first two guesses, the round delivers one or two tokens, and the time
spent drafting is wasted on top of the big pass. That is how the poem's speculative bar can end up
longer than plain decoding. It is also why speculative decoding pays off most where the output is
predictable: code completion, structured output such as JSON, translation, templated replies.</p>
<h3>Where each token's probability comes from</h3>
<p class="sdp-note">Each token carries a probability p that a small draft model guesses it right given
the text before it. It is a simulation parameter, not a measurement of a real model. The five texts
above were written for this project and labelled by hand: ask how many reasonable next tokens there are
and pick the first tier that fits.</p>
{tier_table_html(TIER_EXAMPLES)}
<p class="sdp-note">Pasted text gets only the tiers a program can tell without a language model:
whitespace, closing brackets and separators are <code>forced</code>; other punctuation, code keywords and
repeated words are <code>syntax</code>; common function words are <code>function</code>; everything else
is <code>content</code>. So it rates a poem a little too high and a form letter a little too low. On
every run each token's draft is accepted with its probability, drawn afresh: that is why two runs of the
same text differ. The full rule, with its judgement calls, is in <code>assets/texts/README.md</code> in
the project's repository.</p>
"""


def page(state: BoilerplateVsPoetry | None = None) -> pn.Column:
    """A fresh Episode 4 page (one per session or notebook cell)."""
    state = state or BoilerplateVsPoetry()
    notice = bind_url(state, URL_PARAMS)
    view = after_first_paint(
        lambda: BoilerplateVsPoetryView(state=state, paste_intro=PASTE_INTRO),
        min_height=VIEW_HEIGHT, name="ep4-view-slot")
    return episode_shell(
        number=NUMBER, title=TITLE, neighbours=neighbours(NUMBER), name="ep4",
        lede=LEDE, try_this=TRY_THIS, body=[notice, view, prose(EXPLAIN_HTML, "ep4.css")],
    )
