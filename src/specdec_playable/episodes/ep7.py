"""Episode 7: real models, real text — watch a real model speculate, live.

Everything Episode 2 simulated, done by SmolLM2-135M on the server: a draft guesses, one pass of
the model checks the guesses, and both clocks are measured. Each Run is a speculative run and a
plain run of the same prompt, queued on the server's workers (``state/ep7.py``), streamed while
it runs and replayed on Episode 2's lanes when it ends (``views/ep7_real.py``).
"""

from __future__ import annotations

import functools
import math
import sys

import panel as pn

from . import Exercise, TryStep, ep5, ep6, neighbours
from .. import lm
from ..data.hardware import load_pass_costs
from ..state.cpu import cpu_passes
from ..data.machine import this_machine
from ..lm.prompts import TASK_CHECKS
from ..state.ep7 import (DRAFT_LABELS, TASKS, RealText, cost_words, recorded_meta,
                         recorded_repeats, recorded_runs)
from ..views.deferred import after_first_paint
from ..views.ep7_real import RealTextView, recorded_html
from ..views.exercises import exercises_section
from ..views.page import episode_shell, esc, prose, share, steps_html
from ..views.urlstate import bind_url

NUMBER = 7
SLUG = "ep7_real_models_real_text"
TITLE = "Real models, real text: watch a real model speculate"
SUMMARY = ("A real language model on the server writes a reply while a draft guesses its next tokens: "
           "real guesses, real rejections, two measured clocks, and the same text as plain decoding.")
#: Controls kept in the URL query, so a link restores the setup (the typed prompt is not).
URL_PARAMS = ("task", "draft", "k", "max_new", "decoding", "temperature", "seed")

LEDE = ("Episode 2’s relay with nothing simulated: SmolLM2-135M writes on this server, a real draft "
        "guesses its next tokens, one pass of the model checks the guesses, and both clocks are "
        "measured while you watch.")
_FIRST_STEPS = (
    TryStep("Press <em>Run</em>: the model repeats a sentence with prompt lookup as its draft; watch "
            "the underlined guesses pile up."),
    TryStep("Then pick a fresh-writing task (why the sky is blue), run it with the same draft, and "
            "compare how many guesses the model accepts and what that does to the speedup.",
            {"task": "sky", "draft": "lookup"}),
    TryStep("Next, pick the Python sum function: a fresh-writing task starts with the draft head, "
            "which guesses by imitating the model instead of copying. Run it, then switch the draft "
            "to prompt lookup and run again: the head has far more of its guesses accepted, and "
            "the speedup says whether that pays for the longer verify passes on this machine.",
            {"task": "sum-function"}),
)


def head_levels() -> tuple[float, ...]:
    """In the recorded run of the draft head on the sum function: the share of its 1st, 2nd, ...
    guesses kept, of the times each was checked (``accept_at``; NaN where never checked)."""
    run = recorded_runs().get(("sum-function", "head"))
    return tuple(float(a) for a in run.spec.accept_at) if run is not None else ()


@functools.cache
def _try_steps() -> tuple[TryStep, ...]:
    """The steps; the last is written from the head's recorded run (and left out if it would not
    hold: its third guess kept less often than its second, and less than half the time)."""
    a = head_levels()
    if len(a) < 3 or not all(math.isfinite(x) for x in a[:3]) or not a[2] < min(a[1], 0.5):
        return _FIRST_STEPS
    return _FIRST_STEPS + (TryStep(
        f"Last, switch back to the draft head, set k to 2 and run again. In the run recorded here the "
        f"head's first guess in a round was kept {a[0]:.0%} of the times it was checked, its second "
        f"{a[1]:.0%} and its third only {a[2]:.0%}: guesses past the second mostly make the verify "
        "pass longer, so compare the two speedups.", {"draft": "head", "k": 2}),)


def _try_this() -> str:
    return steps_html([s.html for s in _try_steps()])


#: Written from the recorded runs when first asked for (importing the module reads no file).
_LAZY = {"TRY_STEPS": _try_steps, "TRY_THIS": _try_this}


