"""Episode 7's sentences, each computed from the run or the recording it describes.

The page's state (:mod:`..episodes.ep7.state`) and its view (:mod:`..episodes.ep7.view`) both say things about a
race of the real model: how it went (:func:`verdict`, :func:`why`, :func:`work_words`), whether its
text is the model's own (:func:`check_words`), where it waits in line (:func:`status_line`,
:func:`wait_words`) and what the recorded runs showed (:func:`recorded_summary`). They are written
here, once, from the numbers they state. Plain text: escape it for HTML.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass

from ...sim.validate import K_DEFAULT
from ...data.recorded import (has_recording, median_draft_cost, recorded_meta, recorded_runs,
                             recorded_weights)
from ...lm.head import head_meta
from ...lm import INSTALL_COMMAND
from ...lm.compare import Comparison
from ...lm.race import FASTER, LEVEL, NO_DIFFERENCE, SLOWER, TOO_FEW
from ...lm.prompts import TASKS
from ...lm.registry import DRAFTS, draft_key
from ...sim import theory
from ...data import hardware
from ...kit.cpu import cpu_passes
from ...kit.words import ms, plural, share, times

#: The coverage of every race's interval, in words ("95%").
LEVEL_WORDS = f"{LEVEL:.0%}"

#: A typed prompt's task key (not one of Episode 7's tasks).
CUSTOM = "custom"


#: Why prompt lookup's acceptance differs between the two kinds of task (shown with the prompt).
COPY_LINE = ("A copy task: the reply repeats words of the prompt, and prompt lookup guesses by "
             "copying what followed the same words in the prompt, so many of its guesses are right.")

FRESH_LINE = ("Fresh writing: the reply’s words are not in the prompt, so prompt lookup has little to "
              "copy and few of its guesses are right.")

#: What the page says once a run is cancelled (what both runs wrote stays on the page).
CANCELLED_LINE = ("Cancelled: both runs stop at their next pass. What they wrote so far is shown; "
                  "no speedup is measured from a cancelled run.")

def settings_line(s) -> str:
    """One run's settings (a :class:`..episodes.ep7.state.Settings`) in a line."""
    task = "your own prompt" if s.task == CUSTOM else TASKS[s.task].genre.lower()
    mode = "greedy" if s.greedy else f"sampling at temperature {s.temperature:g}, seed {s.seed}"
    return (f"{task} · {DRAFTS[s.draft].short} · k = {s.k} · up to {s.max_new} new tokens · {mode}")


def kind_line(task: str) -> str:
    """Whether a task is a copy task or fresh writing, and what that does to prompt lookup."""
    if task not in TASKS:
        return ""
    return COPY_LINE if TASKS[task].copy else FRESH_LINE

def ratio_words(speedup: float) -> str:
    """Speculative against plain, in words that agree with the number shown (two decimals)."""
    if not math.isfinite(speedup) or speedup <= 0:
        return "no speedup could be measured"
    shown = f"{speedup:.2f}"
    if shown == "1.00":
        return "as fast as plain decoding, to two decimals (1.00×)"
    if speedup > 1:
        return f"faster than plain decoding: {shown}× its tokens per second"
    return (f"slower than plain decoding: {shown}× its tokens per second "
            f"(plain decoding was {1 / speedup:.2f}× as fast)")

def decoded(run) -> int:
    """Tokens a run wrote after its prompt's pass (which wrote the first): what its decoding
    time is divided by."""
    return max(len(run.tokens) - 1, 0)


def per_token_ms(c: Comparison) -> tuple[float, float]:
    """(speculative, plain) decoding time per token, in ms: the two numbers the speedup divides.

    With the race's turns they are the race's own (:class:`..lm.race.FairSpeedup`); without,
    each run's decoding time (its clock less the prompt's pass) over the tokens it wrote after
    its first. NaN where a run wrote nothing after its prompt's pass.
    """
    f = c.fair
    if f is not None:
        return f.spec_ms_per_token, f.plain_ms_per_token
    out = []
    for run in (c.spec, c.plain):
        n = decoded(run) if run is not None else 0
        out.append(run.decode_ms / n if n else math.nan)
    return out[0], out[1]


