"""Episode 7's view: a real model's speculative run beside its plain run, live, then replayable.

While a run is in the worker, the page polls the state a few times a second (a periodic
callback of this session, only while its run is active) and shows the text written so far with
Episode 2's marks, the run's place in line or progress, and the live check of the guarantee.
When the run ends, Episode 2's mechanism takes over: the lane player draws the measured events
on three lanes (the draft's guesses, the model's verify passes, and the model alone, one pass
per token), and Episode 2's frame hook (``kit/static/relay_frame.js``, whose header is the
contract for the ``data-*`` attributes written here) replays the texts and the two clocks in
step with the lanes, in the browser. While a run is live the HTML carries no timing attributes,
so the hook leaves it alone.

:func:`real_timeline`, :func:`clock_rows`, :func:`text_html`,
:func:`clocks_html`, :func:`check_html`, :func:`notes_html`, :func:`status_html`,
:func:`prompt_html`, :func:`counter_text`, :func:`legend_html` and :func:`recorded_html` are
plain functions a test can call.
"""

from __future__ import annotations

import math
import uuid
from functools import partial
from urllib.parse import urlencode

import numpy as np
import panel as pn
import param
from bokeh.models import ColumnDataSource

from ...kit.words import share
from ...lm.compare import WRITTEN, Comparison, as_relay, token_texts
from ...lm.decode import Generation
from ...lm.prompts import TASKS
from ...lm.race import TOO_FEW
from .words import (CUSTOM, basis_line, check_words, cost_words, decoded, kind_line,
                         map_words, per_token_ms, per_token_words, ratio_words,
                         round_cost_words, settings_line, speeds_words, status_line, verdict,
                         source_of, sources_sentence, weights_words, why)
from .state import PROMPT_MAX_CHARS, RealText, recorded_settings
from .words import counter_text, lanes_words
from ...kit import theme
from ...kit.a11y import describe
from ...kit.figures import anchor_figures
from ...kit.modelstatus import status_line as model_status_line
from ...kit.poller import RunPoller
from ...kit.inputs import SeedBox, control_help
from ...kit.relay import STYLES, relay_timeline, token_span
from ...kit.relay import legend_html as relay_legend
from ...kit.lanes import Box, Lane, LanePlayer, Timeline
from ...kit.page import StateView, esc, page_css, prose

DRAFT_Y, BIG_Y, PLAIN_Y = 1.2, 0.0, -1.2
BOX_H = 0.56
#: Width of the controls' column (px): the task select shows every task's whole name.
CONTROLS_PX = 380
#: While replaying, the time axis follows the clock over this many of the run's passes.
PASSES_IN_VIEW = 8
SPEEDS = {"0.1×": 0.1, "0.25×": 0.25, "0.5×": 0.5, "1× (real time)": 1.0, "2×": 2.0}
_CSS = ("relay.css", f"{__package__}:ep7.css")

LANES = (
    Lane("draft", "Draft: its guesses", DRAFT_Y, theme.DRAFT),
    Lane("big", "Model: one pass checks the guesses", BIG_Y, theme.BIG),
    Lane("plain", "Model alone: one pass per token", PLAIN_Y, theme.BIG),
)


def _ms(ms: float) -> str:
    return f"{ms:,.0f} ms"


def _shown(text: str) -> str:
    """A token's text with its line breaks and tabs made visible (for guesses that were struck out)."""
    return text.replace("\n", "↵").replace("\t", "⇥")


# --- the lanes -----------------------------------------------------------------------------------


def _plain_passes(run: Generation, lane: str, y: float, who: str) -> list[Box]:
    """The prompt's pass and every one-token pass of ``run``, as boxes on ``lane``."""
    ev = run.events.of_kind("generate")
    n_prompt = len(run.prompt)
    out = []
    for rnd, pos, text, s, e in zip(ev.round.tolist(), ev.token.tolist(), ev.text.tolist(),
                                    ev.start_ms.tolist(), ev.end_ms.tolist()):
        word = text.strip() or _shown(text)
        if rnd == 0:
            out.append(Box(lane, s, e, y, BOX_H, "prompt", "generate", label_size="11px",
                           tip=(f"{who}: the prompt’s pass reads its {n_prompt} tokens at once and "
                                f"writes the first token, “{word}” ({_ms(e - s)})")))
        else:
            tip = (f"{who}, pass {rnd}: writes “{word}” ({_ms(e - s)})" if lane == "plain" else
                   f"pass {rnd}: the draft had no guess, so this pass wrote one token, “{word}”, "
                   f"as plain decoding does ({_ms(e - s)})")
            out.append(Box(lane, s, e, y, BOX_H, word, "generate", label_size="10px", tip=tip))
    return out