def __getattr__(name: str):
    if name in _LAZY:
        return _LAZY[name]()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

NOTE = ("<p class=\"sdp-note\">The marks are Episode 2’s: accepted guesses underlined, a rejected guess "
        "struck through with ✗, the model’s own token at a miss on gold with ★, a bonus token with +. "
        "Hover a token or a box for details. The two runs took turns, pass by pass, so a change in the "
        "server’s load hits both; on the lanes each run’s passes are laid end to end from zero, as if "
        "it had the machine alone, so they race side by side. A 135-million-parameter model cannot do "
        "every task a bigger one can (asked to rename a function’s names it writes another function; "
        "asked to continue a table it repeats its rows): the tasks here are ones it does, checked "
        "against its greedy reply.</p>")


#: A task's name inside a sentence ("on the sentence to repeat").
TASK_NAMES = {"repeat": "sentence to repeat", "json-person": "JSON", "where": "extraction",
              "sum-function": "sum function", "sky": "sky explanation"}


def _names(keys) -> str:
    names = [TASK_NAMES[k] for k in keys]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _break_even_gloss(cpu) -> str:
    """The acceptance rate a free draft needs at k = 4 on this CPU (:meth:`.cpu.CpuPasses.free_draft_break_even`)."""
    ratio = cpu.ratio(5)
    if not 1.0 < ratio < 5.0:
        return "" if ratio <= 1.0 else ": no draft can, at k = 4"
    q = cpu.free_draft_break_even(4)
    return f": even a draft that costs nothing must have its guesses accepted at a rate of at least q = {q:.2f}"


def head_line() -> str:
    """What the recorded runs say about the draft head (its guesses on fresh writing and copying)."""
    runs = recorded_runs()
    mine = {t: runs[(t, "head")].spec for t in TASKS if (t, "head") in runs}
    if not mine:
        return "It needs nothing to copy, so it guesses on fresh writing too."
    fresh = [t for t in mine if not TASK_CHECKS[t][1]]
    best = max(mine, key=lambda t: mine[t].tokens_per_pass)
    text = (f"It needs nothing to copy: in the runs recorded below it wrote "
            f"{mine[best].tokens_per_pass:.2f} tokens per pass on the {_names([best])}")
    others = [t for t in fresh if t != best]
    if others:
        text += ", " + ", ".join(f"{mine[t].tokens_per_pass:.2f} on the {_names([t])}" for t in others)
    cost = [runs[(t, "head")].draft_cost for t in mine]
    return text + (f"; each guess cost about {cost_words(sorted(cost)[len(cost) // 2])} of a "
                   "step.")


