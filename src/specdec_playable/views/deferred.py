"""Parts of a page built after its first paint.

Opening a page costs the server a session's worth of Bokeh models, built before the
first byte of the page goes out. A part below the fold (a second chart, a data
section) need not hold up the top of the page: :func:`after_first_paint` puts a
placeholder of the part's height in its place and builds the part when the browser
reports the page rendered (Panel's ``onload``, on Bokeh's ``document_ready``). The
part then arrives in one message, moments after the page appeared, and the
placeholder's height keeps the page from jumping.

The part's state is the session's own, already restored from the link, so a part
built later shows what one built at once would. Outside a server session (a
notebook cell, a test, an export) there is no first paint to wait for: the part is
built at once, so every caller gets the same complete page.

Usage, in a page or a view::

    from .deferred import after_first_paint

    body = [top_part, after_first_paint(lambda: hardware_section("ep1-hw"),
                                        min_height=700, name="ep1-hw-slot")]

A part that fails to build is logged on the server and replaced by a one-line
notice; the rest of the page keeps working. The slot carries the CSS class
:data:`DEFERRED_CLASS`, so a client can tell when the page is complete: every such slot
in the first document has been given its children.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import panel as pn

from .page import page_css

log = logging.getLogger("specdec_playable")

#: The CSS class of a slot whose part comes after the first paint. A client (a test, a
#: benchmark) knows the page is complete once every such slot of its first document has
#: received its children.
DEFERRED_CLASS = "sdp-deferred"


def in_session() -> bool:
    """Whether the page is being built for a browser session of a running server."""
    doc = pn.state.curdoc
    return doc is not None and doc.session_context is not None


def after_first_paint(build: Callable[[], pn.viewable.Viewable], *, min_height: int,
                      name: str) -> pn.Column:
    """A column that holds ``build()``: at once outside a session, after the first paint in one.

    ``min_height`` (px) reserves the part's room while it is being built; ``name`` names
    the column (tests find the part inside it).
    """
    slot = pn.Column(sizing_mode="stretch_width", name=name, css_classes=[DEFERRED_CLASS])

    def fill() -> None:
        try:
            part = build()
        except Exception:  # noqa: BLE001 - the visitor must never see a traceback
            log.exception("building the part %s of a page failed", name)
            part = pn.pane.HTML('<p class="sdp-note">This part of the page could not be built. '
                                'The error was logged on the server.</p>',
                                stylesheets=[page_css()], sizing_mode="stretch_width")
        with pn.io.hold():
            slot.min_height = None
            slot.objects = [part]

    if in_session():
        slot.min_height = min_height
        pn.state.onload(fill)
    else:
        fill()
    return slot
