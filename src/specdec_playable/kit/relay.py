"""The relay's lanes, shared by Episode 2 (simulated) and Episode 7 (the real model): a run's
draft steps, verify passes and bad rounds as boxes (:func:`relay_timeline`), and one token as the
relay's frame hook expects it (:func:`token_span`; ``static/relay_frame.js``'s header is the
contract for the ``data-*`` attributes).
"""

from __future__ import annotations

from ..sim.relay import RelayResult
from . import theme
from .lanes import Box, Timeline
from .page import esc
from .words import plural

DRAFT_Y, BIG_Y, BAND_Y = 1.2, 0.0, 0.6
BOX_H = 0.56
#: Height of a bad round's band: it spans both lanes.
BAND_H = 1.95
#: The big model's own token is drawn as the last part of its pass, this long at most, and at
#: most this share of the pass, so the pass's "+n" label (at its middle) stays in the open
#: (Episode 2's 600 ms passes: 120 ms either way; Episode 7's real passes are far shorter).
OWN_TOKEN_MS = 120.0
OWN_TOKEN_SHARE = 0.2
STYLES = {
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


def fmt_ms(ms: float) -> str:
    return f"{ms:,.0f} ms"


def _bad_bands(res: RelayResult, pass_ms: float) -> list[Box]:
    rounds = res.rounds
    out = []
    for r in range(res.n_rounds):
        if rounds["accepted"][r] == 0:
            s, e, d = float(rounds["start_ms"][r]), float(rounds["end_ms"][r]), int(rounds["drafted"][r])
            out.append(Box(
                "bad", s, e, BAND_Y, BAND_H, "bad", "bad", shown=e, label_size="11px",
                label_color=theme.BAD_TEXT,
                tip=(f"bad round {r + 1}: {plural(d, 'draft step')} + 1 pass = "
                     f"{fmt_ms(e - s)} for 1 token (plain decoding: {fmt_ms(pass_ms)})")))
    return out


def _draft_steps(res: RelayResult) -> list[Box]:
    """Each draft step, drawn as a plain draft until its round is judged, then with its verdict."""
    rounds, ev = res.rounds, res.events
    verdict = {}
    for kind in ("accepted", "rejected", "discarded"):
        sel = ev.of_kind(kind)
        for r, tok in zip(sel.round.tolist(), sel.token.tolist()):
            verdict[(r, tok)] = kind
    out = []
    drafts = ev.of_kind("draft")
    for r, tok, guess, s, e in zip(drafts.round.tolist(), drafts.token.tolist(), drafts.text.tolist(),
                                   drafts.start_ms.tolist(), drafts.end_ms.tolist()):
        v1 = float(rounds["end_ms"][r])
        kind = verdict[(r, tok)]
        step = tok - int(rounds["first_token"][r]) + 1
        what = f"round {r + 1}, draft step {step}: guessed “{guess.strip()}”"
        out.append(Box(
            "draft", s, e, DRAFT_Y, BOX_H, theme.STATUS[kind]["mark"], kind, label_size="10px",
            status_before="draft", label_before="", judged=v1, label_at=v1,
            tip=f"{what} → {_VERDICT[kind]}", tip_before=f"{what}, waiting for the big model's check"))
    return out


def _verify_passes(res: RelayResult) -> list[Box]:
    """Each verify pass, and the big model's own token (correction or bonus) at its end."""
    rounds, ev = res.rounds, res.events
    own = {}
    for kind in ("correction", "bonus"):
        sel = ev.of_kind(kind)
        for r, txt in zip(sel.round.tolist(), sel.text.tolist()):
            own[r] = (kind, txt)
    out = []
    verify = ev.of_kind("verify")
    for r, s, e in zip(verify.round.tolist(), verify.start_ms.tolist(), verify.end_ms.tolist()):
        d, a, made = (int(rounds[c][r]) for c in ("drafted", "accepted", "tokens"))
        extra = own.get(r)
        own_start = e - min(OWN_TOKEN_MS, OWN_TOKEN_SHARE * (e - s))
        how = ("" if extra is None else
               " + the big model's own token" if extra[0] == "correction" else " + a bonus token")
        out.append(Box(
            "big", s, e, BIG_Y, BOX_H, f"+{made}", "verify", label_size="11px",
            label_end=own_start if extra is not None else e,
            tip=(f"round {r + 1}: one pass checks {plural(d, 'draft')} at once → {a} accepted{how} = "
                 f"{plural(made, 'token')}")))
        if extra is not None:
            kind, txt = extra
            what = ("its own token at the first miss" if kind == "correction"
                    else "a bonus token: every draft was right, so the same pass adds one more")
            out.append(Box(
                "big", own_start, e, BIG_Y, BOX_H, theme.STATUS[kind]["mark"], kind,
                shown=e, label_size="14px",
                tip=f"round {r + 1}: the big model writes “{txt.strip()}”, {what}"))
    return out


def relay_timeline(res: RelayResult, *, pass_ms: float,
                   window_ms: float = 0.0) -> Timeline:
    """The lanes of one run: bad-round bands (drawn first, beneath), draft steps, verify passes.

    The times are the run's own events, simulated or measured; ``pass_ms`` is what plain
    decoding pays per token (for the bad rounds' tooltips). A draft's tooltip gives its
    verdict only once its round is judged; the step button stops at each round's end.
    """
    return Timeline(tuple(_bad_bands(res, pass_ms) + _draft_steps(res) + _verify_passes(res)),
                    stops=tuple(res.rounds["end_ms"].tolist()), window_ms=window_ms)


def token_span(cls: str, text: str, *, title: str = "", on: float | None = None,
               off: float | None = None, chk: float | None = None, hidden: bool = False,
               lead_chars: str | None = None) -> str:
    """One token as the frame hook expects it: its leading whitespace (``lead_chars``, all
    whitespace by default) apart from the marked word, with optional timing attributes."""
    lead = text[: len(text) - len(text.lstrip(lead_chars))]
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


def legend_html(items) -> str:
    """A relay's key: ``items`` of (swatch class, mark, words). Each item is two flex items, the
    swatch and its words in one span, so a glossary link inside the words ("the big model's own
    token") runs on with the text around it instead of standing apart as a flex item."""
    spans = "".join(f'<span class="i"><span class="sw {c}">{m}</span><span class="t">{esc(t)}</span></span>'
                    for c, m, t in items)
    return f'<div class="ep2-legend" aria-label="Legend">{spans}</div>'
