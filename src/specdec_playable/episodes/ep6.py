"""Episode 6: the fine print — speculative sampling, and choosing k on the fly.

Part 1 shows that speculative *sampling* loses nothing: whatever the draft's
distribution, the kept-or-replaced outputs follow the big model's exactly,
checked with a chi-square test on up to 100,000 draws, and drafts are kept at the
rate sum(min(p, q)). Part 2 races four draft-length policies over code, a poem and
JSON back to back on the same randomness: adapting k pays when the genre changes.
"""

from __future__ import annotations

import panel as pn

from . import neighbours
from ..core import adaptive
from ..state.ep6 import REPEATS, SAMPLE_SIZES, WORDS, FinePrint, draft_distribution
from ..views.deferred import after_first_paint
from ..views.ep6_fine_print import FinePrintView
from ..views.page import episode_shell, prose
from ..views.urlstate import bind_url

NUMBER = 6
SLUG = "ep6_the_fine_print"
TITLE = "The fine print: exact sampling, and choosing k on the fly"
SUMMARY = ("Bend the draft's word probabilities as far as you like: the kept-or-replaced output "
           "still follows the big model exactly. Then race four ways of choosing the draft length "
           "over code, a poem and JSON.")
#: Controls kept in the URL query, so a link restores the setup.
URL_PARAMS = ("temperature", "favourite", "boost", "n_samples", "c", "fixed_k", "race_seed")
#: Room kept for the view while it is built, after the page's first paint (px, at 1280 px).
VIEW_HEIGHT = 2410

LEDE = ("Two details that make speculative decoding work in practice: drafts that are kept or "
        "replaced so the output follows the big model's probabilities exactly, and a draft "
        "length k that adapts as the text gets easier or harder to guess.")
_BOOST_MAX = FinePrint.param.boost.bounds[1]
_TEMP, _FAV = FinePrint.param.temperature.default, FinePrint.param.favourite.default
#: How often the draft proposes its favourite word at the starting temperature and the largest boost.
TRY_SHARE = float(draft_distribution(_TEMP, _FAV, _BOOST_MAX)[WORDS.index(_FAV)])
TRY_THIS = (f"in part 1, at the starting temperature ({_TEMP:g}), push <em>Favourite boost</em> to "
            f"{_BOOST_MAX:g} and <em>Samples N</em> to {max(SAMPLE_SIZES):,}: "
            f"the draft now proposes “{_FAV}” {TRY_SHARE:.0%} of the time, yet the green bars still "
            "sit on the black marks of the big model. In part 2, read the race text by text in the "
            "table under the charts, then raise <em>Draft cost c</em> and see which policy comes out "
            "ahead.")

PART1_INTRO = """<h2 class="ep6-part">Part 1: a biased draft, an unbiased result</h2>
<p class="sdp-lede">How each word is made: the draft proposes a word x, drawn from its own q. The big
model keeps it with probability min(1, p(x) / q(x)): always when the draft is not over-eager about x,
and only sometimes when it is. After a refusal the big model draws a replacement from what is left of p
once q is taken away, max(0, p − q), rescaled to sum to 1. Words the draft over-proposes get trimmed,
words it under-proposes get topped up, and the two effects cancel exactly.</p>
"""

_, _PLUS, _ESTIMATE, _OFF = adaptive.default_policies()
_TIMES = {1: "once", 2: "twice"}.get(REPEATS, f"{REPEATS} times")
PART2_INTRO = f"""<h2 class="ep6-part">Part 2: choosing k on the fly</h2>
<p class="sdp-lede">The stream is three of Episode 4's texts, each {_TIMES} in a row: a JavaScript loop
(easy to guess), a poem (hard) and a JSON record (easy again). Each round a policy picks k, the draft
guesses k tokens, and the big model keeps them up to the first wrong one and adds one of its own. A
round costs 1 + k·c passes.</p>
<ol class="sdp-note">
<li><strong>Fixed k</strong>: the same k every round, set with the slider.</li>
<li><strong>+2 / −1</strong>: after a round where every draft was kept, draft 2 more next time;
after any miss, draft 1 fewer (never below 1, never above {_PLUS.k_max}).</li>
<li><strong>Best k from an estimate</strong>: keep a running average of how often drafts are kept
(each judged draft moves it {_ESTIMATE.alpha:.0%} of the way to hit or miss), and draft the k that
theory says is fastest at that rate and this c.</li>
<li><strong>Best k, off below break-even</strong>: the same, but when even the best k is expected to
lose to plain decoding, stop drafting; every {_OFF.probe_every} plain rounds, draft {_OFF.probe_k} tokens
as a probe to see whether the text got easier.</li>
</ol>
"""

OUTRO = """
<h2>What to take away</h2>
<p class="sdp-lede">Part 1 is why speculative decoding is allowed at all: with the accept-or-replace
rule, a weak or biased draft costs speed, never quality. The output has the big model's distribution
exactly, and only the acceptance rate, sum(min(p, q)), depends on how alike the two models are. Part 2
is how serving systems try to squeeze out more: the best k depends on how predictable the text is right
now, and text changes, so a policy can track the acceptance rate and draft longer where the text is easy
and shorter where it is hard. Whether that beats a well-chosen fixed k depends on the texts, on the cost
of a draft step and on the luck of the draw, and the estimate always lags a few rounds behind a change of
text: the paragraph and the table under the race say what happened in this one, text by text. Switching
speculation off can only pay where even the best draft length loses to plain decoding, that is where
drafts are kept less often than the break-even rate for this c; everywhere else it gives up a gain, and
its probe rounds cost time too.</p>
<p class="sdp-note">Sources: Leviathan, Kalman and Matias, “Fast Inference from Transformers via
Speculative Decoding” (ICML 2023); Chen, Borgeaud, Irving, Lespiau, Sifre and Jumper, “Accelerating
Large Language Model Decoding with Speculative Sampling” (2023). The chi-square p-value is computed on
this page from the regularized incomplete gamma function. Per-token guessability in part 2 is a
simulation parameter labelled by hand (see Episode 4), not a measurement of a real model; the wall clock
is the simulation's own, counted in big-model passes.</p>
"""


def page(state: FinePrint | None = None) -> pn.Column:
    """A fresh Episode 6 page (one per session or notebook cell)."""
    state = state or FinePrint()
    notice = bind_url(state, URL_PARAMS)
    view = after_first_paint(
        lambda: FinePrintView(state=state, part1_intro=PART1_INTRO, part2_intro=PART2_INTRO),
        min_height=VIEW_HEIGHT, name="ep6-view-slot")
    return episode_shell(
        number=NUMBER, title=TITLE, neighbours=neighbours(NUMBER), name="ep6",
        lede=LEDE, try_this=TRY_THIS, body=[notice, view, prose(OUTRO)],
    )
