"""Episode 7: real models, real text — watch a real model speculate, live.

Everything Episode 2 simulated, done by SmolLM2-135M on the server: a draft guesses, one pass of
the model checks the guesses, and both clocks are measured. Each Run is a speculative run and a
plain run of the same prompt, queued on the server's workers (``episodes/ep7/state.py``), streamed while
it runs and replayed on Episode 2's lanes when it ends (``episodes/ep7/view.py``).
"""

from __future__ import annotations

import sys

import panel as pn

from ..nav import by_number, neighbours
from .practice import EXERCISES, try_this
from ... import lm
from ...data.hardware import load_pass_costs
from ...data.machine import this_machine
from ...data.recorded import recorded_meta, recorded_repeats, recorded_runs, recorded_weights
from .words import (break_even_gloss, head_line, recorded_caption, recorded_rows,
                         recorded_summary, spread_sentence)
from ...kit.cpu import CpuPasses, cpu_passes, passes_for
from .state import DRAFT_ALIASES, PROMPT_MAX_CHARS, RealText
from .view import RealTextView, recorded_html
from ...kit.deferred import after_first_paint
from ...kit.exercises import exercises_section
from ...kit.page import episode_shell, esc, prose
from ...kit.terms import link_terms
from ...kit.urlstate import bind_url

NUMBER = 7
SLUG = "ep7_real_models_real_text"
TITLE = "Real models, real text: watch a real model speculate"
SUMMARY = ("A real language model on the server writes a reply while a draft guesses its next tokens: "
           "real guesses, real rejections, two measured clocks, and the same text as plain decoding.")
#: What a student can do after this episode, each completing "After this episode you can"
#: (the page's first line and the teacher's guide).
OBJECTIVES = (
    "watch a real model's guesses being accepted and rejected, and read its measured clocks",
    "explain why a draft that copies the prompt wins on copy tasks and not on fresh writing",
    ("read what a verify pass costs on this CPU in each weight format, and explain why "
     "acceptance alone does not make a speedup"),
)
#: The state the page wires (the teacher's guide answers the questions on a fresh one).
STATE = RealText
#: Controls kept in the URL query, so a link restores the setup (the typed prompt is not).
URL_PARAMS = ("task", "draft", "k", "max_new", "decoding", "temperature", "seed", "weight_format", "prompt")
#: The visitor's own prompt goes in the link once it has run, bounded like the box (a longer one in
#: a link is left out, with a notice).
URL_TEXTS = {"prompt": PROMPT_MAX_CHARS}

LEDE = ("Episode 2’s relay with nothing simulated: SmolLM2-135M writes on this server, a real draft "
        "guesses its next tokens, one pass of the model checks the guesses, and both clocks are "
        "measured while you watch.")



NOTE = ("<p class=\"sdp-note\">The marks are Episode 2’s: accepted guesses underlined, a rejected guess "
        "struck through with ✗, the model’s own token at a miss on gold with ★, a bonus token with +. "
        "Hover a token or a box for details. The two runs took turns, pass by pass, so a change in the "
        "server’s load hits both; on the lanes each run’s passes are laid end to end from zero, as if "
        "it had the machine alone, so they race side by side. A 135-million-parameter model cannot do "
        "every task a bigger one can (asked to rename a function’s names it writes another function; "
        "asked to continue a table it repeats its rows): the tasks here are ones it does, checked "
        "against its greedy reply.</p>")


def shown_passes(state: RealText) -> CpuPasses:
    """The pass times the explanation quotes: those of the weight format of the run shown (the
    Weights menu's before a run), from their one record (:func:`.cpu.passes_for`)."""
    return passes_for(cpu_passes(), state.weights or state.weight_format)


