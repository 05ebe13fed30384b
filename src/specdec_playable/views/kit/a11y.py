"""Accessible names for controls that Panel and Bokeh render without one.

Panel 1.10's sliders render a noUiSlider handle (``role="slider"``) with no
accessible name, and Bokeh's number spinners render two empty buttons. Screen
readers announce them as unnamed, and axe-core reports them as serious/critical.
:class:`AccessibleNames` is an invisible component, placed once per page, that
names them in the browser (``views/static/a11y.js``).
"""

from __future__ import annotations

from panel.custom import JSComponent

from .resources import path


class AccessibleNames(JSComponent):
    """Invisible; names unnamed sliders and spinner buttons on the page (see module doc)."""

    _esm = path("a11y.js")

    def __init__(self, **params):
        params.setdefault("height", 0)
        params.setdefault("margin", 0)
        super().__init__(**params)