def lesson_html() -> str:
    """Why checking is not free here (measured pass costs), and what the recorded runs showed."""
    cpu = cpu_passes()
    r5 = cpu.ratio(5)
    h200 = load_pass_costs()[("llama-8b-shape", "gemm-cudagraph")]
    h5 = h200.at(5) / h200.at(1)
    out = [f"""
<h2>Which drafts pay off here, and why</h2>
<p class="sdp-lede">On a GPU, checking five tokens in one pass costs about what writing one does
({h5:.2f}× on an H200), so every accepted guess is nearly free time. This server is
{esc(this_machine().describe())}; one pass over 5 positions takes {r5:.2f}× a single decode step here
({esc(cpu.source)}; each run above measures its own, beside its speedup). So at k = 4 a verify pass
has to write more than {r5:.2f} tokens just to break even{_break_even_gloss(cpu)}.</p>
<ul class="sdp-lede">
<li><strong>Prompt lookup</strong> copies what followed the last few tokens earlier in the prompt or the
reply. It costs almost nothing, and when the reply repeats the prompt (the copy tasks: a sentence to
repeat, a person’s details as JSON, the city in a passage) many of its guesses are right; when the
reply is fresh writing (a function, an explanation) there is little to copy.</li>
<li><strong>The learned n-gram draft</strong> is just as cheap, but it learned from Python source; on a
chat reply it rarely has a guess, and a wrong guess still makes the pass longer.</li>
<li><strong>The draft head</strong> is one small layer trained on this machine to imitate the model:
it reads the model’s own last-layer feature and the next token, predicts the feature the model would
compute next, and reads it through the model’s own output head (EAGLE’s idea). {head_line()}</li>
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
        out.append(recorded_html(rows, recorded_caption(meta)))
        out.append("</details>")
    return "".join(out)


def recorded_summary(runs) -> str:
    """One sentence per draft: the recorded tasks where most and fewest of its guesses were accepted.

    Acceptance in greedy decoding does not depend on the clock, so these sentences hold on any
    machine; the speedups in the table are this machine's clocks and move from run to run.
    """
    out = []
    for d, label in DRAFT_LABELS.items():
        name = label.split(" (")[0]
        mine = {t: c.spec for (t, dd), c in runs.items() if dd == d}
        if not mine:
            continue  # not recorded
        judged = {t: s for t, s in mine.items() if s.accepted + s.rejected > 0}
        silent = [t for t in mine if t not in judged]
        if not judged:
            out.append(f"{name} had no guess to offer on any task.")
            continue
        best = max(judged, key=lambda t: judged[t].acceptance_rate)
        worst = min(judged, key=lambda t: judged[t].acceptance_rate)
        text = (f"{name} had {share(judged[best].acceptance_rate)} of its guesses accepted on the "
                f"{_names([best])} ({judged[best].tokens_per_pass:.2f} tokens per pass)")
        if worst != best:
            text += (f" and {share(judged[worst].acceptance_rate)} on the {_names([worst])} "
                     f"({judged[worst].tokens_per_pass:.2f})")
        if silent:
            text += f", and no guess at all on the {_names(silent)}"
        out.append(text + ".")
    return "In the runs recorded below, " + " ".join(
        s[0].lower() + s[1:] if i == 0 else s for i, s in enumerate(out))


def recorded_rows(runs, repeats) -> list[tuple]:
    """The recorded table's rows: task, draft, acceptance, tokens per pass, the work-based figure,
    the median speedup, the repeats' lowest and highest, and the median run's verdict."""
    rows = []
    for (t, d), c in runs.items():
        reps = repeats.get((t, d)) or ({"speedup": c.speedup},)
        sp = [r["speedup"] for r in reps]
        f = c.fair
        rows.append((TASKS[t].split(":")[1].strip(), DRAFT_LABELS[d].split(" (")[0],
                     c.spec.acceptance_rate, c.spec.tokens_per_pass,
                     f.work_speedup if f is not None else math.nan, c.speedup, min(sp), max(sp),
                     f.verdict if f is not None else "–"))
    return rows


def recorded_caption(meta) -> str:
    """When, how and under what load the runs were recorded."""
    reps = meta.get("repeats", 1)
    return (f"Recorded on {meta['date']} on this project’s {meta['cores']}-core development machine, "
            f"k = {meta['k']}, "
            f"greedy, up to {meta['max_new']} new tokens; each race run {reps} times and the median "
            f"kept (load average {meta['load_average_before'][0]:.1f} at the start, "
            f"{meta['load_average_after'][0]:.1f} at the end: other work shared the cores, which the "
            "race's turns share out evenly between the two runs).")


def spread_sentence(rows) -> str:
    """How far the repeats' speedups moved, at most."""
    spreads = [(hi - lo, task, draft) for task, draft, *_, lo, hi, _ in rows if math.isfinite(hi - lo)]
    if not spreads:
        return ""
    worst = max(spreads)
    return (f"Each speedup is the median of the repeats; across the {len(rows)} rows the repeats "
            f"moved by at most {worst[0]:.2f} (on {worst[1]} with {worst[2].lower()}).")


def no_model_notice() -> str:
    """One line when this page cannot run the model (empty when it can)."""
    if lm.is_installed():
        return ""
    if sys.platform == "emscripten":
        return ("This static copy of the page cannot run the model: the tasks show runs recorded "
                "earlier, and your own prompt needs the page served by specdec-playable serve.")
    return f"The model is not installed on this server; install it with: {lm.INSTALL_COMMAND}"


def outro_html() -> str:
    """What the real run adds; the CPU's pass cost (where it was measured, said above) decides the
    last sentence."""
    cpu = cpu_passes()
    r5, r9 = cpu.ratio(5), cpu.ratio(9)
    grows = "is nearly one step too" if r5 < 1.3 else "grows with the positions"
    hw = (f"on this CPU it {grows} ({r5:.2f}× a step for 5 positions, {r9:.2f}× for 9)"
          + _break_even_gloss(cpu))
    return f"""
<h2>What the real run adds</h2>
<p class="sdp-lede">Everything Episode 2 simulated is here for real: the guesses are a real draft’s, a
miss is the model disagreeing, and the clocks are this server’s. Two things the simulation hid come
out. First, the text decides everything: the same draft flies on a reply that copies its prompt and
stalls on one that does not. Second, the hardware decides what a verify pass costs: on a GPU it is
nearly one step whatever k is; {hw}.</p>
"""


def _answer_copy_or_fresh(s: RealText):
    """Prompt lookup's recorded acceptance on the copy task against the fresh one."""
    runs = recorded_runs()
    copy, fresh = runs[("repeat", s.draft)].spec, runs[("sky", s.draft)].spec
    a, b = copy.acceptance_rate, fresh.acceptance_rate
    right = 2 if abs(a - b) < 0.05 else (0 if a > b else 1)
    return right, (f"In the recorded runs {share(a)} of prompt lookup's guesses were accepted when "
                   f"the model repeated a sentence, and {share(b)} when it explained the sky: a copy "
                   "task's reply repeats the prompt's words, which is exactly what prompt lookup "
                   "guesses, while fresh writing rarely repeats them.")


def _answer_early_exit(s: RealText):
    """The early exit's fair verdict on the copy task, from the recorded race."""
    c = recorded_runs()[(s.task, s.draft)]
    f = c.fair
    right = {"faster": 0, "slower": 1}.get(f.verdict, 2)
    how = (f"{f.speedup:.2f}× as fast, {f.level:.0%} interval {f.low:.2f}× to {f.high:.2f}×"
           if f.verdict != "too few rounds" else "too few rounds to tell")
    return right, (f"Recorded race: {how}, with {share(c.spec.acceptance_rate)} of its guesses "
                   "accepted. Each guess runs a fifth of the model, so it costs real time, and "
                   "without training the guesses are rarely the model's own choice.")


EXERCISES = (
    Exercise("With prompt lookup as the draft, on which task will more of its guesses be accepted?",
             ("repeating a sentence", "explaining why the sky is blue", "about the same"),
             {"task": "repeat", "draft": "lookup"}, _answer_copy_or_fresh),
    Exercise("The early exit drafts with the model's own first 6 of its 30 blocks. On the copy "
             "task, does it make decoding faster or slower?",
             ("faster", "slower", "no measurable difference"),
             {"task": "repeat", "draft": "early-exit"}, _answer_early_exit),
)


def page(state: RealText | None = None) -> pn.Column:
    """A fresh Episode 7 page (one per session or notebook cell). The model loads on the first Run."""
    state = state or RealText()
    notice = bind_url(state, URL_PARAMS)
    view = after_first_paint(
        lambda: RealTextView(state=state, ep5_href=f"./{ep5.SLUG}", ep6_href=f"./{ep6.SLUG}",
                             notice=no_model_notice()),
        name="ep7-view-slot")
    return episode_shell(
        number=NUMBER, title=TITLE, neighbours=neighbours(NUMBER), name="ep7",
        lede=LEDE, try_this=_try_this(),
        body=[notice, view, prose(lesson_html(), "ep7.css"), prose(NOTE), prose(outro_html()),
              exercises_section(state, EXERCISES, name="ep7")],
    )
