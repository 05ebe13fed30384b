"""Episode 2: the relay — draft fast, verify in one pass.

A small draft model proposes k tokens, one 60 ms step each; the big model
checks them all in one 600 ms pass, keeps the matching start, rejects the first
miss and writes its own token there. The server runs :func:`core.relay.run`
once per change; the browser plays the run: the two lanes, the text growing
under them, the two clocks and the running cost of bad rounds, all driven by
one ``requestAnimationFrame`` loop that never calls the server.
"""

from __future__ import annotations

import uuid

import panel as pn
import param
from bokeh.models import ColumnDataSource

from . import neighbours
from ..state.ep2 import BIG_PASS_MS, DECOYS, DRAFT_STEP_MS, TOKENS, Guarantee, Progress, Relay
from ..views import theme
from ..views.lanes import Lane, LanePlayer
from ..views.page import episode_shell, esc, page_css
from ..views.urlstate import bind_url

NUMBER = 2
SLUG = "ep2_the_relay"
TITLE = "The relay — draft fast, verify in one pass"
SUMMARY = ("A small model drafts a few tokens, the big model checks them all in one pass: "
           "watch the text grow, the two clocks race, and the output stay exactly the big model's.")
#: Controls kept in the URL query, so a link restores the setup.
URL_PARAMS = ("k", "quality", "seed")

DRAFT_Y, BIG_Y, BAND_Y = 1.2, 0.0, 0.6
BOX_H = 0.56
SPEEDS = {"0.25×": 0.25, "0.5×": 0.5, "1× (real time)": 1.0, "2×": 2.0, "4×": 4.0, "8×": 8.0}
BAD_TEXT = "#8c2a1f"  # dark red for the bad-round label, 7:1 on the band

_LANES = (
    Lane("draft", "Draft model · 60 ms a step", DRAFT_Y, theme.DRAFT),
    Lane("big", "Big model · 600 ms a pass", BIG_Y, theme.BIG),
)
_STYLES = {
    "bad": dict(fill=theme.SLOWER, hatch=" ", line=theme.SLOWER, mark="", label="bad round"),
    # The big model's token sits inside its pass: plain gold with a large mark
    # (★ or +) reads better there than the dotted pattern.
    "correction": {**theme.STATUS["correction"], "hatch": " "},
    "bonus": {**theme.STATUS["bonus"], "hatch": " "},
}
_VERDICT = {
    "accepted": "accepted ✓",
    "rejected": "rejected ✗ (the first miss)",
    "discarded": "discarded – (drafted after the miss, never judged)",
}

