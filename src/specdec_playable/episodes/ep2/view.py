"""Episode 2's view: the relay's two lanes, the text growing under them, the clocks and the guarantee.

The server runs :func:`sim.relay.run` once per change; the browser plays the run:
the lanes, and through Episode 2's frame hook (``kit/static/relay_frame.js``, whose
header is the contract for the ``data-*`` attributes the builders here write) the
text, the two clocks and the running cost of bad rounds, all from one
``requestAnimationFrame`` loop that never calls the server.

:func:`round_rows`, :func:`relay_timeline`, :func:`text_html`, :func:`clocks_html`,
:func:`check_html` and :func:`legend_html` are plain functions a test can call.
"""

from __future__ import annotations

import uuid

import panel as pn
import param
from bokeh.models import ColumnDataSource

from ...sim.relay import RelayResult
from .state import BIG_PASS_MS, DECOYS, DRAFT_STEP_MS, TOKENS, Guarantee, Progress, Relay
from .words import lanes_words
from ...kit import theme
from ...kit.a11y import describe
from ...kit.lanes import Lane, LanePlayer
from ...kit.relay import BIG_Y, DRAFT_Y, STYLES, fmt_ms, relay_timeline, token_span
from ...kit.relay import legend_html as relay_legend
from ...kit.inputs import SeedBox, control_help
from ...kit.page import StateView, esc, page_css, prose, session_doc, slider
from ...kit.words import noun, plural, versus_one

#: While playing, the time axis follows the clock over this many rounds, so a draft step is
#: wide enough to read; at the end it shows the whole run.
ROUNDS_IN_VIEW = 3.5
SPEEDS = {"0.25×": 0.25, "0.5×": 0.5, "1× (real time)": 1.0, "2×": 2.0, "4×": 4.0, "8×": 8.0}
_CSS = "relay.css"

LANES = (
    Lane("draft", f"Draft model · {DRAFT_STEP_MS:,.0f} ms a step", DRAFT_Y, theme.DRAFT),
    Lane("big", f"Big model · {BIG_PASS_MS:,.0f} ms a pass", BIG_Y, theme.BIG),
)
# --- the clocks, round by round ------------------------------------------------------


def round_rows(progress: Progress, n_tokens: int) -> dict:
    """Display strings of the clocks after each round (row 0: the start), for the browser.

    The speedup compares the two clocks as they stood at the end of the last round
    (``relay``, ``alone``); its caption says so, since the relay's headline clock runs on
    with the lanes while the next round is under way.
    """
    n_rounds = len(progress) - 1
    rows = dict(end_ms=progress.end_ms.tolist(), bad_rounds=progress.bad_rounds.tolist(),
                relay=[], alone=[], alone_label=[], speedup=[], speedup_label=[], when=[], bad=[])
    for i in range(len(progress)):
        tokens = int(progress.tokens[i])
        rows["relay"].append(fmt_ms(progress.end_ms[i]))
        rows["alone"].append(fmt_ms(progress.alone_ms[i]))
        rows["alone_label"].append(
            f"the big model alone for {plural(tokens, 'token')}: {tokens} × {fmt_ms(BIG_PASS_MS)}")
        if i == 0:
            rows["speedup"].append("–")
            rows["speedup_label"].append("measured speedup (alone ÷ relay), from the end of round 1")
            rows["when"].append(f"Before the first round · 0 of {n_tokens} tokens written · "
                                "press Play to run it")
        else:
            sp = float(progress.speedup[i])
            rows["speedup"].append(f"{sp:.2f}×")
            verdict = {1: "measured speedup", 0: "measured: as fast as the big model alone",
                       -1: "measured: slower than the big model alone"}[versus_one(sp)]
            at = "" if i == n_rounds else f" at the end of round {i}"
            rows["speedup_label"].append(f"{verdict}{at} (alone ÷ relay)")
            rows["when"].append(f"After round {i} of {n_rounds} · {tokens} of {n_tokens} tokens written")
        nb = int(progress.bad_rounds[i])
        spent, plain = float(progress.bad_ms[i]), float(progress.bad_plain_ms[i])
        rows["bad"].append(
            f"{plural(nb, 'bad round')} so far: {fmt_ms(spent)} for {plural(nb, 'token')}. "
            f"Plain decoding writes {noun(nb, 'it')} in {fmt_ms(plain)}: "
            f"{fmt_ms(spent - plain)} lost.")
    return rows


