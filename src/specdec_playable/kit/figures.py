"""Every figure of a page gets an anchor a course page can link to (``#fig-ep5-map``), and a line
under it: a link to itself, buttons that save it as a PNG or an SVG file for slides, and, for a
figure drawn from a shipped measurement, the file to download with its provenance.

:func:`anchor_figures` walks a built part of a page (the shell's body, and each part built later,
``kit/deferred.py``), gives every named Bokeh plot the ``id`` :func:`anchor_id` (``html_id``)
and puts the line under the pane that holds it. :data:`FIGURE_DATA` says which shipped files
(``assets/``, served read-only at :data:`ASSETS_HREF` by ``app/files.py``) each figure is
drawn from; the names come from the readers in ``data/``.

The save buttons are plain HTML (``data-sdp-save``); :class:`FigureSaver`, placed once per page,
answers their clicks in the browser (``static/figure_save.js``): BokehJS draws the figure as it is
on screen into a PNG, or into an SVG with its SVG backend, and the browser saves the file under
the figure's anchor (``fig-ep5-map.png``). No server round trip.
"""

from __future__ import annotations

import html
from collections.abc import Mapping

import panel as pn
from bokeh.models import Model, Plot
from panel.custom import JSComponent

from ..data import hardware, measured, tree_example, tree_table
from . import theme
from .resources import path, stylesheet

#: Where the shipped files are served, relative to any page of the site.
ASSETS_HREF = "./assets"
#: The page listing every shipped file with its provenance.
DATA_HREF = "./data"

_H200 = (hardware.CSV_NAME, hardware.META_NAME)
_CPU = (hardware.CPU_CSV_NAME, hardware.CPU_META_NAME)
_LLAMA = (hardware.LLAMA_CSV_NAME, hardware.LLAMA_META_NAME)
_Q4 = (hardware.CPU_Q4_CSV_NAME, hardware.CPU_Q4_META_NAME)
_TEXTS = (measured.ASSET, measured.META)
_TREES = (tree_table.CSV_NAME, tree_table.META_NAME, tree_example.ASSET)
#: Bokeh plot name -> the shipped files (paths inside ``assets/``) the figure is drawn from.
FIGURE_DATA: Mapping[str, tuple[str, ...]] = {
    "ep1-hw-figure": _H200,
    "ep4-left-figure": _TEXTS, "ep4-right-figure": _TEXTS, "ep4-hist-figure": _TEXTS,
    "ep6-models-fig": _TEXTS, "ep6-out-fig": _TEXTS, "ep6-wall-fig": _TEXTS, "ep6-k-fig": _TEXTS,
    "ep8-batch-fig": _H200, "ep8-split-fig": _H200, "ep8-cost-fig": _H200 + _CPU + _Q4 + _LLAMA,
    "ep8-real-tree": _TREES + _CPU, "ep8-real-mask-fig": (tree_example.ASSET,),
}
#: Bokeh plot name -> what its data files do not hold that the figure can show (said after them).
FIGURE_DATA_NOTES: Mapping[str, str] = {
    name: "the page's own texts; a text you paste is scored live and kept in no file"
    for name in ("ep4-left-figure", "ep4-right-figure", "ep4-hist-figure")
}
_SUFFIXES = ("-figure", "-fig")


def esc(text: object) -> str:
    return html.escape(str(text), quote=True)


def anchor_id(plot_name: str) -> str:
    """The anchor of the figure named ``plot_name``: ``ep5-map`` -> ``fig-ep5-map``,
    ``ep3-hist-fig`` -> ``fig-ep3-hist``."""
    base = plot_name
    for suffix in _SUFFIXES:
        if base.endswith(suffix):
            base = base[: -len(suffix)]
            break
    return f"fig-{base}"


def file_href(name: str) -> str:
    """The address of a shipped file (``pass_cost_h200.csv`` -> ``./assets/pass_cost_h200.csv``)."""
    return f"{ASSETS_HREF}/{name}"


#: The file formats a figure saves to: button label and what its accessible name says.
SAVE_FORMATS = {"png": "PNG", "svg": "SVG"}