def real_timeline(c: Comparison) -> Timeline:
    """Three lanes of a finished comparison, each run from its own start on one time axis.

    The speculative run's verify rounds are drawn exactly as Episode 2 draws its relay
    (:func:`kit.relay.relay_timeline`, with the plain run's step as the cost of a token
    alone); its other passes and the plain run's passes are drawn here. The step button stops
    at the end of every pass of the speculative run.
    """
    spec, plain = c.spec, c.plain
    step = c.step_ms if math.isfinite(c.step_ms) else 0.0
    relay = relay_timeline(as_relay(spec), pass_ms=step) if spec.passes else Timeline(())
    boxes = (*relay.boxes, *_plain_passes(spec, "big", BIG_Y, "speculative run"),
             *(_plain_passes(plain, "plain", PLAIN_Y, "plain run") if plain is not None else ()))
    big = spec.events.where(spec.events.lane == "big")
    stops = sorted(set(big.end_ms.tolist()))
    mean_pass = (spec.decode_ms / spec.passes) if spec.passes else spec.wall_ms
    return Timeline(tuple(boxes), stops=tuple(stops), window_ms=PASSES_IN_VIEW * max(mean_pass, 1.0))


# --- the clocks, row by row, for the replay (see relay_frame.js) -----------------------------------


def _written_by(run: Generation) -> tuple[np.ndarray, np.ndarray]:
    """End of each pass of ``run`` and the tokens written once it ended (capped at the output)."""
    ev = run.events.where(run.events.lane == "big")
    ends = {}
    for rnd, e in zip(ev.round.tolist(), ev.end_ms.tolist()):
        ends[rnd] = max(ends.get(rnd, 0.0), e)
    made = run.events.of_kind(*WRITTEN)
    per_round = {r: 0 for r in ends}
    for rnd in made.round.tolist():
        per_round[rnd] += 1
    order = sorted(ends)
    t = np.array([ends[r] for r in order], float)
    n = np.minimum(np.cumsum([per_round[r] for r in order]), len(run.tokens))
    return t, n


def _speedup_label(c: Comparison, weights: str | None = None) -> str:
    """The caption under the speedup: the two times per token it divides and both runs' tokens
    per second (with the weight format, if known), then the fair verdict and its interval (or,
    for a run recorded before the race, the plain ratio)."""
    spec_t, plain_t = per_token_ms(c)
    if not (np.isfinite(spec_t) and np.isfinite(plain_t)):  # a one-token run: nothing decoded
        return "nothing to time: each run’s only token came from its prompt’s pass"
    basis = f"{per_token_words(plain_t)} ÷ {per_token_words(spec_t)} a token (decoding)"
    f = c.fair
    if f is None:
        words = ratio_words(c.speedup)
        return basis + weights_words(weights) + (
            " · measured: " + words.split(":")[0] if words.startswith("slower") else " · measured speedup")
    basis += f": {speeds_words(f, weights)}"
    if f.verdict == TOO_FEW:
        return basis + " · too few rounds for an interval"
    return (f"{basis} · {f.verdict}: {f.level:.0%} interval {f.low:.2f}–{f.high:.2f}× over "
            f"{f.n_rounds} rounds")


def decode_clock_ms(run: Generation, t: float) -> float:
    """A run's decoding clock when its own clock reads ``t``: the time after its prompt's pass
    (0 during it), up to its whole decoding time."""
    return min(max(t - run.prefill_ms, 0.0), run.decode_ms)


