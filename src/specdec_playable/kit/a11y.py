"""Accessible names for controls that Panel and Bokeh render without one.

Panel 1.10's sliders render a noUiSlider handle (``role="slider"``) with no
accessible name, and Bokeh's number spinners render two empty buttons. Screen
readers announce them as unnamed, and axe-core reports them as serious/critical.
:class:`AccessibleNames` is an invisible component, placed once per page, that
names them in the browser (``kit/static/a11y.js``).
"""

from __future__ import annotations

import panel as pn
from panel.custom import JSComponent

from .resources import path, stylesheet

def enlarge_targets(root) -> None:
    """Every widget in ``root`` is a target of at least 32 x 32 px (``kit/static/targets.css``:
    a slider's handle, drawn at Bokeh's 14 x 18 px without it, a button, a select, a text
    input), and no input control keeps a hover tooltip (its ``description``): a tooltip opens over the
    controls beside or under it, and what it said is in the help list under the controls
    (:func:`.inputs.control_help`). Buttons keep theirs (the exercises' choices use them)."""
    if not isinstance(root, pn.viewable.Viewable):
        return
    widgets = [root] if isinstance(root, pn.widgets.Widget) else []
    for w in widgets + list(root.select(pn.widgets.Widget)):
        if getattr(w, "_sdp_targets", False):
            continue
        w._sdp_targets = True
        w.stylesheets = [*w.stylesheets, stylesheet("targets.css")]
        if not isinstance(w, pn.widgets.Button) and getattr(w, "description", None):
            w.description = None


class AccessibleNames(JSComponent):
    """Invisible; names unnamed sliders and spinner buttons on the page (see module doc)."""

    _esm = path("a11y.js")

    def __init__(self, **params):
        params.setdefault("height", 0)
        params.setdefault("margin", 0)
        super().__init__(**params)


def describe(fig, text: str) -> None:
    """Give a chart its text alternative: ``text`` (plain, computed from what the chart shows)
    as the accessible name of the figure's element, sent again only when it changed.

    A figure without a toolbar is an image to assistive technology (``role="img"``); one with a
    toolbar is a named ``figure``, so its buttons stay reachable inside it.
    """
    tools = getattr(getattr(fig, "toolbar", None), "tools", ()) or ()
    role = "figure" if fig.toolbar_location is not None and tools else "img"
    attrs = {**fig.html_attributes, "role": role, "aria-label": " ".join(text.split())}
    if dict(fig.html_attributes) != attrs:
        fig.html_attributes = attrs