def save_buttons_html(plot_name: str) -> str:
    """The buttons that save the plot named ``plot_name`` as each of :data:`SAVE_FORMATS`."""
    anchor = esc(anchor_id(plot_name))
    buttons = "".join(
        f'<button type="button" class="sdp-save" data-sdp-save="{kind}" data-plot="{esc(plot_name)}" '
        f'data-file="{anchor}" aria-label="Save this figure as {label}">{label}</button>'
        for kind, label in SAVE_FORMATS.items())
    return f'<span class="sdp-saves">Save: {buttons}</span>'


class FigureSaver(JSComponent):
    """Invisible; saves a figure when one of its save buttons is pressed (see the module doc)."""

    _esm = path("figure_save.js")

    def __init__(self, **params):
        params.setdefault("height", 0)
        params.setdefault("margin", 0)
        super().__init__(**params)


def figure_line_html(plot_names: list[str]) -> str:
    """The line under a pane holding the named plots: a link to each, its save buttons, and
    its data files."""
    links = [f'<a href="#{esc(anchor_id(n))}">Link to this figure</a> {save_buttons_html(n)}'
             for n in plot_names]
    files: list[str] = []
    notes: list[str] = []
    for n in plot_names:
        files += [f for f in FIGURE_DATA.get(n, ()) if f not in files]
        note = FIGURE_DATA_NOTES.get(n)
        if note and note not in notes:
            notes.append(note)
    parts = links
    if files:
        parts.append("Data: " + ", ".join(
            f'<a href="{esc(file_href(f))}" download>{esc(f.rsplit("/", 1)[-1])}</a>' for f in files)
            + "".join(f" ({esc(n)})" for n in notes)
            + f' (<a href="{DATA_HREF}">where it comes from</a>)')
    # Each part is a box of its own, so a narrow screen breaks the line between parts, not
    # inside one (no separator left at the start of a line).
    return '<p class="sdp-figline">' + "".join(f'<span class="sdp-figpart">{p}</span>' for p in parts) + "</p>"


def _plots(pane: pn.pane.Bokeh) -> list[Plot]:
    """The named plots the pane shows: its object, or those in its Bokeh layout's children (not
    every plot the object refers to: a row of buttons refers to its figure through a script)."""
    out: list[Plot] = []
    todo = [pane.object]
    while todo:
        obj = todo.pop(0)
        if isinstance(obj, tuple):  # a GridBox child: (model, row, column, ...)
            obj = obj[0]
        if isinstance(obj, Plot):
            if obj.name:
                out.append(obj)
        elif isinstance(obj, Model) and isinstance(getattr(obj, "children", None), list):
            todo.extend(obj.children)
    return out


def anchor_figures(root):
    """Give every named plot in ``root`` its anchor and put its line under its pane (once).

    Returns what to place on the page: ``root``, or for a :class:`panel.viewable.Viewer` the
    layout it made (so its plots could be reached; place that, not the Viewer, which would make
    another).
    """
    if isinstance(root, pn.viewable.Viewer):
        root = root.__panel__()
    if not isinstance(root, pn.viewable.Viewable):
        return root
    layouts = [root] if isinstance(root, pn.layout.ListLike) else []
    layouts += [o for o in root.select(pn.layout.ListLike) if o is not root]
    for layout in layouts:
        objects = list(layout.objects)
        changed = False
        for i, child in enumerate(objects):
            if not isinstance(child, pn.pane.Bokeh):
                continue
            plots = [p for p in _plots(child) if not p.html_id]
            if not plots:
                continue
            for p in plots:
                p.html_id = anchor_id(p.name)
                if theme.TOOLBAR_CSS not in p.toolbar.stylesheets:  # 32 px buttons
                    p.toolbar.stylesheets = [*p.toolbar.stylesheets, theme.TOOLBAR_CSS]
            line = pn.pane.HTML(figure_line_html([p.name for p in plots]), stylesheets=[stylesheet("page.css")],
                                sizing_mode="stretch_width", margin=(0, 10))
            objects[i] = pn.Column(child, line, sizing_mode=child.sizing_mode or "stretch_width",
                                   margin=0)
            changed = True
        if changed:
            layout.objects = objects
    return root
