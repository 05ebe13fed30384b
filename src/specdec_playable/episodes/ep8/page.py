"""Episode 8: busy GPUs and token trees.

Part 1 prices speculation when a server decodes many users at once: a plain step
scores B positions and a verify pass B × (k + 1), both timed by the measured H200
pass-time curve, so past some batch size checking stops being free. Part 2 spends
the same verified positions on a tree of guesses instead of a chain.
"""

from __future__ import annotations

import panel as pn

from ..nav import neighbours
from .practice import EXERCISES, TRY_THIS
from ...data.tree_table import draft_name, load_tree_vs_chain_meta
from .state import BusyAndTrees
from ...kit.deferred import after_first_paint
from .view import BusyTreesView
from ...kit.page import episode_shell
from ...kit.exercises import exercises_section
from ...kit.urlstate import bind_url

NUMBER = 8
SLUG = "ep8_busy_gpus_and_token_trees"
TITLE = "Busy GPUs and token trees"
SUMMARY = ("When a server decodes many users at once, checking guesses stops being free and "
           "speculation can lose; and instead of one chain of guesses, the fastest systems guess "
           "in branches.")
#: What a student can do after this episode, each completing "After this episode you can"
#: (the page's first line and the teacher's guide).
OBJECTIVES = (
    ("explain why a verify pass stops being nearly free when a server decodes many users at "
     "once"),
    "find the batch size past which speculating is slower",
    "compare a tree of guesses with a chain that checks the same number of positions",
)
#: The state the page wires (the teacher's guide answers the questions on a fresh one).
STATE = BusyAndTrees
#: Controls kept in the URL query, so a link restores the setup.
URL_PARAMS = ("q", "k", "c", "batch", "tree_q", "width", "depth")

LEDE = ("Every episode so far had one user and one chain of guesses. A real server decodes many "
        "users in every pass, and the fastest speculative systems guess in trees. Both change the "
        "arithmetic.")

PART1_INTRO = """<h2>Part 1: the busy GPU</h2>
<p class="sdp-lede">One user: a pass reads every weight of the model to score one position, and
scoring five costs almost the same, because reading the weights is the slow part. A server with B
users scores B positions in every plain step, and B × (k + 1) in every verify pass. Once that many
positions make the pass compute-bound instead of memory-bound, the extra positions of verification
cost real time.</p>
"""

PART1_NOTE = """<p class="sdp-note">Priced with the measured pass times of an 8B-parameter shape on
one NVIDIA H200 (every linear layer as one CUDA graph; assets/pass_cost_h200.csv): 4.80 ms for 1
position, 4.96 ms for 64, 11.1 ms for 512. Beyond 512 positions the curve is a roofline fitted to the
measurements (a memory-bound floor and a compute-bound slope), drawn dashed. Assumptions: every user
accepts each draft with the same q; one draft step over the batch costs c times a plain step over
the same batch; attention over each user's context is left out, which flatters large batches.</p>
<h3>Real systems</h3>
<p class="sdp-lede">Published measurements show the same fall. A Qwen3-8B server with an EAGLE-3 draft
on one H100 (the diamonds on the chart):</p>
"""

PART1_OUTRO = """<p class="sdp-lede">The vLLM team measured Llama-3-70B on four H100s in 2024: at a low
request rate, drafting by n-gram lookup made summaries of CNN/DailyMail articles up to 2.8× faster;
at a high request rate the same setup was 1.8× slower, and a small draft model on ShareGPT chats
went from up to 1.5× faster to 1.4× slower. (They varied requests per second, not the batch size,
so these points cannot sit on the chart.)</p>
<h3>How servers cope</h3>
<p class="sdp-lede">vLLM added an option that switches speculation off for new requests once the
running batch is larger than a threshold (<code>speculative_disable_by_batch_size</code>). SmartSpec
goes further: for every request and step it picks the draft length, zero included, that maximises
goodput (accepted tokens per second) under the current load.</p>
<p class="sdp-note">Sources: vLLM team, “How Speculative Decoding Boosts vLLM Performance by up to
2.8x” (2024-10-17); vLLM pull request 4592, “Auto-disable by the running queue size” (2024);
Liu et al., “Optimizing Speculative Decoding for Serving Large Language Models Using Goodput”
(SmartSpec, arXiv 2406.14066, 2024).</p>
"""

PART2_INTRO = """<h2>Part 2: guessing in branches</h2>
<p class="sdp-lede">A chain dies at its first wrong guess. A tree hedges: at each position it offers
the big model a few candidates, and a tree attention mask lets one pass score them all, each seeing
only its own ancestors. The big model keeps the longest branch it agrees with.</p>
"""

