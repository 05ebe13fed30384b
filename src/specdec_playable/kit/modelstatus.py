"""The model's status line: whether the server's model is loading, ready or failed, and since when.

A teacher opens the summary or Episode 7 before class and sees at a glance whether the model has
loaded (the first load takes a minute or more, longer on a busy machine), and a failed load says
so, with when and whether it is being tried again. :func:`status_words` writes the line from the
server's :class:`.runtime.model_process.LoadState` (plain words, computed; no Panel);
:func:`status_line` is the pane a page shows, which reads the state again every
:data:`REFRESH_MS` until the model is ready, then stops asking.
"""

from __future__ import annotations

import time

import panel as pn

from ..runtime import service as interface
from .page import esc, page_css, session_doc

#: How often a page's status line reads the load state again while the model is not ready (ms).
REFRESH_MS = 2000


def clock(at: float) -> str:
    """The server's local time of ``at`` (``time.time()``), to the minute ("09:05")."""
    return time.strftime("%H:%M", time.localtime(at))


def status_words(state: interface.LoadState, *, installed: bool) -> str:
    """The status line for ``state`` (plain text; the caller escapes it).

    >>> status_words(interface.LoadState("waiting", 0.0), installed=False)[:38]
    'The model is not installed on this ser'
    """
    if not installed:
        return ("The model is not installed on this server: Episode 7 shows recorded runs, and the "
                "pages price a pass with the measurements shipped with them.")
    if state.state == "ready":
        return f"The model: ready since {clock(state.at)} (server time)."
    if state.state == "loading":
        return (f"The model: loading since {clock(state.at)} (server time); a first load takes a "
                "minute or more, longer on a busy machine.")
    if state.state == "failed":
        why = f": {state.reason}" if state.reason else ""
        then = ("It is loading again in a moment." if state.retry_s is not None
                else "The next run loads it again.")
        return f"The model: failed to load at {clock(state.at)} (server time){why}. {then}"
    return "The model: not loaded yet; the first run loads it (a minute or more)."


def _html(service: interface.Service, installed: bool) -> tuple[str, bool]:
    state = service.load_state()
    settled = not installed or state.state == "ready"
    css = "sdp-model-status" + (" sdp-notice" if installed and state.state == "failed" else "")
    return (f'<p class="sdp-small {css}" role="status">{esc(status_words(state, installed=installed))}</p>',
            settled)


def status_line(service: interface.Service, *, name: str = "model-status",
                refresh_ms: int = REFRESH_MS) -> pn.pane.HTML:
    """The status line of ``service``'s model, for one session: in a served page it reads the
    state again every ``refresh_ms`` until the model is ready (or is not installed), then stops."""
    installed = service.installed()
    html, settled = _html(service, installed)
    pane = pn.pane.HTML(html, name=name, sizing_mode="stretch_width", margin=(0, 10),
                        stylesheets=[page_css()])
    if settled or session_doc() is None:
        return pane
    held: list = []

    def refresh() -> None:
        new, done = _html(service, installed)
        if new != pane.object:
            pane.object = new
        if done and held:
            held.pop().stop()

    held.append(pn.state.add_periodic_callback(refresh, period=refresh_ms))
    return pane
