"""Parts of a page built after its first paint, or when the visitor scrolls near them.

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

    body = [top_part, after_first_paint(lambda: hardware_section("ep1-hw"), name="ep1-hw-slot")]

A part further down a long page need not be built for a visitor who never scrolls to it:
:func:`when_near` holds its room the same way and builds the part once the browser reports
the slot within :data:`AHEAD_SCREENS` screens of the visible part of the page (an
``IntersectionObserver`` on a :class:`NearView` at the top of the slot, which says the part
is loading). A class opening a page at once then waits only for what its screens show; the
rest is built as each visitor reads on. A view that holds such a part creates its slot in
its ``__init__`` and its charts in the part's builder, and its watchers skip a chart that
is not built yet; the builder brings the part up to date with the state when it runs.

A part that fails to build is logged on the server and replaced by a one-line
notice; the rest of the page keeps working. The slot carries the CSS class
:data:`DEFERRED_CLASS`, so a client can tell when the page's first screen is complete:
every such slot in the first document has been given its children. A slot built when near
carries :data:`NEAR_CLASS` instead and holds only its :class:`NearView` until then: a
client scrolls to it (or, without a browser, sets the view's ``near``) to have it built.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import panel as pn
import param
from panel.custom import JSComponent

from .heights import reserved
from .page import page_css
from .parts import finish_part
from .resources import path

log = logging.getLogger("specdec_playable")

#: The CSS class of a slot whose part comes after the first paint. A client (a test, a
#: benchmark) knows the page is complete once every such slot of its first document has
#: received its children.
DEFERRED_CLASS = "sdp-deferred"
#: The CSS class of a slot whose part is built when the visitor scrolls near it.
NEAR_CLASS = "sdp-near"
#: How far below (or above) the visible part of the page a slot starts being built, in screen
#: heights: one screen ahead, a reader scrolling at a normal pace finds the part built (building
#: takes a second or more on a loaded server), and a part more than a screen below the first one
#: is still not built for a visitor who does not scroll.
AHEAD_SCREENS = 1.0


class NearView(JSComponent):
    """A line ("Loading this part of the page…") that sets ``near`` once the browser shows it
    within ``ahead`` screen heights of the visible part of the page (of the frame's own page
    when it is embedded in an ``<iframe>``)."""

    near = param.Boolean(default=False, doc="Set by the browser, once, when the mark comes near.")
    ahead = param.Number(default=AHEAD_SCREENS, bounds=(0, 10), constant=True,
                         doc="How far outside the visible page the mark counts as near "
                             "(screen heights).")

    _esm = path("near.js")


def slot_class(name: str) -> str:
    """The CSS class that finds the slot ``name`` in the page (``tests/test_browser_heights.py``)."""
    return f"sdp-slot-{name}"


def in_session() -> bool:
    """Whether the page is being built for a browser session of a running server."""
    doc = pn.state.curdoc
    return doc is not None and doc.session_context is not None


def after_first_paint(build: Callable[[], pn.viewable.Viewable], *, name: str) -> pn.Column:
    """A column that holds ``build()``: at once outside a session, after the first paint in one.

    ``name`` names the column (tests find the part inside it); the room it reserves while the
    part is being built is :func:`.heights.reserved` of it.
    """
    min_height = reserved(name)
    slot = pn.Column(sizing_mode="stretch_width", name=name,
                     css_classes=[DEFERRED_CLASS, slot_class(name)])
    fill = _filler(slot, build, name)
    if in_session():
        slot.min_height = min_height
        pn.state.onload(fill)
    else:
        fill()
    return slot


def when_near(build: Callable[[], pn.viewable.Viewable], *, name: str,
              ahead: float = AHEAD_SCREENS) -> pn.Column:
    """A column that holds ``build()``: at once outside a session, in one when the visitor
    scrolls within ``ahead`` screen heights of it.

    ``name`` names the column; until the part is built the column holds the part's room
    (:func:`.heights.reserved` of it), so the page's length and the scroll bar are right from
    the start.
    """
    min_height = reserved(name)
    slot = pn.Column(sizing_mode="stretch_width", name=name, css_classes=[NEAR_CLASS, slot_class(name)])
    fill = _filler(slot, build, name)
    if not in_session():
        fill()
        return slot
    mark = NearView(ahead=ahead, sizing_mode="stretch_width", margin=0)
    done = []

    def on_near(event) -> None:
        if event.new and not done:
            done.append(True)
            fill()

    mark.param.watch(on_near, "near")
    slot.min_height = min_height
    slot.objects = [mark]
    return slot


def _filler(slot: pn.Column, build: Callable[[], pn.viewable.Viewable], name: str):
    """The function that builds the part into ``slot`` (a notice in its place if it fails)."""

    def fill() -> None:
        try:
            part = finish_part(build())
        except Exception:  # noqa: BLE001 - the visitor must never see a traceback
            log.exception("building the part %s of a page failed", name)
            part = pn.pane.HTML('<p class="sdp-note">This part of the page could not be built. '
                                'The error was logged on the server.</p>',
                                stylesheets=[page_css()], sizing_mode="stretch_width")
        with pn.io.hold():
            slot.min_height = None
            slot.objects = [part]

    return fill