def clock_rows(c: Comparison, weights: str | None = None) -> dict:
    """Display strings of the clocks at every pass end of either run (row 0: the start).

    The clocks count decoding (each run's own time after its prompt's pass), as the speedup
    does; the prompt's pass is said in the caption.
    """
    spec_t, spec_n = _written_by(c.spec)
    plain_t, plain_n = _written_by(c.plain)
    times = np.unique(np.concatenate([[0.0], spec_t, plain_t]))
    rows = dict(end_ms=times.tolist(), bad_rounds=[0] * len(times), spec_clock=[], spec_label=[],
                plain_clock=[], plain_label=[], speedup=[], speedup_label=[], when=[], basis=[])
    basis = basis_line(c)
    for t in times:
        done = []
        for run, ts, ns, who in ((c.spec, spec_t, spec_n, "spec"), (c.plain, plain_t, plain_n, "plain")):
            k = int(np.searchsorted(ts, t, side="right"))
            n = int(ns[k - 1]) if k else 0
            finished = k == len(ts)
            done.append(finished)
            rows[f"{who}_clock"].append(_ms(run.decode_ms if finished else decode_clock_ms(run, t)))
            rows[f"{who}_label"].append(_run_label(run, n, finished, c))
        both = all(done)
        rows["speedup"].append(f"{c.speedup:.2f}×" if both and math.isfinite(c.speedup) else "…")
        rows["speedup_label"].append(_speedup_label(c, weights) if both else
                                     "measured speedup: once both runs have ended")
        rows["basis"].append(basis if both else "")
        rows["when"].append("Both runs have ended." if both else
                            f"{t / 1e3:.2f} s into each run’s own time (the two took turns, pass "
                            "by pass; each clock counts only its own passes)")
    return rows


def _run_label(run: Generation, n: int, finished: bool, c: Comparison | None = None) -> str:
    """The caption under a clock: the run's tokens and its prompt's pass (shown apart from the
    clock), and once it ended its decoding time per token (what the speedup divides)."""
    who = "plain" if run.draft == "none" else "speculative"
    tokens = f"{n} token{'' if n == 1 else 's'}"
    prompt = f"the prompt’s pass {_ms(run.prefill_ms)}, apart"
    if not finished:
        return f"{who}: {tokens} so far · {prompt}"
    each = math.nan
    if c is not None and c.finished:
        spec_t, plain_t = per_token_ms(c)
        each = plain_t if who == "plain" else spec_t
    elif decoded(run):
        each = run.decode_ms / decoded(run)
    after = decoded(run)
    return (f"{who}: {tokens}, the first from {prompt}; {after} after it, "
            f"{per_token_words(each)} each")


# --- the texts (see relay_frame.js for the data-* contract) ----------------------------------------


#: Episode 2's token span, with only spaces held apart as the lead: a model token's newlines
#: stay in its marked word.
model_span = partial(token_span, lead_chars=" ")


def _spec_spans(run: Generation, timed: bool) -> tuple[list[str], list[str]]:
    """The speculative run's spans (live) and its end state without timing (the ghost)."""
    n_out = len(run.tokens)
    ev = run.events
    big = ev.where(ev.lane == "big")
    live, ghost = [], []
    end_of = {}
    for rnd, s, e in zip(big.round.tolist(), big.start_ms.tolist(), big.end_ms.tolist()):
        lo, hi = end_of.get(rnd, (s, e))
        end_of[rnd] = (min(lo, s), max(hi, e))
    guesses = {}
    for kind in ("rejected", "discarded"):
        sel = ev.of_kind(kind)
        for rnd, txt in zip(sel.round.tolist(), sel.text.tolist()):
            guesses.setdefault(rnd, []).append(txt)
    drafts = ev.of_kind("draft")
    total = run.wall_ms
    for rnd in sorted(end_of):
        v0, v1 = end_of[rnd]
        if timed:
            mine = drafts.round == rnd
            for guess, e in zip(drafts.text[mine].tolist(), drafts.end_ms[mine].tolist()):
                live.append(model_span("tk tk-draft", guess, title="guessed, waiting for the model’s check",
                                       on=e, off=v1, chk=v0, hidden=True))
        sel = ev.where((ev.round == rnd) & np.isin(ev.kind, (*WRITTEN, "rejected")) & (ev.token < n_out))
        order = np.lexsort((np.array([k != "rejected" for k in sel.kind.tolist()]), sel.token))
        for i in order.tolist():
            kind, txt = str(sel.kind[i]), str(sel.text[i])
            wrong = guesses.get(rnd, [])
            if kind == "rejected":
                cls, title, txt = "tk tk-rej", "the draft’s guess, rejected by the model", _shown(txt)
            elif kind == "accepted":
                cls, title = "tk kept tk-acc", "a guess the model accepted"
                if run.drafted_by and 0 < rnd <= len(run.drafted_by) and run.drafted_by[rnd - 1]:
                    title = f"a guess from {source_of(run.drafted_by[rnd - 1])}, which the model accepted"
            elif kind == "correction":
                said = "".join(_shown(w) for w in wrong)
                cls, title = "tk kept tk-fix", f"the model’s own token; the draft had guessed “{said}”"
            elif kind == "bonus":
                cls, title = "tk kept tk-bonus", "a bonus token: every guess was right, so the same pass adds one more"
            else:
                cls = "tk kept tk-gen"
                title = "the prompt’s pass wrote this" if rnd == 0 else "a plain pass: the draft had no guess"
            live.append(model_span(cls, txt, title=title, on=v1 if timed else None,
                                   hidden=timed and v1 > total))
            ghost.append(model_span(cls.replace("tk ", "").replace("kept ", ""), txt))
    return live, ghost


