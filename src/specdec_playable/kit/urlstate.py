"""Keep an episode's controls in the URL query, and read them back safely.

Opening ``/ep3_the_quality_dial?q=0.7&k=6&c=0.15`` restores that setup; moving a
control rewrites the query so the address bar can be shared at any moment.

Values in a URL are untrusted: every value is parsed here against the
parameter's own type and bounds. Out-of-range numbers are clamped, anything
unparseable (NaN, infinities, words, absurdly long strings) falls back to the
default, unknown keys are ignored, and the page shows one short, escaped notice
saying what was changed. Nothing from the query is ever evaluated.

A text a visitor wrote (Episode 4's pasted text) may be kept in the link too, as a "long text":
its own bound replaces :data:`MAX_VALUE_CHARS`, a longer one is left out of the link both when it
is read and when it is written, and an empty one is not written at all.
"""

from __future__ import annotations

import logging
import math
import re
import time
from collections.abc import Mapping, Sequence
from urllib.parse import urlencode

import panel as pn
import param

from .page import esc, page_css

log = logging.getLogger("specdec_playable")

MAX_VALUE_CHARS = 64
MAX_KEYS_REPORTED = 3
_INT = re.compile(r"[+-]?\d{1,18}")


def _text(raw) -> str:
    if isinstance(raw, (list, tuple)):
        raw = raw[-1] if raw else b""
    if isinstance(raw, bytes):
        raw = raw.decode("utf-8", errors="replace")
    return str(raw).strip()


def _short(text: str, n: int = 24) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def _fmt(v) -> str:
    return f"{v:g}" if isinstance(v, float) else str(v)


def parse_value(p: param.Parameter, text: str, max_chars: int = MAX_VALUE_CHARS):
    """``(value, reason)``: the value to use and why it differs from the text (``None`` if it does not).

    ``max_chars`` bounds the text (a long text's own bound; :data:`MAX_VALUE_CHARS` otherwise)."""
    default = p.default
    if len(text) > max_chars:
        return default, "too long, so the default was used"
    if isinstance(p, param.Boolean):
        low = text.lower()
        if low in ("true", "1", "yes", "on"):
            return True, None
        if low in ("false", "0", "no", "off"):
            return False, None
        return default, "not true/false, so the default was used"
    if isinstance(p, param.Number):  # Integer is a Number too
        is_int = isinstance(p, param.Integer)
        try:
            v = float(text)
        except ValueError:
            return default, "not a number, so the default was used"
        if not math.isfinite(v):
            return default, "not a finite number, so the default was used"
        reason = None
        if is_int:
            if _INT.fullmatch(text):
                v = int(text)
            elif v.is_integer():
                v = int(v)
            else:
                return default, "not a whole number, so the default was used"
        lo, hi = p.bounds or (None, None)
        if lo is not None and v < lo:
            v, reason = (int(lo) if is_int else float(lo)), "below the smallest allowed value"
        elif hi is not None and v > hi:
            v, reason = (int(hi) if is_int else float(hi)), "above the largest allowed value"
        return v, reason
    if isinstance(p, param.Selector):
        for obj in p.objects:
            if str(obj) == text:
                return obj, None
        return default, "not one of the choices, so the default was used"
    if isinstance(p, param.String):
        return text, None
    return default, "not understood, so the default was used"


def read_query(state: param.Parameterized, names: Sequence[str],
               query: Mapping[str, object], aliases: Mapping[str, str] | None = None,
               value_aliases: Mapping[str, Mapping[str, str]] | None = None,
               long_text: Mapping[str, int] | None = None,
               ) -> tuple[dict, list[str]]:
    """Parse ``query`` for ``names`` of ``state``: ``(values to apply, notices)``.

    ``aliases`` maps old keys of shared links to the names they now stand for; a key
    under its current name wins over its alias. ``value_aliases`` maps, per name, old values
    of shared links to the values they now stand for (``{"draft": {"learned": "ngram"}}``).
    ``long_text`` maps the names of String parameters that hold a visitor's text to their bound
    in characters. Notices are plain text (they quote the key as the link wrote it); escape them before
    showing them.
    """
    aliases = dict(aliases or {})
    value_aliases = dict(value_aliases or {})
    long_text = dict(long_text or {})
    values, notices, unknown = {}, [], []
    for key, raw in query.items():
        key = str(key)
        if key.startswith("bokeh-"):  # Bokeh's own embedding arguments
            continue
        name = aliases.get(key, key)
        if name not in names:
            unknown.append(key)
            continue
        if name != key and name in query:
            continue
        text = _text(raw)
        text = value_aliases.get(name, {}).get(text, text)
        value, reason = parse_value(state.param[name], text, long_text.get(name, MAX_VALUE_CHARS))
        values[name] = value
        if reason and name in long_text:
            notices.append(f"the text in the link was longer than {long_text[name]:,} characters, "
                           "so it was left out")
        elif reason:
            notices.append(f"{key}={_short(text)} was {reason}; it is now {_fmt(value)}")
    if unknown:
        shown = ", ".join(f"“{_short(k, 20)}”" for k in unknown[:MAX_KEYS_REPORTED])
        more = f" and {len(unknown) - MAX_KEYS_REPORTED} more" if len(unknown) > MAX_KEYS_REPORTED else ""
        notices.append(f"ignored unknown setting{'s' if len(unknown) > 1 else ''} {shown}{more}")
    return values, notices