# --- the lanes -----------------------------------------------------------------------


# --- the text, the clocks, the guarantee (see relay_frame.js for the data-* contract) ---

def text_html(run: Relay, uid: str, *, at_start: bool = False) -> str:
    """The growing text: every span carries when it appears (and disappears), end state shown
    (or, ``at_start``, the start: nothing written yet).

    Drafts appear when drafted and vanish when their round is judged; then the
    accepted tokens, the struck-through first miss, the big model's own token
    and the bonus appear. Spans marked ``kept`` are the output text.
    """
    res = run.result
    rounds = res.rounds
    total = 0.0 if at_start else res.wall_ms
    drafts = res.events.of_kind("draft")
    live, ghost = [], []
    for r in range(res.n_rounds):
        p, d, a = (int(rounds[c][r]) for c in ("first_token", "drafted", "accepted"))
        v1 = float(rounds["end_ms"][r])
        v0 = v1 - BIG_PASS_MS
        mine = drafts.round == r
        for guess, e in zip(drafts.text[mine].tolist(), drafts.end_ms[mine].tolist()):
            live.append(token_span("tk tk-draft", guess, title="drafted, waiting for the big model's check",
                              on=e, off=v1, chk=v0, hidden=not (e <= total < v1)))
        judged = [("tk kept tk-acc", TOKENS[p + i], "a draft the big model accepted") for i in range(a)]
        if a < d:
            judged.append(("tk tk-rej", DECOYS[p + a], "the draft's guess, rejected: the first miss"))
            judged.append(("tk kept tk-fix", TOKENS[p + a],
                           f"the big model's own token, written instead of “{DECOYS[p + a].strip()}”"))
        elif int(rounds["tokens"][r]) > d:
            judged.append(("tk kept tk-bonus", TOKENS[p + d],
                           "a bonus token: all drafts were right, so the same pass adds one more"))
        for cls, txt, title in judged:
            live.append(token_span(cls, txt, title=title, on=v1, hidden=v1 > total))
            ghost.append(token_span(cls.replace("tk ", "").replace("kept ", ""), txt))
    return (
        '<div class="ep2-textbox"><h3>The text so far</h3><div class="ep2-stack">'
        f'<div class="ep2-text ep2-ghost" aria-hidden="true">{"".join(ghost)}</div>'
        f'<div class="ep2-text ep2-text-live" data-sdp="{esc(uid)}-text">{"".join(live)}</div>'
        "</div></div>"
    )


def clocks_html(rows: dict, uid: str, *, at_start: bool = False) -> str:
    """The two clocks, the speedup and the bad rounds, at the run's end, or ``at_start`` before
    its first round (the browser rewinds them).

    The relay's clock is a live field of the lane player (it runs with the lanes' cursor);
    the other numbers change at round ends (``relay_frame.js``).
    """
    last = 0 if at_start else len(rows["end_ms"]) - 1

    def f(key: str) -> str:
        return f'data-k="{key}">{esc(rows[key][last])}'

    nb = rows["bad_rounds"][last]
    total = rows["end_ms"][-1]  # the live clock runs up to the run's end
    return (
        f'<div class="ep2-clocks" data-sdp="{esc(uid)}-clocks" data-sdp-live="{esc(uid)}">'
        f'<div class="sdp-stat"><div class="v" data-clock="{total:g}">{esc(rows["relay"][last])}</div>'
        '<div class="l">the relay’s wall clock (draft + big model)</div></div>'
        f'<div class="sdp-stat"><div class="v" {f("alone")}</div><div class="l" {f("alone_label")}</div></div>'
        f'<div class="sdp-stat"><div class="v" {f("speedup")}</div><div class="l"><span {f("speedup_label")}'
        f'</span><br>the relay’s clock at that point: <span {f("relay")}</span></div>'
        "</div>"
        f'<p class="when" {f("when")}</p>'
        f'<div class="ep2-bad" data-k="badbox"{"" if nb else " hidden"}><span class="sw bad">✗</span> '
        f'<strong>Bad rounds</strong> (first draft rejected): <span {f("bad")}</span></div>'
        f'<div class="ep2-bad none" data-k="nobad"{" hidden" if nb else ""}>No bad rounds so far.</div>'
        "</div>"
    )