def _plain_spans(run: Generation, timed: bool) -> tuple[list[str], list[str]]:
    ev = run.events.of_kind("generate")
    texts = token_texts(run)
    live, ghost = [], []
    for pos, e in zip(ev.token.tolist(), ev.end_ms.tolist()):
        if pos >= len(texts):
            continue
        live.append(model_span("tk tk-plain", texts[pos], on=e if timed else None))
        ghost.append(model_span("tk-plain", texts[pos]))
    return live, ghost


#: Kinds of task whose reply is code: it keeps its lines and scrolls sideways inside its box.
_CODE_KINDS = ("code", "json")


def reply_is_code(task: str, reply: str) -> bool:
    """Whether a reply is shown as code (lines kept, its box scrolls sideways) rather than prose
    (wrapped): a code or JSON task's reply, or any reply with a fenced code block in it.

    Examples
    --------
    >>> reply_is_code("sum-function", ""), reply_is_code("sky", "The sky is blue because ...")
    (True, False)
    """
    t = TASKS.get(task)
    return (t is not None and t.kind in _CODE_KINDS) or "```" in reply


def _textbox(title: str, live: list[str], ghost: list[str], css: str, empty: str,
             code: bool = False) -> str:
    body = "".join(live) or f'<span class="ep7-empty">{esc(empty)}</span>'
    genre = " ep7-code" if code else ""
    return (f'<div class="ep2-textbox ep7-textbox{genre}"><h3>{esc(title)}</h3><div class="ep2-stack">'
            f'<div class="ep2-text ep7-mono ep2-ghost" aria-hidden="true">{"".join(ghost)}</div>'
            f'<div class="ep2-text ep7-mono {css}">{body}</div></div></div>')


def text_html(c: Comparison | None, uid: str, *, timed: bool = False, code: bool = False) -> str:
    """Both texts, the speculative one with Episode 2's marks. ``timed``: replayable by the hook;
    ``code``: the replies are code (:func:`reply_is_code`), shown with their lines kept."""
    spec_live, spec_ghost = _spec_spans(c.spec, timed) if c is not None and c.spec is not None else ([], [])
    plain_live, plain_ghost = _plain_spans(c.plain, timed) if c is not None and c.plain is not None else ([], [])
    return (f'<div class="ep7-texts" data-sdp="{esc(uid)}-text">'
            + _textbox("Speculative decoding", spec_live, spec_ghost, "ep7-spec", "Nothing written yet.",
                       code)
            + _textbox("Plain decoding, same prompt", plain_live, plain_ghost, "ep7-plain",
                       "Nothing written yet.", code)
            + "</div>")


def _stat(value: str, label: str, *, keys: tuple[str, str] | None = None, css: str = "") -> str:
    """A big number and its caption; ``keys`` name the rows' columns the replay writes into them."""
    kv, kl = (f' data-k="{keys[0]}"', f' data-k="{keys[1]}"') if keys else ("", "")
    return (f'<div class="sdp-stat {css}"><div class="v"{kv}>{esc(value)}</div>'
            f'<div class="l"{kl}>{esc(label)}</div></div>')


