"""The page a visitor sees when building a page fails: a plain message, never a traceback (which
goes to the server's log, with the page's name)."""

from __future__ import annotations

import logging

import panel as pn

from ..page import declare_viewport, esc, page_css, theme_css, watch_connection

log = logging.getLogger("specdec_playable")


def error_page(message: str = "This page could not be built.") -> pn.Column:
    """What a visitor sees if building a page fails: a plain message, no traceback."""
    declare_viewport()
    return pn.Column(pn.pane.HTML(
        f'<h1 class="sdp-title">Something went wrong</h1><p class="sdp-lede">{esc(message)} '
        'The error was logged on the server. <a href="./">Back to all episodes</a>.</p>',
        stylesheets=[page_css()]), name="error-page", stylesheets=[theme_css(), page_css()])


def safe_page(build):
    """Run a page builder; on failure log the traceback server-side and return :func:`error_page`.
    Either way, the page says when its connection to the server drops (:func:`.watch_connection`)."""
    watch_connection()
    try:
        return build()
    except Exception:  # noqa: BLE001 - the visitor must never see a traceback
        log.exception("building page %s failed", getattr(build, "__qualname__", build))
        return error_page()
