"""The shell every episode page shares: heading, lede, what to try, navigation."""

from __future__ import annotations

import html
import logging

import panel as pn

from . import theme

log = logging.getLogger("specdec_playable")


def esc(text: object) -> str:
    """HTML-escape anything that did not come from this package's own literals."""
    return html.escape(str(text), quote=True)


def stat(value: str, label: str, *, css_class: str = "") -> str:
    """One big number with its caption, as HTML (both escaped)."""
    return (f'<div class="sdp-stat {esc(css_class)}"><div class="v">{esc(value)}</div>'
            f'<div class="l">{esc(label)}</div></div>')


def nav_html(number: int | None) -> str:
    """Links to the index and to the neighbouring built episodes."""
    from ..episodes import available

    eps = available()
    links = ['<a href="./">← All episodes</a>']
    numbers = [e.number for e in eps]
    if number in numbers:
        i = numbers.index(number)
        if i > 0:
            p = eps[i - 1]
            links.append(f'<a href="./{esc(p.slug)}">← Episode {p.number}: {esc(p.title)}</a>')
        if i + 1 < len(eps):
            n = eps[i + 1]
            links.append(f'<a href="./{esc(n.slug)}">Episode {n.number}: {esc(n.title)} →</a>')
    return '<nav class="sdp-nav" aria-label="Episodes">' + "".join(links) + "</nav>"


def episode_shell(*, number: int, title: str, lede: str, try_this: str, body: list,
                  name: str) -> pn.Column:
    """Wrap an episode's body in the common page shell.

    ``lede`` and ``try_this`` are trusted package text (may contain simple HTML).
    """
    header = pn.pane.HTML(
        f'<p class="sdp-kicker">Speculative Decoding, Playable · Episode {number}</p>'
        f'<h1 class="sdp-title">{esc(title)}</h1>'
        f'<p class="sdp-lede">{lede}</p>'
        f'<div class="sdp-try"><strong>Try this:</strong> {try_this}</div>',
        sizing_mode="stretch_width", stylesheets=[theme.PAGE_CSS], name=f"{name}-header",
    )
    def nav():
        return pn.pane.HTML(nav_html(number), stylesheets=[theme.PAGE_CSS],
                            sizing_mode="stretch_width")

    from .a11y import AccessibleNames

    return pn.Column(
        nav(), header, *body, nav(), AccessibleNames(),
        name=name, sizing_mode="stretch_width", max_width=1100,
        styles={"margin": "0 auto", "padding": "8px 16px 32px 16px"},
        stylesheets=[theme.PAGE_CSS],
    )


def error_page(message: str = "This page could not be built.") -> pn.Column:
    """What a visitor sees if building a page fails: a plain message, no traceback."""
    return pn.Column(pn.pane.HTML(
        f'<h1 class="sdp-title">Something went wrong</h1><p class="sdp-lede">{esc(message)} '
        'The error was logged on the server. <a href="./">Back to all episodes</a>.</p>',
        stylesheets=[theme.PAGE_CSS]), name="error-page")


def safe_page(build):
    """Run a page builder; on failure log the traceback server-side and return :func:`error_page`."""
    try:
        return build()
    except Exception:  # noqa: BLE001 - the visitor must never see a traceback
        log.exception("building page %s failed", getattr(build, "__qualname__", build))
        return error_page()