def per_token_words(ms: float) -> str:
    """A time per token as the clocks show it (two decimals: their ratio is the speedup)."""
    return f"{ms:,.2f} ms" if math.isfinite(ms) else "–"


def basis_line(c: Comparison) -> str:
    """What the two clocks and the speedup count, with the numbers that make the speedup.

    The clocks count decoding, each run's prompt pass shown apart (no draft can shorten it:
    both runs read the prompt the same way); the speedup is plain decoding's time per token over
    speculative decoding's. Where both runs wrote the same number of tokens (greedy decoding)
    that is also the ratio of the two clocks. Empty until both runs have ended.
    """
    if not c.finished or c.spec is None or c.plain is None or not math.isfinite(c.speedup):
        return ""
    spec_t, plain_t = per_token_ms(c)
    ns, np_ = decoded(c.spec), decoded(c.plain)
    text = (f"Both clocks count decoding only: each run’s prompt pass ({c.spec.prefill_ms:,.0f} ms "
            f"and {c.plain.prefill_ms:,.0f} ms) is shown apart, since no draft can shorten it. "
            f"The speedup is plain decoding’s time per token over speculative decoding’s: "
            f"{per_token_words(plain_t)} ÷ {per_token_words(spec_t)} = {c.speedup:.2f}×")
    if ns == np_:
        return text + (f"; both wrote {plural(ns, 'token')} after their first, so it is also the "
                       f"ratio of the two clocks ({c.plain.decode_ms:,.0f} ms ÷ "
                       f"{c.spec.decode_ms:,.0f} ms).")
    return text + (f". The two runs wrote different numbers of tokens ({ns} and {np_} after their "
                   "first), so the clocks alone do not compare.")


def cost_words(cost: float) -> str:
    """A draft cost c to three decimals, or "under 0.001" when it would round to 0.000."""
    return f"{cost:.3f}" if cost >= 0.0005 else "under 0.001"

def interval_words(f) -> str:
    """The bootstrap interval of a fair speedup, in words (two decimals, as its verdict is
    judged: :func:`..lm.race.speedup_verdict`)."""
    return (f"{f.level:.0%} interval {f.low:.2f}× to {f.high:.2f}× (bootstrap over "
            f"{plural(f.n_rounds, 'round')}, {f.n_resamples:,} resamples)")


#: A weight format (``lm.model.WEIGHT_FORMATS``) as the page names it (the glossary's words).
WEIGHT_NAMES = {"f32": "float32", "q4": "4-bit"}


def weights_words(weights: str | None) -> str:
    """" (float32 weights)" for a known format, "" when it is not known."""
    return f" ({WEIGHT_NAMES.get(weights, weights)} weights)" if weights else ""


def speeds_words(f, weights: str | None = None) -> str:
    """Both runs' tokens per second in the race, whose ratio is the speedup: "80.5 tokens/s
    against plain decoding’s 22.4, with float32 weights" (the format left out if unknown)."""
    fmt = f", with {WEIGHT_NAMES.get(weights, weights)} weights" if weights else ""
    return (f"{f.spec_tokens_per_s:.1f} tokens/s against plain decoding’s "
            f"{f.plain_tokens_per_s:.1f}{fmt}")