def notice_html(notices: Sequence[str]) -> str:
    if not notices:
        return ""
    items = "".join(f"<li>{esc(n)}</li>" for n in notices)
    return (f'<div class="sdp-notice" role="status"><strong>Some settings in the link were '
            f'changed:</strong><ul style="margin:0.2em 0 0 0">{items}</ul></div>')


def url_values(state: param.Parameterized, names: Sequence[str],
               long_text: Mapping[str, int] | None = None) -> dict[str, str]:
    """What the address bar holds for ``names`` of ``state``: every value as text, except a long
    text that is empty or over its bound."""
    long_text = long_text or {}
    out = {}
    for n in names:
        v = _fmt(getattr(state, n))
        if n in long_text and not (0 < len(v) <= long_text[n]):
            continue
        out[n] = v
    return out


def bind_url(state: param.Parameterized, names: Sequence[str],
             aliases: Mapping[str, str] | None = None,
             value_aliases: Mapping[str, Mapping[str, str]] | None = None,
             long_text: Mapping[str, int] | None = None) -> pn.pane.HTML:
    """Restore ``names`` of ``state`` from this session's URL and keep the URL in step.

    ``aliases`` are old keys and ``value_aliases`` old values still read from shared links
    and ``long_text`` the visitor's texts with their bounds (see :func:`read_query`); the
    address bar is written with the current names. Returns the notice pane (empty and
    hidden when nothing had to change). Outside a server session (a notebook, a test)
    it only returns the hidden pane. The notice speaks of the link as it was opened, so
    it goes away as soon as the visitor changes one of the controls it describes.
    """
    names = list(names)
    pane = pn.pane.HTML("", visible=False, sizing_mode="stretch_width", stylesheets=[page_css()],
                        name="url-notice")
    if pn.state.curdoc is None or pn.state.curdoc.session_context is None:
        return pane
    try:
        values, notices = read_query(state, names, pn.state.session_args or {}, aliases,
                                     value_aliases, long_text)
    except Exception:  # noqa: BLE001 - a bad link must never break the page
        log.exception("could not read the query string")
        values, notices = {}, ["the link's settings could not be read, so defaults are used"]
    if values:
        try:
            state.param.update(**values)
        except Exception:  # noqa: BLE001
            log.exception("could not apply query values %r", values)
            notices.append("the link's settings could not be applied, so defaults are used")
    if notices:
        log.info("query adjusted for %s: %s", type(state).__name__, "; ".join(notices))
        pane.object = notice_html(notices)
        pane.visible = True
        _hide_when_changed(pane, state, names)

    location = pn.state.location
    if location is not None:
        doc = pn.state.curdoc

        def write(*_):
            query = {k: v for k, v in location.query_params.items() if k not in names}
            query.update(url_values(state, names, long_text))
            location.search = "?" + urlencode(query)

        def clean_link():
            # Replace whatever the link held (bad values, unknown keys) with the clean setup.
            location.search = ""
            write()

        state.param.watch(_Settled(doc, write), names)
        pn.state.onload(clean_link)
    return pane


def _hide_when_changed(pane: pn.pane.HTML, state: param.Parameterized, names: Sequence[str]) -> None:
    """Hide ``pane`` (and stop watching) the first time one of ``names`` of ``state`` changes."""
    watcher = None

    def hide(*_):
        pane.visible = False
        state.param.unwatch(watcher)

    watcher = state.param.watch(hide, list(names))


#: The address bar follows the controls once they have been still this long. While a
#: slider is dragged, the recomputed page goes out alone instead of with a URL change
#: that the browser would also have to apply in the middle of the drag.
URL_SETTLE_MS = 300


class _Settled:
    """Call ``write`` once changes have stopped for :data:`URL_SETTLE_MS` (trailing debounce).

    One timeout callback at a time per session: a change only records its time, and a
    callback that fires too early re-arms itself for the remainder.
    """

    def __init__(self, doc, write):
        self._doc, self._write = doc, write
        self._last = 0.0
        self._armed = False

    def __call__(self, *_):
        self._last = time.monotonic()
        if not self._armed:
            self._armed = True
            self._doc.add_timeout_callback(self._fire, URL_SETTLE_MS)

    def _fire(self):
        wait_ms = URL_SETTLE_MS - (time.monotonic() - self._last) * 1000
        if wait_ms > 1:
            self._doc.add_timeout_callback(self._fire, wait_ms)
            return
        self._armed = False
        self._write()