def lesson_html(cpu: CpuPasses | None = None) -> str:
    """Why checking is not free here (``cpu``'s measured pass costs; the server's own format's by
    default), and what the recorded runs showed."""
    cpu = cpu or cpu_passes()
    r5 = cpu.ratio(5)
    h200 = load_pass_costs()[("llama-8b-shape", "gemm-cudagraph")]
    h5 = h200.at(5) / h200.at(1)
    out = [f"""
<h2>Which drafts pay off here, and why</h2>
<p class="sdp-lede">On a GPU, checking five tokens in one pass costs about what writing one does
({h5:.2f}× on an H200), so every accepted guess is nearly free time. This server is
{esc(this_machine().describe())}; with its {esc(cpu.weight_words)} one pass over 5 positions
takes {r5:.2f}× a single decode step here ({esc(cpu.source)}; each run above measures its own,
beside its speedup). So at k = 4 a verify pass
has to write more than {r5:.2f} tokens just to break even{break_even_gloss(cpu)}.</p>
<ul class="sdp-lede">
<li><strong>Prompt lookup</strong> copies what followed the last few tokens earlier in the prompt or the
reply. It costs almost nothing, and when the reply repeats the prompt (the copy tasks: a sentence to
repeat, a person’s details as JSON, the city in a passage) many of its guesses are right; when the
reply is fresh writing (a function, an explanation) there is little to copy.</li>
<li><strong>The n-gram table</strong> is just as cheap, but it learned from Python source; on a
chat reply it rarely has a guess, and a wrong guess still makes the pass longer.</li>
<li><strong>The draft head</strong> is one small layer trained on this machine to imitate the model:
it reads the model’s features (its last layer’s fused with two lower ones’) and the next token,
predicts the feature the model would compute next, and reads it through the model’s own output head (EAGLE’s idea). {head_line()}</li>
<li><strong>The memory draft</strong> uses no model and no network: it keeps an index of the
model’s own past replies ({esc(memory_size())}) and finds the longest stretch of the text so far
that it has seen before, in those replies or earlier in this conversation, then proposes what most
often came next there, for as long as most past replies agreed. A model repeats its own openings,
phrasings and idioms from one conversation to the next, so its past replies predict its next one;
each guess costs a look-up. The idea is SuffixDecoding’s (Oliaro et al. 2024), which production
servers ship beside trained heads.</li>
<li><strong>Memory + head</strong> puts both drafts’ guesses in one tree and checks it in one pass:
the memory’s chain where past replies agree, the head’s everywhere else, and the model keeps
whichever agrees with it longer. It asks the head only where the head’s guesses are worth their
time and their places in the pass, so with 4-bit weights, where both cost more, it asks the head
less often. The run above says whose guesses each pass kept.</li>
<li><strong>The early exit</strong> runs the model’s first 6 of its 30 blocks and its output head:
each guess costs a real fraction of a step, and without training it is almost never right.</li>
</ul>"""]
    runs = recorded_runs()
    if runs:
        meta = recorded_meta()
        rows = recorded_rows(runs, recorded_repeats())
        out.append(f'<p class="sdp-lede">{recorded_summary(runs)} {spread_sentence(rows)}</p>')
        out.append(f'<details class="ep7-details"><summary>All {len(rows)} recorded runs: '
                   "guesses accepted, tokens per pass and speedup</summary>")
        out.append(recorded_html(rows, recorded_caption(meta, recorded_weights())))
        out.append("</details>")
    return "".join(out)


def memory_size() -> str:
    """The memory's size in words ("2.1 million tokens of 10,998 replies"), from its provenance."""
    from ...lm.memory import index_meta

    meta = index_meta()
    return f"{meta['tokens'] / 1e6:.1f} million tokens of {meta['rows']:,} replies"


def no_model_notice(runs_model: bool) -> str:
    """One line when this page cannot run the model (empty when it can): ``runs_model`` is whether
    the service it was handed runs it."""
    if runs_model:
        return ""
    if sys.platform == "emscripten":
        return ("This static copy of the page cannot run the model: the tasks show runs recorded "
                "earlier, and your own prompt needs the page served by specdec-playable serve.")
    if lm.is_installed():
        return ("This page was built without a model service, so it runs no model: the tasks show "
                "runs recorded earlier (specdec-playable serve hands the page its service).")
    return f"The model is not installed on this server; install it with: {lm.INSTALL_COMMAND}"