def check_html(g: Guarantee, uid: str, *, at_start: bool = False) -> str:
    """The guarantee, checked on the server; shown when the run ends (``at_start``: not yet)."""
    if g.ok:
        result = (f'<span class="ok">✓ Checked token by token:</span> all {g.n_tokens} tokens are identical '
                  "to what the big model writes alone, one pass per token.")
    else:
        result = (f'<span class="fail">✗ Mismatch:</span> {g.matches} of {g.n_tokens} tokens match; '
                  f"the first difference is at token {g.first_mismatch + 1}.")
    return (
        f'<div class="ep2-check" data-sdp="{esc(uid)}-check">'
        f'<span class="pending" data-k="pending"{"" if at_start else " hidden"}>The guarantee is '
        "checked when the run ends…</span>"
        f'<span data-k="result"{" hidden" if at_start else ""}>{result}</span></div>'
    )


def rounds_html(res: RelayResult, uid: str, *, at_start: bool = False) -> str:
    """Every round of the run in a list that wraps on any screen, each with Episode 2's marks:
    a ✓ per accepted draft, ✗ for the first miss, – for each draft after it, ★ or + for the big
    model's own token, and what the round wrote. On a phone the finished lanes are too narrow
    for the marks of a whole run; here every round keeps them. Each round shows once it has
    ended (``data-on``, see ``relay_frame.js``), so the list grows with the replay."""
    rounds = res.rounds
    items = []
    for r in range(res.n_rounds):
        d, a, made = (int(rounds[c][r]) for c in ("drafted", "accepted", "tokens"))
        v1 = float(rounds["end_ms"][r])
        marks = ['<span class="sw acc">✓</span>'] * a
        if a < d:
            marks += ['<span class="sw rej">✗</span>'] + ['<span class="sw dis">–</span>'] * (d - a - 1)
            own, said = "★", "the big model’s own token"
        else:
            own, said = "+", "a bonus token"
        marks.append(f'<span class="sw gold">{own}</span>')
        bad = a == 0 and d > 0
        tag = '<span class="sw bad">bad</span>' if bad else ""
        words = (f"round {r + 1}: {plural(a, 'draft')} of {d} accepted"
                 + ("" if a == d else ", then the first miss") + f", and {said}: "
                 f"{plural(made, 'token')}" + (", a bad round" if bad else ""))
        items.append(
            f'<li class="{"bad" if bad else ""}" data-on="{v1:g}"{" hidden" if at_start else ""}>'
            f'<span class="sdp-sr">{esc(words)}</span>'
            f'<span aria-hidden="true"><span class="rn">{r + 1}</span>{"".join(marks)}'
            f'<span class="made">+{made}</span>{tag}'
            "</span></li>")
    return (f'<div class="ep2-rounds" data-sdp="{esc(uid)}-rounds"><h3>Every round, in order</h3>'
            f'<ol>{"".join(items)}</ol></div>')


def legend_html() -> str:
    """The key to the lanes' colours, marks and patterns."""
    items = [
        ("draft", "", f"draft step ({fmt_ms(DRAFT_STEP_MS)})"),
        ("verify", "", f"verify pass ({fmt_ms(BIG_PASS_MS)}, checks every draft at once)"),
        ("acc", "✓", "accepted"),
        ("rej", "✗", "rejected: the first miss"),
        ("dis", "–", "discarded: after the miss, never judged"),
        ("gold", "★", "the big model’s own token"),
        ("gold", "+", "bonus token"),
        ("bad", "bad", "bad round: first draft rejected"),
    ]
    return relay_legend(items)