def clocks_html(c: Comparison | None, uid: str, *, timed: bool = False,
                weights: str | None = None) -> str:
    """Both clocks, the speedup, and the run's acceptance, tokens per pass and costs (end state);
    ``weights`` is the format the model ran in, if known."""
    spec = c.spec if c is not None else None
    plain = c.plain if c is not None else None
    big = []
    for run, who, label in ((spec, "spec", "speculative decoding"), (plain, "plain", "plain decoding")):
        keys = (f"{who}_clock", f"{who}_label") if timed else None
        if run is None:
            big.append(_stat("–", f"{label}: not started", keys=keys))
        else:
            big.append(_stat(_ms(run.decode_ms), _run_label(run, len(run.tokens), run.stopped != "running",
                                                            c if c is not None and c.finished else None),
                             keys=keys))
    finished = c is not None and c.finished and plain is not None
    sp = c.speedup if finished else math.nan
    big.append(_stat(f"{sp:.2f}×" if math.isfinite(sp) else "…",
                     _speedup_label(c, weights) if math.isfinite(sp) else
                     "measured speedup: once both runs have ended",
                     keys=("speedup", "speedup_label") if timed else None))
    small = ""
    if spec is not None:
        judged = spec.accepted + spec.rejected
        cost = c.draft_cost
        raced = c.fair is not None and math.isfinite(c.fair.round_cost)
        small = (
            '<div class="ep7-small">'
            + _stat(share(spec.acceptance_rate), f"guesses accepted ({spec.accepted} of {judged} judged; "
                                                  f"{spec.proposed} proposed)")
            + _stat(f"{spec.tokens_per_pass:.2f}", "tokens per pass after the prompt’s (each "
                    "writes at least one: the end-of-text token counts)")
            + _stat(cost_words(cost) if math.isfinite(cost) else "–",
                    "draft cost c: one guess over one plain step")
            + _stat(round_cost_words(c),
                    "one round (the guesses and the verify pass) over one plain step, each size at "
                    "its median" if raced else "one verify pass over one plain step, on average")
            + (_stat(f"{c.fair.work_speedup:.2f}×", "by the work: the speedup an idle machine "
                     "would give, tokens per pass ÷ a round’s cost")
               if c.fair is not None and math.isfinite(c.fair.work_speedup) else "")
            + "</div>")
    when = ('<p class="when" data-k="when">Both runs have ended.</p>' if timed else "")
    basis = basis_line(c) if finished else ""
    key = ' data-k="basis"' if timed else ""
    basis = f'<p class="ep7-basis"{key}>{esc(basis)}</p>' if basis else ""
    return (f'<div class="ep2-clocks ep7-clocks" data-sdp="{esc(uid)}-clocks">'
            f'<div class="ep7-big">{"".join(big)}</div>{when}{basis}{small}</div>')


def check_html(kind: str, sentence: str, uid: str, *, ep6_href: str = "", timed: bool = False) -> str:
    """The guarantee: checked token by token in greedy mode, stated (with Episode 6) when sampling."""
    mark = {"ok": '<span class="ok">✓</span> ', "fail": '<span class="fail">✗</span> '}.get(kind, "")
    link = (f' <a href="{esc(ep6_href)}">Episode 6 checks it with a chi-square test →</a>'
            if kind == "info" and ep6_href else "")
    pending = ('<span class="pending" data-k="pending" hidden>The guarantee is checked when the '
               "replay ends…</span>") if timed else ""
    k = ' data-k="result"' if timed else ""
    cls = "pending" if kind == "pending" else kind
    return (f'<div class="ep2-check ep7-check" data-sdp="{esc(uid)}-check" role="status">{pending}'
            f'<span{k}><span class="{cls}">{mark}{esc(sentence)}</span>{link}</span></div>')


def ep5_link(c: Comparison, k: int, ep5_href: str) -> str | None:
    """The address of Episode 5 at this run's q, k and c (None when no q was measured)."""
    q, cost = c.spec.acceptance_rate, c.draft_cost
    if not (math.isfinite(q) and math.isfinite(cost)):
        return None
    query = urlencode({"q": f"{min(q, 1.0):.2f}", "k": str(k), "c": f"{min(cost, 1.0):.3f}"})
    return f"{ep5_href}?{query}"


def notes_html(c: Comparison, k: int, ep5_href: str, weights: str | None = None) -> str:
    """What this run says: the verdict, where the time went, and its place on Episode 5's map."""
    parts = [f'<p class="ep7-verdict"><strong>{esc(verdict(c, weights))}</strong> {esc(why(c, k))}</p>']
    sources = sources_sentence(c.spec)
    if sources:
        parts.append(f'<p class="ep7-sources">{esc(sources)}</p>')
    words, href = map_words(c, k), ep5_link(c, k, ep5_href)
    if words and href:
        parts.append(f'<p class="ep7-map">{esc(words)} <a href="{esc(href)}">Open Episode 5 at '
                     "these numbers →</a></p>")
    return '<div class="ep7-notes">' + "".join(parts) + "</div>"