def outro_html(cpu: CpuPasses | None = None) -> str:
    """What the real run adds; ``cpu``'s pass cost (the server's own format's by default; where it
    was measured is said above) decides the last sentence, and, for float32 weights, the 4-bit
    weights' own record (this server's, else the shipped one, named with its machine) the one
    after it."""
    cpu = cpu or cpu_passes()
    r5, r9 = cpu.ratio(5), cpu.ratio(9)
    grows = "is nearly one step too" if r5 < 1.3 else "grows with the positions"
    hw = (f"on this CPU with {cpu.weight_words} it {grows} ({r5:.2f}× a step for 5 positions, "
          f"{r9:.2f}× for 9)"
          + break_even_gloss(cpu) + four_bit_clause(cpu))
    return f"""
<h2>What the real run adds</h2>
<p class="sdp-lede">Everything Episode 2 simulated is here for real: the guesses are a real draft’s, a
miss is the model disagreeing, and the clocks are this server’s. Two things the simulation hid come
out. First, the text decides everything: the same draft flies on a reply that copies its prompt and
stalls on one that does not. Second, the hardware decides what a verify pass costs: on a GPU it is
nearly one step whatever k is; {hw}.</p>
"""


def four_bit_clause(cpu) -> str:
    """What a check costs with the Weights menu's 4-bit weights, from their own record beside the
    page's ``cpu`` (:func:`.cpu.passes_for`: this server's once a 4-bit model process measured it,
    else the shipped one), with its machine."""
    q4 = passes_for(cpu, "q4")
    if q4 is cpu:
        return ""  # the sentence before already reads the 4-bit record
    q5, q9 = q4.ratio(5), q4.ratio(9)
    return (f". With the 4-bit weights of the Weights menu a step is quicker but a check costs "
            f"{q5:.2f}× a step for 5 positions and {q9:.2f}× for 9 ({esc(q4.source)}), so there only "
            f"short, sure drafts pay")


def explanation(state: RealText) -> tuple[pn.pane.HTML, pn.pane.HTML]:
    """The lesson and the outro, quoting the pass times of the weight format of the run shown, and
    rewritten when that format changes (a run in the other format, or the menu before a run)."""
    shown = shown_passes(state)
    lesson = prose(lesson_html(shown), f"{__package__}:ep7.css", name="ep7-lesson")
    outro = prose(outro_html(shown), name="ep7-outro")

    def follow(*_) -> None:
        nonlocal shown
        cpu = shown_passes(state)
        if cpu is not shown:
            shown = cpu
            with pn.io.hold():
                lesson.object = link_terms(lesson_html(cpu))
                outro.object = link_terms(outro_html(cpu))

    state.param.watch(follow, ["weights", "weight_format"])
    return lesson, outro


def page(state: RealText | None = None, *, service=None) -> pn.Column:
    """A fresh Episode 7 page (one per session or notebook cell). The model loads on the first Run.

    ``service`` runs the real model (``runtime.ModelService``; the app hands in the server's):
    without one the page shows recorded runs."""
    state = state or RealText(service=service)
    notice = bind_url(state, URL_PARAMS, value_aliases={"draft": DRAFT_ALIASES}, long_text=URL_TEXTS)
    lesson, outro = explanation(state)
    view = after_first_paint(
        lambda: RealTextView(state=state, ep5_href=f"./{by_number(5).slug}",
                             ep6_href=f"./{by_number(6).slug}",
                             notice=no_model_notice(state.follower.installed)),
        name="ep7-view-slot")
    return episode_shell(
        number=NUMBER, title=TITLE, objectives=OBJECTIVES,
        neighbours=neighbours(NUMBER), name="ep7",
        lede=LEDE, try_this=try_this(),
        body=[notice, view, lesson, prose(NOTE), outro,
              exercises_section(state, EXERCISES, name="ep7")],
    )
