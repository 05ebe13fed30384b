"""What every part of an episode page gets once it is built (the shell's body, and each part
built later, ``kit/deferred.py``): its figures' anchors and data lines
(:func:`kit.figures.anchor_figures`), its glossary terms linked (:func:`kit.terms.link_terms`)
in every HTML block, now and whenever the block's text changes, and its controls' targets
enlarged (:func:`kit.a11y.enlarge_targets`)."""

from __future__ import annotations

import panel as pn

from .a11y import enlarge_targets
from .figures import anchor_figures
from .terms import link_terms


def _relink(event) -> None:
    new = event.new
    if isinstance(new, str):
        linked = link_terms(new)
        if linked != new:
            event.obj.object = linked


def link_part_terms(root) -> None:
    """Link the glossary terms of every HTML block in ``root``, and keep them linked."""
    if not isinstance(root, pn.viewable.Viewable):
        return
    panes = [root] if isinstance(root, pn.pane.HTML) else []
    for pane in panes + list(root.select(pn.pane.HTML)):
        if getattr(pane, "_sdp_terms", False):
            continue
        pane._sdp_terms = True
        if isinstance(pane.object, str):
            pane.object = link_terms(pane.object)
        pane.param.watch(_relink, "object")


def finish_part(part):
    """``part`` with its figures anchored and its terms linked; returns what to place on the page
    (a Viewer's layout, see :func:`kit.figures.anchor_figures`)."""
    part = anchor_figures(part)
    link_part_terms(part)
    enlarge_targets(part)
    return part