def status_html(state: RealText) -> str:
    """The run's place in line or progress, and any message, in a line or two."""
    p = state.line
    if state.status == "queued" and p is not None:
        # The line as the state's last poll saw it, every figure read at one instant.
        figures = dict(workers=p.workers, running=p.running, running_elapsed_s=p.running_elapsed_s,
                       recent_run_s=p.recent_run_s, crowded_run_s=p.crowded_run_s)
    else:  # only a queued run's sentence speaks of the queue
        figures = {}
    line = status_line(state.status, state.position, state.comparison,
                       model_loaded=state.follower.service.model_ready(), interim=state.interim,
                       **figures)
    out = ""
    if line:
        out += f'<p class="ep7-status" role="status">{esc(line)}</p>'
    if state.message:
        out += f'<p class="sdp-notice ep7-message" role="status">{esc(state.message)}</p>'
    if state.shown is None or state.comparison is None:
        return out
    if state.interim:
        return out + ('<p class="ep7-settings">Shown meanwhile, the run recorded for this task and '
                      f"draft: {esc(settings_line(recorded_settings(state.shown)))}.</p>")
    how = " Computed earlier on this server for a visitor with the same settings, and shared." \
        if state.shared else ""
    # After a refused Run the run on the page is the visitor's earlier one.
    what = "Shown below, your earlier run" if state.status == "refused" else "This run"
    out += f'<p class="ep7-settings">{what}: {esc(settings_line(state.shown))}.{esc(how)}</p>'
    return out


def prompt_html(text: str, kind: str = "") -> str:
    """A task's prompt as the model gets it (inside the chat template), as plain text, and
    whether it is a copy task or fresh writing."""
    line = f'<p class="ep7-kind">{esc(kind)}</p>' if kind else ""
    return (f'<div class="ep7-prompt-box"><h3>The prompt</h3><pre class="ep7-prompt">{esc(text)}</pre>'
            f"{line}</div>")


def legend_html() -> str:
    """The key to the lanes' colours and marks and to the text's marks."""
    items = [
        ("draft", "", "a guess"),
        ("verify", "", "a pass of the model"),
        ("acc", "✓", "accepted guess (underlined in the text)"),
        ("rej", "✗", "rejected guess (struck through)"),
        ("dis", "–", "discarded: after a miss, never judged"),
        ("gold", "★", "the model’s own token at a miss"),
        ("gold", "+", "bonus token"),
        ("bad", "bad", "bad round: the first guess was wrong"),
    ]
    return relay_legend(items)


def recorded_html(rows, date: str) -> str:
    """The recorded runs as a table (:class:`.words.RecordedRow`), grouped by task (a heading row
    each, so no cell repeats the task): draft, acceptance, tokens per pass, the work-based figure,
    both runs' tokens per second, the measured speedup (the median repeat's) with its interval and
    the verdict judged on that interval, and the repeats' range. Numbers never wrap; on a narrow
    screen the table scrolls sideways in its box, and a line above it says so."""
    def n(x: float, fmt: str) -> str:
        return format(x, fmt) if math.isfinite(x) else "–"
    body, task = [], None
    for r in rows:
        if r.task != task:
            task = r.task
            body.append(f'<tr class="ep7-group"><th colspan="9" scope="rowgroup">{esc(task)}</th></tr>')
        body.append(
            f"<tr><td>{esc(r.draft)}</td><td class=\"n\">{share(r.acceptance)}</td>"
            f"<td class=\"n\">{r.tokens_per_pass:.2f}</td><td class=\"n\">{n(r.work_speedup, '.2f')}×</td>"
            f"<td class=\"n\">{n(r.plain_tokens_per_s, '.1f')} → {n(r.spec_tokens_per_s, '.1f')}</td>"
            f"<td class=\"n\">{r.speedup:.2f}×</td><td class=\"n\">{n(r.low, '.2f')}–{n(r.high, '.2f')}×</td>"
            f"<td>{esc(r.verdict)}</td><td class=\"n\">{r.lowest:.2f}–{r.highest:.2f}×</td></tr>")
    return ('<p class="ep7-swipe">Swipe the table sideways to see all nine columns.</p>'
            f'<div class="ep7-wrap"><table class="ep7-table"><caption>{esc(date)}</caption>'
            "<thead><tr><th>draft</th><th class=\"n\">guesses accepted</th>"
            "<th class=\"n\">tokens per pass</th><th class=\"n\">by the work</th>"
            "<th class=\"n\">tokens/s, plain → speculative</th>"
            "<th class=\"n\">speedup (median run)</th><th class=\"n\">its 95% interval</th>"
            "<th>verdict on that interval</th><th class=\"n\">the repeats’ speedups</th>"
            f"</tr></thead><tbody>{''.join(body)}</tbody></table></div>")


# --- the view ------------------------------------------------------------------------------------