CSS = f"""
.ep2-clocks .sdp-stat {{ min-width: 10.5em; }}
.ep2-clocks .when {{ color: {theme.MUTED}; font-size: 0.9rem; margin: 0.1em 0 0.5em 0; }}
.ep2-bad {{ font-size: 0.95rem; line-height: 1.45; max-width: 44em; padding: 0.35em 0.7em;
  background: {theme.SLOWER}; border-left: 4px solid {theme.REJECTED}; border-radius: 3px; }}
.ep2-legend {{ display: flex; flex-wrap: wrap; gap: 0.35em 1.3em; font-size: 0.9rem; margin: 0.2em 0; }}
.ep2-legend span.i {{ display: inline-flex; align-items: center; gap: 0.35em; }}
.sw {{ display: inline-block; width: 1.5em; height: 1.05em; border-radius: 2px; color: white;
  font-size: 0.8rem; font-weight: 700; text-align: center; line-height: 1.05em; }}
.sw.draft {{ background: {theme.DRAFT}; }}
.sw.verify {{ background: {theme.BIG}; }}
.sw.acc {{ background: {theme.ACCEPTED}; }}
.sw.rej {{ background: repeating-linear-gradient(45deg, {theme.REJECTED} 0 3px, #e8a39b 3px 5px);
  outline: 1.5px solid {theme.INK}; }}
.sw.dis {{ background: repeating-linear-gradient(45deg, {theme.DISCARDED} 0 3px, #e1e3e8 3px 5px);
  color: {theme.INK}; }}
.sw.gold {{ background: {theme.GOLD}; color: {theme.INK}; outline: 1.5px solid {theme.INK}; }}
.sw.bad {{ background: {theme.SLOWER}; color: {BAD_TEXT}; width: 2.4em; }}
.ep2-textbox {{ border: 1px solid {theme.GRID}; border-radius: 6px; padding: 0.5em 0.9em; margin: 0.2em 0;
  max-width: 56em; box-sizing: border-box; width: 100%; }}
.ep2-textbox h3 {{ font-size: 0.85rem; color: {theme.MUTED}; text-transform: uppercase; letter-spacing: 0.05em;
  margin: 0 0 0.3em 0; font-weight: 600; }}
.ep2-stack {{ display: grid; }}
.ep2-stack > div {{ grid-area: 1 / 1; }}
.ep2-ghost {{ visibility: hidden; }}
.ep2-text {{ font-size: 1.2rem; line-height: 2.0; white-space: pre-wrap; }}
.ep2-text [hidden] {{ display: none; }}
.tk-acc .w {{ text-decoration: underline 2px {theme.ACCEPTED}; text-underline-offset: 5px; }}
.tk-fix .w, .tk-bonus .w {{ background: #fbefc4; box-shadow: inset 0 -2px 0 {theme.GOLD}; border-radius: 3px;
  padding: 0 1px; }}
.tk-fix .w::after {{ content: "★"; font-size: 0.65em; vertical-align: super; color: #7a5c00; }}
.tk-bonus .w::after {{ content: "+"; font-size: 0.75em; font-weight: 700; vertical-align: super; color: #7a5c00; }}
.tk-rej .w {{ color: {theme.REJECTED}; text-decoration: line-through 2px; font-size: 0.9em; }}
.tk-rej .w::after {{ content: "✗"; font-size: 0.7em; vertical-align: super; }}
.tk-draft .w {{ color: {theme.DRAFT}; font-style: italic; text-decoration: underline dashed 1.5px;
  text-underline-offset: 5px; }}
.tk-draft.chk .w {{ background: #ece6f5; border-radius: 3px; }}
.ep2-check {{ font-size: 1rem; margin: 0.4em 0 0.2em 0; max-width: 52em; }}
.ep2-check .ok {{ color: {theme.ACCEPTED}; font-weight: 700; }}
.ep2-check .fail {{ color: {theme.REJECTED}; font-weight: 700; }}
.ep2-check .pending {{ color: {theme.MUTED}; }}
"""

# Runs at the end of every frame of the lane player (``t`` in ms). It only
# touches the DOM inside the page's HTML panes: no model property changes, so
# nothing is sent to the server.
_FRAME_JS = """
const E = state.ep2 || (state.ep2 = {});
function deep(sel) {
  const todo = [document];
  while (todo.length) {
    const root = todo.pop();
    const hit = root.querySelector(sel);
    if (hit) return hit;
    for (const el of root.querySelectorAll('*')) if (el.shadowRoot) todo.push(el.shadowRoot);
  }
  return null;
}
function fields(el) {
  const out = {};
  if (el) for (const f of el.querySelectorAll('[data-k]')) out[f.dataset.k] = f;
  return out;
}
if (!E.text || !E.text.isConnected) {
  E.text = deep('[data-sdp="' + uid + '-text"]');
  E.spans = E.text ? Array.from(E.text.querySelectorAll('[data-on]'), el => ({
    el, on: +el.dataset.on,
    off: el.dataset.off ? +el.dataset.off : Infinity,
    chk: el.dataset.chk ? +el.dataset.chk : Infinity})) : [];
}
for (const s of E.spans) {
  const vis = t >= s.on && t < s.off;
  if (s.el.hidden === vis) s.el.hidden = !vis;
  const chk = t >= s.chk;
  if (s.el.classList.contains('chk') !== chk) s.el.classList.toggle('chk', chk);
}
if (!E.clocks || !E.clocks.isConnected) {
  E.clocks = deep('[data-sdp="' + uid + '-clocks"]');
  E.cf = fields(E.clocks);
}
if (!E.check || !E.check.isConnected) {
  E.check = deep('[data-sdp="' + uid + '-check"]');
  E.gf = fields(E.check);
}
const R = rounds.data;
let row = 0;
for (let j = 0; j < R.end_ms.length; j++) if (R.end_ms[j] <= t + 1e-6) row = j;
for (const key in E.cf) {
  if (!(key in R)) continue;
  const v = R[key][row];
  if (E.cf[key].textContent !== v) E.cf[key].textContent = v;
}
if (E.cf.badbox) E.cf.badbox.hidden = R.bad_rounds[row] === 0;
if (E.cf.nobad) E.cf.nobad.hidden = R.bad_rounds[row] !== 0;
const done = t >= sdp_total() - 1e-6;
if (E.gf.pending) E.gf.pending.hidden = done;
if (E.gf.result) E.gf.result.hidden = !done;
"""