# --- the view ------------------------------------------------------------------------


class RelayView(StateView):
    """Controls, lanes, text and clocks of one relay run, bound to one state object."""

    state = param.ClassSelector(class_=Relay)
    note = param.String(default="", doc="Trusted HTML under the guarantee: how to read the page.")

    def __init__(self, **params):
        super().__init__(**params)
        self.uid = "ep2-" + uuid.uuid4().hex[:8]
        self.rounds = ColumnDataSource(round_rows(self.state.progress, len(TOKENS)), name="ep2-rounds")
        self.player = LanePlayer(
            LANES, name="ep2", height=250, y_pad=(0.62, 0.55), x_label="wall clock (simulated ms)",
            speeds=SPEEDS, step_label="Step one round", lane_clocks=False, styles=STYLES,
            frame_hook="relay_frame.js", frame_args=dict(rounds=self.rounds, uid=self.uid),
            min_label_px=6, live=self.uid, opens_at_start=True)
        self.player.fit_on_ready(session_doc())
        css = [page_css(_CSS)]
        self.clocks = pn.pane.HTML(stylesheets=css, name="ep2-clocks", min_width=280,
                                   styles={"flex": "1 1 300px"})
        self.text = pn.pane.HTML(sizing_mode="stretch_width", stylesheets=css, name="ep2-text")
        self.check = pn.pane.HTML(sizing_mode="stretch_width", stylesheets=css, name="ep2-check")
        self.legend = pn.pane.HTML(legend_html(), sizing_mode="stretch_width", stylesheets=css)
        self.rounds_list = pn.pane.HTML(sizing_mode="stretch_width", stylesheets=css, name="ep2-rounds")
        self.new_run = pn.widgets.Button(label="New run", width=110,
                                         align="end", description="Fresh randomness: draws a new seed")
        self.new_run.on_click(lambda _: self.state.new_run())
        self.state.param.watch(self._redraw, "result")
        # The page opens on the start of the run: the result shows when it is played.
        self._redraw(at_start=True)

    def _redraw(self, *_, at_start: bool = False):
        rows = round_rows(self.state.progress, len(TOKENS))
        # One held batch, so the page receives it as one message, in this order: the HTML
        # first and the lanes last, since replacing the lanes' data is what rewinds the
        # browser's player, and it then redraws the new HTML too.
        with pn.io.hold():
            self.clocks.object = clocks_html(rows, self.uid, at_start=at_start)
            self.text.object = text_html(self.state, self.uid, at_start=at_start)
            self.check.object = check_html(self.state.guarantee, self.uid, at_start=at_start)
            self.rounds_list.object = rounds_html(self.state.result, self.uid, at_start=at_start)
            describe(self.player.figure, lanes_words(self.state.result))
            self.rounds.data = rows
            round_ms = self.state.k * DRAFT_STEP_MS + BIG_PASS_MS
            self.player.show(relay_timeline(self.state.result, pass_ms=BIG_PASS_MS,
                                            window_ms=ROUNDS_IN_VIEW * round_ms),
                             at_start=at_start)

    def layout(self):
        s = self.state
        controls = pn.Column(slider(s.param.k), slider(s.param.q, step=0.05, format="0.00"),
                             sizing_mode="stretch_width", name="ep2-controls")
        seed = SeedBox(s, "seed", beside=[self.new_run])
        help_ = control_help(s, ["k", "q", "seed"])
        return pn.Column(
            pn.FlexBox(pn.Column(controls, seed, help_, width=330), self.clocks,
                       sizing_mode="stretch_width", flex_wrap="wrap"),
            pn.pane.Bokeh(self.player.controls),
            pn.pane.Bokeh(self.player.figure, sizing_mode="stretch_width"),
            self.legend,
            self.rounds_list,
            self.text,
            self.check,
            prose(self.note),
            sizing_mode="stretch_width",
        )
