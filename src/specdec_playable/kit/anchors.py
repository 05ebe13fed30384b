"""Links to a place inside a page (``/ep5_the_break_even_map#fig-ep5-curves``, ``/glossary#kv-cache``).

A browser follows a link's ``#fragment`` to the element with that ``id`` in the page's own
document, but Panel draws every part of a page inside shadow roots, where the browser does not
look, and parts built after the first paint or on scroll (``kit/deferred.py``) are not there
yet when the page loads. :class:`FragmentTarget`, an invisible component placed once per page,
finds the element in every shadow root once it exists and scrolls to it: on load, and when the
fragment changes. If the element is in a part not built yet, it scrolls to the next part still
loading, which builds it, and looks again (``kit/static/anchors.js``).
"""

from __future__ import annotations

import param
from panel.custom import JSComponent

from .resources import path

#: How long the browser keeps looking for a link's target (ms): parts built on scroll take a
#: second or more each on a loaded server.
SEEK_MS = 20_000


class FragmentTarget(JSComponent):
    """Invisible; scrolls to the element the address's ``#fragment`` names (see module doc)."""

    seek_ms = param.Integer(default=SEEK_MS, bounds=(0, 120_000), constant=True,
                            doc="How long to keep looking for the target (ms).")

    _esm = path("anchors.js")

    def __init__(self, **params):
        params.setdefault("height", 0)
        params.setdefault("margin", 0)
        super().__init__(**params)