# --- what the server computes for the page -----------------------------------------


def _fmt_ms(ms: float) -> str:
    return f"{ms:,.0f} ms"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def round_rows(progress: Progress, n_tokens: int) -> dict:
    """Display strings of the clocks after each round (row 0: the start), for the browser."""
    n_rounds = len(progress) - 1
    rows = dict(end_ms=progress.end_ms.tolist(), bad_rounds=progress.bad_rounds.tolist(),
                relay=[], alone=[], alone_label=[], speedup=[], speedup_label=[], when=[], bad=[])
    for i in range(len(progress)):
        tokens = int(progress.tokens[i])
        rows["relay"].append(_fmt_ms(progress.end_ms[i]))
        rows["alone"].append(_fmt_ms(progress.alone_ms[i]))
        rows["alone_label"].append(f"the big model alone: {tokens} × {BIG_PASS_MS:,.0f} ms")
        if i == 0:
            rows["speedup"].append("–")
            rows["speedup_label"].append("measured speedup (alone ÷ relay)")
            rows["when"].append(f"Before the first round · 0 of {n_tokens} tokens written")
        else:
            sp = float(progress.speedup[i])
            rows["speedup"].append(f"{sp:.2f}×")
            rows["speedup_label"].append("measured speedup (alone ÷ relay)" if sp >= 1 else
                                         "measured: slower than the big model alone")
            rows["when"].append(f"After round {i} of {n_rounds} · {tokens} of {n_tokens} tokens written")
        nb = int(progress.bad_rounds[i])
        spent, plain = float(progress.bad_ms[i]), float(progress.bad_plain_ms[i])
        rows["bad"].append(
            f"{_plural(nb, 'bad round')} so far: {_fmt_ms(spent)} for {_plural(nb, 'token')}. "
            f"Plain decoding writes {'it' if nb == 1 else 'them'} in {_fmt_ms(plain)}: "
            f"{_fmt_ms(spent - plain)} lost.")
    return rows


def lane_boxes(run: Relay) -> tuple[dict, list[str], list[float], list[str]]:
    """The lanes of one run: boxes, their tooltips, the round ends (the step stops), and
    the tooltips before each box is judged (a draft's verdict is not given away early)."""
    res = run.result
    rounds = res.rounds
    ev = res.events
    cols = ("lane", "start", "end", "y", "height", "label", "status", "status_before", "label_before",
            "shown", "judged", "label_at", "label_size", "label_color")
    boxes: dict[str, list] = {c: [] for c in cols}
    tips: list[str] = []
    tips_before: list[str] = []

    def add(tip, tip_before=None, **box):
        box.setdefault("status_before", box["status"])
        box.setdefault("label_before", box["label"])
        box.setdefault("shown", box["start"])
        box.setdefault("judged", box["start"])
        box.setdefault("label_at", box["end"])
        box.setdefault("label_size", "10px")
        box.setdefault("label_color", theme.INK if box["status"] in ("discarded", "correction", "bonus")
                       else "white")
        for c in cols:
            boxes[c].append(box[c])
        tips.append(tip)
        tips_before.append(tip if tip_before is None else tip_before)

    # Bad rounds first, so their bands are drawn beneath the lanes.
    for r in range(res.n_rounds):
        if rounds["accepted"][r] == 0:
            s, e, d = float(rounds["start_ms"][r]), float(rounds["end_ms"][r]), int(rounds["drafted"][r])
            add(f"bad round {r + 1}: {d} draft {'step' if d == 1 else 'steps'} + 1 pass = {_fmt_ms(e - s)} "
                f"for 1 token (plain decoding: {_fmt_ms(BIG_PASS_MS)})",
                lane="bad", start=s, end=e, y=BAND_Y, height=1.95, label="bad", status="bad",
                shown=e, label_size="11px", label_color=BAD_TEXT)

    verdict = {}
    for kind in ("accepted", "rejected", "discarded"):
        sel = ev.of_kind(kind)
        for r, tok in zip(sel.round.tolist(), sel.token.tolist()):
            verdict[(r, tok)] = kind
    own = {}
    for kind in ("correction", "bonus"):
        sel = ev.of_kind(kind)
        for r, tok, txt in zip(sel.round.tolist(), sel.token.tolist(), sel.text.tolist()):
            own[r] = (kind, tok, txt)

    drafts = ev.of_kind("draft")
    for r, tok, guess, s, e in zip(drafts.round.tolist(), drafts.token.tolist(), drafts.text.tolist(),
                                   drafts.start_ms.tolist(), drafts.end_ms.tolist()):
        v1 = float(rounds["end_ms"][r])
        kind = verdict[(r, tok)]
        step = tok - int(rounds["first_token"][r]) + 1
        add(f"round {r + 1}, draft step {step}: guessed “{guess.strip()}” → {_VERDICT[kind]}",
            f"round {r + 1}, draft step {step}: guessed “{guess.strip()}”, waiting for the big model's check",
            lane="draft", start=s, end=e, y=DRAFT_Y, height=BOX_H, label=theme.STATUS[kind]["mark"],
            status=kind, status_before="draft", label_before="", judged=v1, label_at=v1)

    verify = ev.of_kind("verify")
    for r, s, e in zip(verify.round.tolist(), verify.start_ms.tolist(), verify.end_ms.tolist()):
        d, a, made = (int(rounds[c][r]) for c in ("drafted", "accepted", "tokens"))
        extra = own.get(r)
        how = ("" if extra is None else
               " + the big model's own token" if extra[0] == "correction" else " + a bonus token")
        add(f"round {r + 1}: one pass checks {_plural(d, 'draft')} at once → {a} accepted{how} = "
            f"{_plural(made, 'token')}",
            lane="big", start=s, end=e, y=BIG_Y, height=BOX_H, label=f"+{made}", status="verify",
            label_size="11px")
        if extra is not None:
            kind, tok, txt = extra
            w = min(120.0, e - s)
            what = ("its own token at the first miss" if kind == "correction"
                    else "a bonus token: every draft was right, so the same pass adds one more")
            add(f"round {r + 1}: the big model writes “{txt.strip()}”, {what}",
                lane="big", start=e - w, end=e, y=BIG_Y, height=BOX_H, label=theme.STATUS[kind]["mark"],
                status=kind, shown=e, label_size="14px")
    return boxes, tips, rounds["end_ms"].tolist(), tips_before