def verdict(c: Comparison, weights: str | None = None) -> str:
    """The run's headline: faster, slower or no measurable difference, from the fair interval
    (:attr:`..lm.race.FairSpeedup.verdict`), with both runs' tokens per second; ``weights`` is
    the format the model ran in (both runs share it), if known."""
    f = c.fair
    if f is None:
        return f"On this run speculative decoding was {ratio_words(c.speedup)}."
    if f.verdict == TOO_FEW:
        return (f"Too few rounds to measure a speedup: {plural(f.n_rounds, 'round')} "
                "(the interval needs at least two); run more new tokens.")
    shown = f"{f.speedup:.2f}× plain decoding’s speed"
    speeds = f"speculative decoding wrote {speeds_words(f, weights)}"
    if f.verdict == FASTER:
        return f"Speculative decoding was faster: {shown}, {interval_words(f)}; {speeds}."
    if f.verdict == SLOWER:
        return (f"Speculative decoding was slower: {shown}, {interval_words(f)}; plain decoding "
                f"was {1 / f.speedup:.2f}× as fast: {speeds}.")
    assert f.verdict == NO_DIFFERENCE
    return (f"No measurable difference: {shown}, but its {interval_words(f)} includes 1.00×; "
            f"{speeds}.")


#: Who drafted a round, in words (``Generation.drafted_by``).
SOURCE_WORDS = {"memory": "the memory’s past replies", "request": "the memory of this conversation",
                "head": "the head", "head+memory": "both drafts", "head+request": "both drafts"}


def source_of(source: str) -> str:
    """One round's ``drafted_by`` as a reader says it ("the head", "both drafts", ...)."""
    return SOURCE_WORDS.get(source, "the draft")


def sources_sentence(run) -> str:
    """Whose guesses the passes of a memory or hybrid run kept, counted from its record; "" for a
    draft with one source (or a run with no kept guess)."""
    by = tuple(run.drafted_by)
    if not by:
        return ""
    ev = run.events.of_kind("accepted")
    kept_rounds = set(ev.round.tolist())
    counts: dict[str, int] = {}
    for rnd, src in enumerate(by, start=1):
        if rnd in kept_rounds and src:
            who = "both" if "+" in src else ("memory" if src in ("memory", "request") else src)
            counts[who] = counts.get(who, 0) + 1
    if not counts:
        return ""
    # (how the first named says it, how a later one does)
    named = [(first, later, counts.get(key, 0)) for key, first, later in (
        ("memory", "the memory’s guesses were kept", "the memory’s"),
        ("head", "the head’s guesses were kept", "the head’s"),
        ("both", "guesses both drafts made were kept", "guesses both drafts made"))]
    named = [(f, la, n) for f, la, n in named if n]
    parts = [f"{f if i == 0 else la} in {n}" for i, (f, la, n) in enumerate(named)]
    total = sum(counts.values())
    return (f"Of the {total} {'pass' if total == 1 else 'passes'} that kept a guess, "
            + (", ".join(parts[:-1]) + " and " + parts[-1] if len(parts) > 1 else parts[0]) + ".")


def round_cost(c: Comparison) -> float:
    """The one price of a speculative round the page states, in plain steps: the race's
    :attr:`..lm.race.FairSpeedup.round_cost` (the draft's guesses and the verify pass, each size
    at its median turn) where the run was raced, else the run's mean verify pass over its mean
    step (:attr:`..lm.compare.Comparison.verify_cost`, a run so far or recorded before the race)."""
    f = c.fair
    if f is not None and math.isfinite(f.round_cost):
        return f.round_cost
    return c.verify_cost if c.plain is not None and c.plain.passes else math.nan


def round_cost_words(c: Comparison) -> str:
    """The price of a round as the page shows it: "1.25×" (two decimals, as the work-based
    figure is derived from it), or "–"."""
    cost = round_cost(c)
    return f"{cost:.2f}×" if math.isfinite(cost) else "–"


def work_words(c: Comparison) -> str:
    """The work-based figure, derived from the two numbers :func:`why` states: tokens per pass
    over the round's price (:func:`round_cost`), which is what it is
    (:attr:`..lm.race.FairSpeedup.work_speedup`)."""
    f = c.fair
    if f is None or not math.isfinite(f.work_speedup):
        return ""
    return (f"By the work, the speedup an idle machine would show (each round priced at its "
            f"size’s median, so the load on the server drops out): {f.tokens_per_pass:.2f} tokens "
            f"per round ÷ {f.round_cost:.2f} steps per round ≈ {f.work_speedup:.2f}×.")