PART2_NOTE = """<p class="sdp-note">Simulated model, stated: each candidate is accepted with
probability q, independently of every other candidate, once its parent was accepted. Real drafts
are not independent (two siblings cannot both be the big model's choice), so this flatters wide
trees. Closed form: the chance that the accepted path reaches depth m is built level by level from
the leaves; Monte-Carlo draws one uniform per candidate and round.</p>
<h3>Real systems that guess in trees</h3>
<p class="sdp-lede">Medusa adds a few extra heads to the big model, each guessing one position
further ahead, and checks the combinations of their top guesses as one tree: over 2.2× faster, and
2.3× to 3.6× when the heads are trained together with the model. EAGLE-2 grows its tree as it goes,
expanding the branches its draft is most confident about, and accepts about 4 to 5.5 tokens per
verify pass on 7B to 13B chat models (3.05× to 4.26× faster); EAGLE-3 reaches up to 6.5×. Sequoia
chooses the tree's shape for a budget of verified positions by dynamic programming, and its size
and depth for the hardware: a tree that pays on one GPU can be too big for another, which is Part
1's lesson again. SpecInfer checks a whole token tree in one pass with a tree attention
mask, as drawn above.</p>
<p class="sdp-note">Sources: Cai et al., “Medusa” (arXiv 2401.10774, 2024); Li et al., “EAGLE-2”
(arXiv 2406.16858, 2024) and “EAGLE-3” (arXiv 2503.01840, 2025); Chen et al., “Sequoia” (arXiv
2402.12374, NeurIPS 2024); Miao et al., “SpecInfer” (ASPLOS 2024). Speedups as each paper reports
them, on its own models and GPUs.</p>
"""


_PART3_DRAFTS = {
    "head": ("The draft head of Episode 7 (one small layer trained on this machine to imitate the "
             "model from features of three of its layers, and on its own guesses) offers its most "
             "likely next tokens at each level, each level drafted from the guess above it"),
    "ngram": ("The n-gram table (which token most often follows the last one to three tokens, "
              "counted from Python source) offers its most frequent continuations at each level"),
}


def part3_intro() -> str:
    """Part 3's opening, naming the draft its table was measured with."""
    return f"""<h2>Part 3: a real tree, on this server</h2>
<p class="sdp-lede">The same idea with the real model of Episode 7 instead of a dial.
{_PART3_DRAFTS[draft_name()]}; one forward pass of the real model scores the whole tree, each candidate
attending only to the text and its own ancestors, at the position it would have in the text. The
model keeps the longest path it agrees with and writes its own next token after it. Greedy output
is still exactly what plain decoding writes: the tests check it token by token.</p>
"""


def part3_note() -> str:
    """Where Part 3's table was measured, from its own provenance."""
    meta = load_tree_vs_chain_meta()
    cores, max_new = meta["machine"]["cores"], meta["max_new"]
    smaller = ("The draft head always drafts the whole shape, so a shape's verified positions are "
               "its size." if draft_name(meta) == "head" else
               "A shape's verified positions are its size: a real tree can be smaller, where the "
               "draft knows no continuation.")
    return f"""<p class="sdp-note">Measured by <code>benchmarks/bench_trees.py</code> on Episode 7's
prompts ({max_new} new tokens each, greedy), with SmolLM2-135M-Instruct in numpy on the project's
{cores}-core development machine; assets/lm/tree_vs_chain.csv and its .meta.json record when and
how. Tokens per pass do not depend on the machine. A round's cost in plain steps prices the root
and the candidates it checked with this CPU's measured float32 pass times (the solid orange curve
of Part 1, whose source the sentence under it names), plus the draft's own measured time to build
the tree. {smaller} The drawn step is stored in assets/lm/tree_step_example.json by
<code>scripts/make_tree_step_example.py</code>.</p>
"""


def page(state: BusyAndTrees | None = None, *, service=None) -> pn.Column:
    """A fresh Episode 8 page (one per session or notebook cell; it runs no model,
    so ``service`` is unused)."""
    state = state or BusyAndTrees()
    notice = bind_url(state, URL_PARAMS)
    view = after_first_paint(
        lambda: BusyTreesView(state=state, part1_intro=PART1_INTRO, part1_note=PART1_NOTE,
                              part1_outro=PART1_OUTRO, part2_intro=PART2_INTRO,
                              part2_note=PART2_NOTE, part3_intro=part3_intro(),
                              part3_note=part3_note()),
        name="ep8-view-slot")
    return episode_shell(
        number=NUMBER, title=TITLE, objectives=OBJECTIVES,
        neighbours=neighbours(NUMBER), name="ep8",
        lede=LEDE, try_this=TRY_THIS,
        body=[notice, view, exercises_section(state, EXERCISES, name="ep8")],
    )