def _span(cls: str, text: str, *, title: str = "", on: float | None = None, off: float | None = None,
          chk: float | None = None, hidden: bool = False) -> str:
    lead = text[: len(text) - len(text.lstrip())]
    word = text[len(lead):]
    attrs = f' class="{cls}"'
    if title:
        attrs += f' title="{esc(title)}"'
    for key, val in (("on", on), ("off", off), ("chk", chk)):
        if val is not None:
            attrs += f' data-{key}="{val:g}"'
    if hidden:
        attrs += " hidden"
    return f'<span{attrs}>{esc(lead)}<span class="w">{esc(word)}</span></span>'


def text_html(run: Relay, uid: str) -> str:
    """The growing text: every span carries when it appears (and disappears), end state shown.

    Drafts appear when drafted and vanish when their round is judged; then the
    accepted tokens, the struck-through first miss, the big model's own token
    and the bonus appear. Spans marked ``kept`` are the output text.
    """
    res = run.result
    rounds = res.rounds
    ev = res.events
    total = res.wall_ms
    drafts = ev.of_kind("draft")
    live, ghost = [], []
    for r in range(res.n_rounds):
        p, d, a = (int(rounds[c][r]) for c in ("first_token", "drafted", "accepted"))
        v1 = float(rounds["end_ms"][r])
        v0 = v1 - BIG_PASS_MS
        mine = drafts.round == r
        for guess, e in zip(drafts.text[mine].tolist(), drafts.end_ms[mine].tolist()):
            live.append(_span("tk tk-draft", guess, title="drafted, waiting for the big model's check",
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
            live.append(_span(cls, txt, title=title, on=v1, hidden=v1 > total))
            ghost.append(_span(cls.replace("tk ", "").replace("kept ", ""), txt))
    return (
        '<div class="ep2-textbox"><h3>The text so far</h3><div class="ep2-stack">'
        f'<div class="ep2-text ep2-ghost" aria-hidden="true">{"".join(ghost)}</div>'
        f'<div class="ep2-text ep2-text-live" data-sdp="{esc(uid)}-text">{"".join(live)}</div>'
        "</div></div>"
    )


def clocks_html(rows: dict, uid: str) -> str:
    """The two clocks, the speedup and the bad rounds, at the run's end (the browser rewinds them)."""
    last = len(rows["end_ms"]) - 1

    def f(key: str) -> str:
        return f'data-k="{key}">{esc(rows[key][last])}'

    nb = rows["bad_rounds"][last]
    return (
        f'<div class="ep2-clocks" data-sdp="{esc(uid)}-clocks">'
        f'<div class="sdp-stat"><div class="v" {f("relay")}</div>'
        '<div class="l">the relay’s wall clock (draft + big model)</div></div>'
        f'<div class="sdp-stat"><div class="v" {f("alone")}</div><div class="l" {f("alone_label")}</div></div>'
        f'<div class="sdp-stat"><div class="v" {f("speedup")}</div><div class="l" {f("speedup_label")}</div>'
        "</div>"
        f'<p class="when" {f("when")}</p>'
        f'<div class="ep2-bad" data-k="badbox"{"" if nb else " hidden"}><span class="sw bad">✗</span> '
        f'<strong>Bad rounds</strong> (first draft rejected): <span {f("bad")}</span></div>'
        f'<div class="ep2-bad" data-k="nobad"{" hidden" if nb else ""} style="background:#f3f6fb;'
        f'border-left-color:{theme.MUTED}">No bad rounds so far.</div>'
        "</div>"
    )


def check_html(g: Guarantee, uid: str) -> str:
    """The guarantee, checked on the server; shown when the run ends."""
    if g.ok:
        result = (f'<span class="ok">✓ Checked token by token:</span> all {g.n_tokens} tokens are identical '
                  "to what the big model writes alone, one pass per token.")
    else:
        result = (f'<span class="fail">✗ Mismatch:</span> {g.matches} of {g.n_tokens} tokens match; '
                  f"the first difference is at token {g.first_mismatch + 1}.")
    return (
        f'<div class="ep2-check" data-sdp="{esc(uid)}-check">'
        '<span class="pending" data-k="pending" hidden>The guarantee is checked when the run ends…</span>'
        f'<span data-k="result">{result}</span></div>'
    )


def legend_html() -> str:
    """The key to the lanes' colours, marks and patterns."""
    items = [
        ("draft", "", "draft step (60 ms)"),
        ("verify", "", "verify pass (600 ms, checks every draft at once)"),
        ("acc", "✓", "accepted"),
        ("rej", "✗", "rejected: the first miss"),
        ("dis", "–", "discarded: after the miss, never judged"),
        ("gold", "★", "the big model’s own token"),
        ("gold", "+", "bonus token"),
        ("bad", "bad", "bad round: first draft rejected"),
    ]
    spans = "".join(f'<span class="i"><span class="sw {c}">{m}</span>{esc(t)}</span>' for c, m, t in items)
    return f'<div class="ep2-legend" aria-label="Legend">{spans}</div>'


NOTE = ("<p class=\"sdp-note\">Colour is never the only cue: each verdict has its own mark (✓ ✗ – ★ +), "
        "and in the lanes its own pattern. In the text, accepted drafts are underlined, a rejected guess is "
        "struck through, the big model’s own tokens sit on gold with ★ (bonus tokens with +), and blue italic "
        "words are drafts waiting for the check. Hover a box in the lanes for details; while the run plays "
        "the lanes follow the clock, and at the end they show the whole run.</p>")


# --- the view ----------------------------------------------------------------------


class RelayView(pn.viewable.Viewer):
    """Controls, lanes, text and clocks of one relay run, bound to one state object."""

    state = param.ClassSelector(class_=Relay)

    def __init__(self, **params):
        params.setdefault("state", Relay())
        super().__init__(**params)
        self.uid = "ep2-" + uuid.uuid4().hex[:8]
        self.rounds = ColumnDataSource(round_rows(self.state.progress, len(TOKENS)), name="ep2-rounds")
        self.player = LanePlayer(
            _LANES, name="ep2", height=250, y_pad=(0.62, 0.55), x_label="wall clock (simulated ms)",
            speeds=SPEEDS, step_label="Step one round", lane_clocks=False, styles=_STYLES,
            frame_js=_FRAME_JS, frame_args=dict(rounds=self.rounds, uid=self.uid), min_label_px=6)
        css = [page_css(), CSS]
        self.clocks = pn.pane.HTML(stylesheets=css, name="ep2-clocks", min_width=280,
                                   styles={"flex": "1 1 300px"})
        self.text = pn.pane.HTML(sizing_mode="stretch_width", stylesheets=css, name="ep2-text")
        self.check = pn.pane.HTML(sizing_mode="stretch_width", stylesheets=css, name="ep2-check")
        self.legend = pn.pane.HTML(legend_html(), sizing_mode="stretch_width", stylesheets=css)
        self.new_run = pn.widgets.Button(label="New run", width=110,
                                         align="end", description="Fresh randomness: draws a new seed")
        self.new_run.on_click(lambda _: self.state.new_run())
        self.state.param.watch(self._redraw, "result")
        self._redraw()

    def _redraw(self, *_):
        rows = round_rows(self.state.progress, len(TOKENS))
        boxes, tips, stops, tips_before = lane_boxes(self.state)
        # While playing, the time axis follows the clock over about 3.5 rounds, so a
        # 60 ms draft step is wide enough to read; at the end it shows the whole run.
        round_ms = self.state.k * DRAFT_STEP_MS + BIG_PASS_MS
        # One held batch, so the page receives it as one message, in this order: the HTML
        # first and the lanes last, since replacing the lanes' data is what rewinds the
        # browser's player, and it then redraws the new HTML too.
        with pn.io.hold():
            self.clocks.object = clocks_html(rows, self.uid)
            self.text.object = text_html(self.state, self.uid)
            self.check.object = check_html(self.state.guarantee, self.uid)
            self.rounds.data = rows
            self.player.show(boxes, tips=tips, tips_before=tips_before, stops=stops,
                             window_ms=3.5 * round_ms)

    def __panel__(self):
        controls = pn.Param(
            self.state, parameters=["k", "quality"], show_name=False,
            widgets={"k": {"type": pn.widgets.IntSlider},
                     "quality": {"type": pn.widgets.FloatSlider, "step": 0.05, "format": "0.00"}},
            sizing_mode="stretch_width", name="ep2-controls",
        )
        seed = pn.Param(self.state, parameters=["seed"], show_name=False,
                        widgets={"seed": {"type": pn.widgets.IntInput, "width": 130}}, name="ep2-seed")
        return pn.Column(
            pn.FlexBox(pn.Column(controls, pn.Row(seed, self.new_run), width=330), self.clocks,
                       sizing_mode="stretch_width", flex_wrap="wrap"),
            pn.pane.Bokeh(self.player.controls),
            pn.pane.Bokeh(self.player.figure, sizing_mode="stretch_width"),
            self.legend,
            self.text,
            self.check,
            pn.pane.HTML(NOTE, sizing_mode="stretch_width", stylesheets=[page_css()]),
            sizing_mode="stretch_width",
        )


_OUTRO = """
<h2>Why it is a free lunch, sometimes</h2>
<p class="sdp-lede">An accepted draft token costs one 60 ms draft step instead of a 600 ms pass of the big
model. When several drafts in a row are right, one pass settles all of them, and the text arrives two or
three times faster, still exactly the big model’s text. Every round writes at least one token, because the
big model’s own token at the first miss is never wasted: that is the safety net.</p>
<p class="sdp-lede">The safety net is not free, though. In a bad round the very first draft is wrong, so the
page paid k draft steps and a full pass for a single token, more than the 600 ms plain decoding would have
cost. Lower the draft quality or raise k and watch these rounds eat the gain.</p>
<p class="sdp-note">Simulated costs: one big-model pass 600 ms, one draft step 60 ms. Each drafted token
matches the big model’s with probability “draft quality”, drawn afresh for every run and pinned by the
seed. Every clock and speedup on this page is measured from that run, not taken from a formula.</p>
"""


def page(state: Relay | None = None) -> pn.Column:
    """A fresh Episode 2 page (one per session or notebook cell)."""
    state = state or Relay()
    notice = bind_url(state, URL_PARAMS)
    view = RelayView(state=state)
    return episode_shell(
        number=NUMBER, title=TITLE, neighbours=neighbours(NUMBER), name="ep2",
        lede=("A small draft model proposes the next k tokens, one quick step each, and the big model checks "
              "them all in a single pass, keeping the ones it agrees with and writing its own token at the "
              "first miss."),
        try_this=("press <em>Play</em> and watch the clocks; then set <em>Draft quality</em> to 0.3 and "
                  "<em>k</em> to 8 and play again: the red bad rounds pile up and the speedup falls below "
                  "1×, yet the text is still the big model’s, word for word."),
        body=[notice, view,
              pn.pane.HTML(_OUTRO, sizing_mode="stretch_width", stylesheets=[page_css()])],
    )