def why(c: Comparison, k: int) -> str:
    """Where the time went: tokens per verify pass against what a round and each guess cost
    (the round's price stated once, :func:`round_cost`)."""
    s = c.spec
    parts = []
    if s.proposed:
        judged = s.accepted + s.rejected
        parts.append(f"The model accepted {s.accepted} of the {judged} guesses it judged "
                     f"({s.acceptance_rate:.0%}), so each round, one verify pass, wrote "
                     f"{s.tokens_per_pass:.2f} tokens")
        cost = round_cost(c)
        if math.isfinite(cost) and c.fair is not None and math.isfinite(c.fair.round_cost):
            parts.append(f"but a round (the draft’s guesses and a verify pass over up to {k + 1} "
                         f"positions) cost {round_cost_words(c)} a plain step (medians of "
                         f"{plural(int(c.fair.size_counts.sum()), 'round')} and "
                         f"{plural(int(c.plain.passes), 'step')})")
        elif math.isfinite(cost):
            parts.append(f"but a verify pass over up to {k + 1} positions cost {round_cost_words(c)} "
                         f"a plain step on average ({c.verify_ms:,.0f} ms against {c.step_ms:,.0f} ms)")
        if math.isfinite(c.draft_cost):
            parts.append(f"and of that each guess cost {cost_words(c.draft_cost)} of a step to make "
                         f"({s.draft_ms_per_token:.2f} ms, measured in this run, with whatever else "
                         "the server is doing)")
        text = ", ".join(parts[:1]) + (", " + " ".join(parts[1:]) if len(parts) > 1 else "") + "."
    else:
        text = "The draft proposed nothing on this run, so every pass was a plain decode step."
    idle = sum(1 for r in set(s.events.round[(s.events.kind == "generate")].tolist()) if r > 0)
    if s.proposed and idle:
        text += (f" The draft had no guess at {idle} of the {s.passes} passes; those were plain "
                 "decode steps.")
    work = work_words(c)
    return text + (" " + work if work else "")

def map_words(c: Comparison, k: int) -> str | None:
    """Where Episode 5's theory puts this run, against what was measured (None: no q measured)."""
    q, cost = c.spec.acceptance_rate, c.draft_cost
    if not (math.isfinite(q) and math.isfinite(cost) and math.isfinite(c.speedup)):
        return None
    predicted = theory.expected_speedup(min(q, 1.0), k, min(cost, 1.0))
    c_text = f"c = {cost:.3f}" if cost >= 0.0005 else "c under 0.001"
    text = (f"Episode 5’s theory puts q = {q:.2f}, k = {k}, {c_text} at "
            f"{predicted:.2f}×. It counts a verify pass as one step, as on a GPU")
    if math.isfinite(round_cost(c)):
        what = "round" if c.fair is not None and math.isfinite(c.fair.round_cost) else "verify pass"
        text += f"; here a {what} cost {round_cost_words(c)} a step (above)"
    return text + f", and this run measured {c.speedup:.2f}×."

def check_words(c: Comparison, g) -> tuple[str, str]:
    """The guarantee, as (verdict kind, sentence): kind is ``ok``, ``fail``, ``pending`` or ``info``.

    ``g`` is the greedy runs' :class:`..sim.relay.Guarantee` (None when there is none yet)."""
    if c.spec is None:
        return "pending", "The guarantee is checked once both runs have written."
    if not c.greedy:
        same = c.plain is not None and c.plain.tokens == c.spec.tokens
        if c.plain is None or not c.finished:
            return "pending", "Sampling: the plain run is a second draw, compared when it ends."
        return "info", ("Sampling: the two runs are two separate draws, so their texts "
                        + ("happen to be the same" if same else "differ")
                        + ". What speculative sampling guarantees is the distribution: every token "
                          "comes from the model’s own probabilities, whatever the draft guessed.")
    if g is None:
        return "pending", "The plain run checks the guarantee token by token once it starts."
    n = g.n_tokens
    if not g.ok:
        return "fail", (f"Mismatch: {g.matches} of {n} tokens match; the first difference is at "
                        f"token {g.first_mismatch + 1}.")
    if not c.finished:
        return "pending", f"Checking token by token: {n} of {len(c.spec.tokens)} tokens so far, all identical."
    if len(c.plain.tokens) < len(c.spec.tokens):
        return "ok", (f"Checked token by token: the plain run stopped after {n} of "
                      f"{len(c.spec.tokens)} tokens, and those {n} are identical.")
    return "ok", (f"Checked token by token: all {n} tokens are identical to what the model writes "
                  "alone, one pass per token.")