class RealTextView(StateView):
    """The controls, the live run and its replay, bound to one state object."""

    state = param.ClassSelector(class_=RealText)
    ep5_href = param.String(default="./ep5_the_break_even_map", doc="Episode 5's address.")
    ep6_href = param.String(default="./ep6_the_fine_print", doc="Episode 6's address.")
    notice = param.String(default="", doc="Plain text shown above the controls (e.g. the model is missing).")

    def __init__(self, **params):
        super().__init__(**params)
        s = self.state
        self.uid = "ep7-" + uuid.uuid4().hex[:8]
        css = [page_css(*_CSS)]
        self.rows = ColumnDataSource({"end_ms": [0.0], "bad_rounds": [0]}, name="ep7-rows")
        # The lanes appear once a run has finished; their player (a figure of a dozen
        # renderers) is built then, not for every visitor who opens the page.
        self.player: LanePlayer | None = None
        self.prompt_view = pn.pane.HTML(sizing_mode="stretch_width", stylesheets=css, name="ep7-prompt")
        self.prompt_input = pn.widgets.TextAreaInput(
            label=s.param.prompt.label, value=s.prompt, max_length=PROMPT_MAX_CHARS, height=110,
            placeholder="Ask the model anything: a rewrite, a list, a question…",
            sizing_mode="stretch_width")
        self.counter = pn.pane.HTML(sizing_mode="stretch_width", stylesheets=css, name="ep7-counter")
        self.prompt_input.param.watch(self._count, "value_input")
        self.run_button = pn.widgets.Button(label="Run", color="primary", width=110)
        self.cancel_button = pn.widgets.Button(label="Cancel", width=110, visible=False)
        self.run_button.on_click(self._on_run)
        self.cancel_button.on_click(self._on_cancel)
        self.status = pn.pane.HTML(sizing_mode="stretch_width", stylesheets=css, name="ep7-status")
        self.clocks = pn.pane.HTML(sizing_mode="stretch_width", stylesheets=css, name="ep7-clocks")
        self.text = pn.pane.HTML(sizing_mode="stretch_width", stylesheets=css, name="ep7-text")
        self.check = pn.pane.HTML(sizing_mode="stretch_width", stylesheets=css, name="ep7-check")
        self.notes = pn.pane.HTML(sizing_mode="stretch_width", stylesheets=css, name="ep7-notes")
        # (A spacer holds the place: Bokeh warns of an empty layout.)
        self.lanes = pn.Column(pn.Spacer(height=0), visible=False, sizing_mode="stretch_width",
                               name="ep7-lanes")
        self._drawn: Comparison | None = None
        self.temperature = pn.widgets.FloatSlider.from_param(s.param.temperature, sizing_mode="stretch_width")
        # A text box that says why it refuses what is not a seed (no spinner: its arrows are
        # targets too small to tap).
        self.seed = pn.Column(SeedBox(s, "seed"), sizing_mode="stretch_width", margin=0)
        s.param.watch(self._show_prompt, ["task"])
        s.param.watch(self._show_sampling, ["decoding"])
        self._show_prompt()
        self._show_sampling()
        self._count()
        self._render()
        self.poller = RunPoller(s, self._render)

    # -- events ------------------------------------------------------------------------------
    def _count(self, *_):
        self.counter.object = f'<p class="ep7-counter">{esc(counter_text(self.prompt_input.value_input, PROMPT_MAX_CHARS))}</p>'

    def _show_prompt(self, *_):
        custom = self.state.task == CUSTOM
        self.prompt_input.visible = self.counter.visible = custom
        self.prompt_view.visible = not custom
        if not custom:
            self.prompt_view.object = prompt_html(self.state.settings().prompt, kind_line(self.state.task))

    def _show_sampling(self, *_):
        self.temperature.visible = self.seed.visible = self.state.decoding == "sampling"

    def _on_run(self, _event=None):
        typed = self.prompt_input.value_input
        with pn.io.hold():
            self.state.prompt = self.prompt_input.value if typed is None else typed
            self.state.run()
            self._render()
        self.poller.start()

    def _on_cancel(self, _event=None):
        with pn.io.hold():
            self.state.cancel()
            self._render()
        self.poller.stop()

    def _build_lanes(self) -> None:
        """The lane player and its legend, the first time a finished run is drawn."""
        self.player = LanePlayer(
            LANES, name="ep7", height=300, y_pad=(0.62, 0.55),
            x_label=("time on the processor (measured ms; each run’s own passes end to end, from "
                     "its own start)"),
            speeds=SPEEDS,
            step_label="Step one pass", lane_clocks=False, styles=STYLES,
            frame_hook="relay_frame.js", frame_args=dict(rounds=self.rows, uid=self.uid), min_label_px=6)
        self.lanes.objects = [
            pn.pane.Bokeh(self.player.controls),
            pn.pane.Bokeh(self.player.figure, sizing_mode="stretch_width"),
            pn.pane.HTML(legend_html(), sizing_mode="stretch_width", stylesheets=[page_css(*_CSS)]),
        ]
        anchor_figures(self.lanes)  # its anchor, save buttons and link, as every figure has

    # -- drawing -----------------------------------------------------------------------------
    def _render(self):
        s = self.state
        c = s.comparison
        active = s.active
        self.run_button.disabled = active
        self.cancel_button.visible = active
        self.status.object = status_html(s)
        k = s.shown.k if s.shown is not None else s.k
        # The run shown while the model loads gets its texts and clocks, not the lanes: the live
        # run replaces it within moments, and a player drawn then hidden is work for nothing.
        if c is not None and c.finished and c.plain is not None and not s.interim:
            if c is not self._drawn:
                self._drawn = c
                timeline = real_timeline(c)
                weights = s.weights or None
                self.clocks.object = clocks_html(c, self.uid, timed=True, weights=weights)
                self.text.object = text_html(c, self.uid, timed=True, code=self._code(c))
                kind, sentence = check_words(c, s.guarantee)
                self.check.object = check_html(kind, sentence, self.uid, ep6_href=self.ep6_href, timed=True)
                self.notes.object = notes_html(c, k, self.ep5_href, weights)
                self.rows.data = clock_rows(c, weights)
                if self.player is None:
                    self._build_lanes()
                # Shown before the new timeline arrives: BokehJS does not redo the labels of a
                # hidden figure's text glyph, so columns that shrank while it was hidden (a
                # shorter run after a longer one) left it reading fonts and colours past their
                # end, an uncaught error on every redraw.
                self.lanes.visible = True
                self.player.show(timeline)
                describe(self.player.figure, lanes_words(c))
            return
        self._drawn = None
        self.lanes.visible = False
        self.clocks.object = clocks_html(c, self.uid) if c is not None else ""
        self.text.object = text_html(c, self.uid, code=self._code(c)) if c is not None else ""
        self.notes.object = ""
        if c is None:
            self.check.object = ""
        else:
            kind, sentence = check_words(c, s.guarantee)
            self.check.object = check_html(kind, sentence, self.uid, ep6_href=self.ep6_href)

    def _code(self, c: Comparison) -> bool:
        """Whether the replies of the run shown are code."""
        task = self.state.shown.task if self.state.shown is not None else self.state.task
        reply = "".join(r.text or "" for r in (c.spec, c.plain) if r is not None)
        return reply_is_code(task, reply)

    def layout(self):
        """The first screen: the controls, and beside them the run's status, clocks, texts and
        check (the result); the run's notes and lanes below."""
        s = self.state
        wide = dict(sizing_mode="stretch_width")
        controls = pn.Column(
            pn.widgets.Select.from_param(s.param.task, **wide),
            self.prompt_input, self.counter,
            pn.widgets.Select.from_param(s.param.draft, **wide),
            pn.Row(self.run_button, self.cancel_button),
            pn.widgets.IntSlider.from_param(s.param.k, **wide),
            pn.widgets.IntSlider.from_param(s.param.max_new, **wide),
            pn.widgets.Select.from_param(s.param.weight_format, **wide),
            pn.widgets.RadioButtonGroup.from_param(s.param.decoding, **wide),
            self.temperature, self.seed,
            self.prompt_view,
            control_help(s, ["task", "draft", "k", "max_new", "weight_format", "decoding",
                             "temperature", "seed"]),
            name="ep7-controls", sizing_mode="stretch_width", min_width=280, max_width=CONTROLS_PX,
            styles={"flex": f"0 1 {CONTROLS_PX}px"},
        )
        notice = prose(f'<p class="sdp-notice">{esc(self.notice)}</p>', name="ep7-notice") \
            if self.notice else None
        service = s.follower.service
        # Whether the model has loaded (only where it is installed: elsewhere the notice says so).
        model = [model_status_line(service, name="ep7-model")] if service.installed() else []
        result = pn.Column(*model, self.status, self.clocks, self.text, self.check, **wide,
                           styles={"flex": "1 1 420px"}, min_width=280, name="ep7-result")
        return pn.Column(
            *([notice] if notice else []),
            pn.FlexBox(controls, result, flex_wrap="wrap", gap="8px 28px", **wide),
            self.notes, self.lanes,
            sizing_mode="stretch_width",
        )