def stopped_line(c: Comparison | None, budget_s: float) -> str:
    """Why a finished run ended early, if it did (empty otherwise); ``budget_s`` is the server's
    time budget for a run."""
    if c is None or c.spec is None:
        return ""
    if c.spec.stopped == "time" or (c.plain is not None and c.plain.stopped == "time"):
        return (f"The server’s time budget ({budget_s:.0f} s for both runs) ran out: the runs "
                "stopped early, and the numbers are for what they wrote.")
    return ""

def estimated_wait_s(position: int, workers: int, running_elapsed_s, recent_run_s) -> float | None:
    """Seconds until a run at ``position`` in line starts, from the measured run times.

    Each run ahead is taken to last the median of ``recent_run_s`` (the last runs that finished
    on this server); a running one has that minus what it has already run (at least 0). The
    runs ahead go to whichever worker frees first. None when no run has finished yet.
    """
    if not recent_run_s or position < 1:
        return None
    typical = float(sorted(recent_run_s)[len(recent_run_s) // 2])
    free = sorted([max(typical - e, 0.0) for e in running_elapsed_s][:workers]
                  + [0.0] * max(workers - len(running_elapsed_s), 0))
    for _ in range(position - 1):
        free[0] += typical
        free.sort()
    return free[0]

def wait_words(position: int, workers: int, running_elapsed_s, recent_run_s,
               crowded_run_s=()) -> str:
    """The estimated wait in a sentence, with what it was computed from.

    A run behind a line will run with every worker busy, so the runs measured that way
    (``crowded_run_s``) are used when there are any: where runs contend for the memory, as on
    a CPU, they take longer than runs made alone (``benchmarks/bench_class.py``).
    """
    times = crowded_run_s or recent_run_s
    wait = estimated_wait_s(position, workers, running_elapsed_s, times)
    if wait is None:
        return "No run has finished on this server yet, so there is no measured time to estimate the wait from."
    typical = float(sorted(times)[len(times) // 2])
    runs = plural(len(times), "run")
    busy = " with every worker busy" if crowded_run_s else ""
    when = "in a moment" if wait < 1 else f"in about {_seconds(wait)}"
    return f"Estimated start {when}: the last {runs} here{busy} took {_seconds(typical)} each (median)."

def full_line(waiting: int, workers: int, running_elapsed_s, recent_run_s, crowded_run_s=()) -> str:
    """Why a Run was refused when the line is full, and when a place should free up (the next
    run's estimated start, from the measured run times, as :func:`wait_words` takes them)."""
    wait = estimated_wait_s(1, workers, running_elapsed_s, crowded_run_s or recent_run_s)
    when = ("Try again once a run has finished." if wait is None else
            "Try again in a moment." if wait < 1 else
            f"Try again in about {_seconds(wait)}, when the next run should start.")
    return (f"The line is full: {plural(waiting, 'run')} already waiting for the model on this server, "
            f"the most it holds, so this one was not queued. {when}")

def _seconds(s: float) -> str:
    return f"{s:.0f} s" if s < 90 else f"{s / 60:.1f} min"

#: After a failed run's one-line reason: what the visitor can do.
RUN_AGAIN = "Press Run to try again (a fresh model process takes over if this one died)."


#: The status while the model loads and the recorded run of the same task and draft is shown.
LOADING_MEANWHILE = ("Loading the model on the server (once per worker process; minutes on a busy "
                     "machine)… Meanwhile the run recorded for this task and draft is shown below; "
                     "your own run replaces it as soon as it starts.")


def status_line(status: str, position: int, c: Comparison | None, *, model_loaded: bool,
                workers: int = 1, running: int = 0, running_elapsed_s=(), recent_run_s=(),
                crowded_run_s=(), interim: bool = False) -> str:
    """What the visitor's run is doing, in one line (plain text); the queue's figures (as one
    poll saw them) are read only for a queued run. ``interim``: the run shown is the recorded
    one, while the model loads."""
    if status == "queued":
        # Free workers take the runs at the head of the line (in the moment before they do, the
        # line and a free worker are both seen); a run further back waits for a busy one.
        if position <= workers - running:
            return (f"Waiting in line: position {position}. A worker is free, so this run starts "
                    "in a moment.")
        busy = "busy" if running >= workers else "busy or about to be"
        return (f"Waiting in line: position {position}. All {workers} workers are {busy} (one run "
                f"per core). " + wait_words(position, workers, running_elapsed_s, recent_run_s,
                                            crowded_run_s))
    if status == "running":
        if interim:
            return LOADING_MEANWHILE
        if c is None or c.spec is None:
            return ("Loading the model on the server (once per worker process)…" if not model_loaded
                    else "Starting…")
        n_plain = len(c.plain.tokens) if c.plain is not None else 0
        return (f"Racing, pass by pass: speculative {plural(len(c.spec.tokens), 'token')} "
                f"({plural(c.spec.passes, 'pass', 'passes')} after the prompt’s), plain "
                f"{plural(n_plain, 'token')} so far.")
    if status == "idle":
        return ("Press Run: the server writes the reply twice, speculatively and plainly, taking turns "
                "pass by pass so that both meet the same load.")
    return ""


def recorded_on(meta, draft: str | None = None) -> str:
    """The date ``draft``'s runs were recorded: a later recording's (``meta["added"]``) where one
    holds them, else the recording's."""
    for a in reversed(meta.get("added", ())):
        if draft is not None and draft in {draft_key(d) for d in a["drafts"]}:
            return a["date"]
    return meta["date"]


def no_model_line(task: str, draft: str | None = None) -> str:
    """One line: the model is not on this server, and what that means for a Run of ``task``
    with ``draft``."""
    meta = recorded_meta() if has_recording() else None
    if task == CUSTOM or meta is None:
        return f"The model is not installed here, so nothing can run live; install it with: {INSTALL_COMMAND}"
    return (f"The model is not installed here: this is a run recorded on {recorded_on(meta, draft)} "
            f"(k = {meta['k']}, greedy, up to {meta['max_new']} tokens). Live runs need the server "
            f"with the model: {INSTALL_COMMAND}")


def _names(keys) -> str:
    """Tasks as a sentence names them ("the sum function and sky explanation")."""
    names = [TASKS[k].named for k in keys]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def break_even_gloss(cpu) -> str:
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
    fresh = [t for t in mine if not TASKS[t].copy]
    best = max(mine, key=lambda t: mine[t].tokens_per_pass)
    text = (f"It needs nothing to copy: in the runs recorded below it wrote "
            f"{mine[best].tokens_per_pass:.2f} tokens per pass on the {_names([best])}")
    others = [t for t in fresh if t != best]
    if others:
        text += ", " + ", ".join(f"{mine[t].tokens_per_pass:.2f} on the {_names([t])}" for t in others)
    mid = median_draft_cost("head")
    alone = head_meta().get("measured", {}).get("cost", {}).get("c")
    if mid is None:
        return text + "."
    text += f"; each guess cost about {cost_words(mid)} of a step inside these runs"
    if alone is not None and mid > alone:
        text += (f", more than the {alone:.3f} Episode 4 quotes for the head guessing alone: here "
                 "each round's guesses also read the tokens the last pass accepted and come "
                 "straight after a pass of the big model, which has pushed the head's weights out "
                 "of the processor's cache (see draft cost in the glossary)")
    return text + "."


def recorded_summary(runs) -> str:
    """One sentence per draft: the recorded tasks where most and fewest of its guesses were accepted.

    Acceptance in greedy decoding does not depend on the clock, so these sentences hold on any
    machine; the speedups in the table are this machine's clocks and move from run to run.
    """
    out = []
    for d, spec in DRAFTS.items():
        name = spec.subject
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


@dataclass(frozen=True)
class RecordedRow:
    """One row of the recorded runs' table: a task and draft, raced ``repeats`` times.

    ``speedup``, ``low``, ``high``, ``verdict`` and both tokens per second are the median
    repeat's race (:class:`..lm.race.FairSpeedup`: its interval, the verdict judged on it by
    :func:`..lm.race.speedup_verdict`); ``lowest`` and ``highest`` are the repeats' speedups,
    which say how far the whole measurement moved from race to race.
    """

    task: str
    draft: str
    acceptance: float
    tokens_per_pass: float
    work_speedup: float
    speedup: float
    low: float
    high: float
    verdict: str
    plain_tokens_per_s: float
    spec_tokens_per_s: float
    lowest: float
    highest: float


def recorded_rows(runs, repeats) -> list[RecordedRow]:
    """The recorded table's rows (:class:`RecordedRow`), in the recording's order."""
    rows = []
    for (t, d), c in runs.items():
        reps = repeats.get((t, d)) or ({"speedup": c.speedup},)
        sp = [r["speedup"] for r in reps]
        f = c.fair
        nan = math.nan
        rows.append(RecordedRow(
            task=TASKS[t].title, draft=DRAFTS[d].label, acceptance=c.spec.acceptance_rate,
            tokens_per_pass=c.spec.tokens_per_pass,
            work_speedup=f.work_speedup if f is not None else nan, speedup=c.speedup,
            low=f.low if f is not None else nan, high=f.high if f is not None else nan,
            verdict=f.verdict if f is not None else "–",
            plain_tokens_per_s=f.plain_tokens_per_s if f is not None else nan,
            spec_tokens_per_s=f.spec_tokens_per_s if f is not None else nan,
            lowest=min(sp), highest=max(sp)))
    return rows


def _draft_names(keys) -> str:
    """Drafts as a sentence names them ("draft head", "draft head and early exit")."""
    names = [DRAFTS[draft_key(k)].label.lower() for k in keys]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def recorded_caption(meta, weights: str | None = None) -> str:
    """When, how and under what load the runs were recorded (a later recording of some drafts,
    ``meta["added"]``, with its own date and load); ``weights`` is their weight format."""
    reps = meta.get("repeats", 1)
    fmt = f", {WEIGHT_NAMES.get(weights, weights)} weights" if weights else ""
    later = "".join(f", the {_draft_names(a['drafts'])}’s runs again on {a['date']} (load average "
                    f"{a['load_average_before'][0]:.1f} at the start, {a['load_average_after'][0]:.1f} "
                    "at the end)" for a in meta.get("added", ()))
    return (f"Recorded on {meta['date']} on this project’s {meta['cores']}-core development machine "
            f"(load average {meta['load_average_before'][0]:.1f} at the start, "
            f"{meta['load_average_after'][0]:.1f} at the end){later}; k = {meta['k']}{fmt}, greedy, up "
            f"to {meta['max_new']} new tokens; each race run {reps} times and the median kept. Other "
            "work shared the cores, which the race's turns share out evenly between the two runs.")


def spread_sentence(rows) -> str:
    """How far the repeats' speedups moved, at most, and what the verdict is judged on."""
    spreads = [(r.highest - r.lowest, r.task, r.draft) for r in rows
               if math.isfinite(r.highest - r.lowest)]
    if not spreads:
        return ""
    worst = max(spreads)
    return (f"Each speedup is the median of the repeats, shown with its own race’s {LEVEL_WORDS} "
            "interval, and its verdict is that interval’s: faster where the interval, read to two "
            "decimals, lies above 1.00×, slower where it lies below, no measurable difference "
            f"where it includes or touches 1.00×. Across the {len(rows)} rows the repeats "
            f"moved by at most {worst[0]:.2f} (on {worst[1]} with {worst[2].lower()}).")


#: The setting the summary's link opens.
SUMMARY_LINK = {"task": "repeat", "draft": "lookup", "k": K_DEFAULT}


def summary_sentence() -> str:
    """The summary's sentence (trusted HTML; every number computed)."""
    cpu = cpu_passes()
    gpu = hardware.measured_curve("llama-8b-shape", "gemm-cudagraph")
    r_cpu = cpu.ratio(5)
    r_gpu = float(gpu.time_ms(5) / gpu.time_ms(1))
    run = recorded_runs().get((SUMMARY_LINK["task"], SUMMARY_LINK["draft"]))
    speeds = (f" ({speeds_words(run.fair, recorded_weights())})"
              if run is not None and run.fair is not None else "")
    rec = ("" if run is None or not run.finished else
           f" In the run recorded on {recorded_meta()['date']}, prompt lookup on repeating a sentence was "
           f"{times(run.speedup)} as fast as plain decoding{speeds}.")
    rec += memory_summary()
    need = (f", so even a free draft pays at k = 4 only if its guesses are accepted at a rate of at "
            f"least q = {cpu.free_draft_break_even(4):.2f}" if 1 < r_cpu < 5 else "")
    return (f"A real model on a CPU, where a pass over 5 positions costs {times(r_cpu)} a "
            f"one-position step (on the H200, {times(r_gpu)}){need}. The CPU's figures were "
            f"{html.escape(cpu.source)}." + rec)


def memory_summary() -> str:
    """One sentence on the memory draft's recorded runs: its fastest and its slowest task other
    than the copy task (empty when fewer than two were recorded)."""
    runs = {t: r for (t, d), r in recorded_runs().items()
            if d == "memory" and r.finished and t != "repeat"}
    if len(runs) < 2:
        return ""
    best = max(runs, key=lambda t: runs[t].speedup)
    low = min(runs, key=lambda t: runs[t].speedup)
    return (f" In runs recorded on {recorded_on(recorded_meta(), 'memory')}, the memory draft, which "
            f"copies what the model’s own past replies said next (no network, no model of its own), "
            f"ran {times(runs[best].speedup)} as fast as plain decoding on the "
            f"{TASKS[best].named} and {times(runs[low].speedup)} on the {TASKS[low].named}.")


def counter_text(text: str | None, max_chars: int) -> str:
    """The prompt box's counter: characters typed of the ``max_chars`` a prompt may have."""
    n = len(text or "")
    over = " — too long: shorten it to run" if n > max_chars else ""
    return f"{n:,} of {max_chars} characters{over}"


def lanes_words(c: Comparison) -> str:
    """The lanes' text alternative: both runs' passes and their decoding clocks, in numbers."""
    spec, plain = c.spec, c.plain
    return (f"Three lanes, each run on its own clock from zero: the draft's guesses, the model's "
            f"verify passes ({plural(spec.passes, 'pass', 'passes')} after the prompt's, "
            f"{plural(len(spec.tokens), 'token')}, {ms(spec.decode_ms)} of decoding) and the model "
            f"alone ({plural(plain.passes, 'pass', 'passes')} after the prompt's, "
            f"{plural(len(plain.tokens), 'token')}, {ms(plain.decode_ms)}). The model accepted "
            f"{spec.accepted} of the {spec.accepted + spec.rejected} guesses it judged.")
