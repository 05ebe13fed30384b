"""Controls that explain themselves: the help under a group of controls, and a seed box that
says why it refused what was typed.

:func:`help_html` writes one line per control, its label and what it does with its unit,
from the state parameter's own ``doc`` (one source for the words). :class:`SeedBox` is a
text box for a seed: whatever is typed is checked with :func:`sim.seeds.parse_seed`; a
seed that is not one (``-5``, ``3.7``, ``1e12``, an empty box) is not used, and the box
says so under it and shows the seed the page still runs with.
"""

from __future__ import annotations

from collections.abc import Sequence

import panel as pn
import param

from ..sim.seeds import parse_seed
from .page import esc, page_css
from .terms import link_terms


#: The line that opens a group's help (a disclosure: the list is one tap away, and the controls
#: stay close to what they move).
HELP_SUMMARY = "What each control does"


def help_html(state: param.Parameterized, names: Sequence[str]) -> str:
    """One line per control: its label in bold, then its parameter's doc (what it does, in what
    unit), in a closed disclosure under the controls."""
    rows = "".join(f"<li><strong>{esc(state.param[n].label)}</strong>: {esc(state.param[n].doc)}</li>"
                   for n in names)
    return (f'<details class="sdp-help-box"><summary>{HELP_SUMMARY}</summary>'
            f'<ul class="sdp-help">{rows}</ul></details>')


def control_help(state: param.Parameterized, names: Sequence[str], **params) -> pn.pane.HTML:
    """:func:`help_html` as a pane, to place under the controls it describes (a glossary term
    in it linked to its entry)."""
    params.setdefault("sizing_mode", "stretch_width")
    return pn.pane.HTML(link_terms(help_html(state, names)), stylesheets=[page_css()], **params)


def seed_refused_html(text: str, reason: str, seed: int) -> str:
    """Why a typed seed was not used, and which seed the page still runs with."""
    return (f'<p class="sdp-notice sdp-small" role="alert">{esc(reason)} The page still uses seed '
            f"{seed}.</p>")


class SeedBox(pn.viewable.Viewer):
    """A text box bound to the integer seed parameter ``name`` of ``state``, with a message
    under it when a typed value is refused; ``beside`` are widgets for the same row (a "new
    run" button). Build one per session."""

    state = param.Parameter(doc="The parameterized object that owns the seed.")
    name_ = param.String(default="seed", doc="The seed parameter's name.")

    def __init__(self, state: param.Parameterized, name: str = "seed", *,
                 beside: Sequence = (), **widget_params):
        super().__init__(state=state, name_=name)
        self.beside = list(beside)
        p = state.param[name]
        widget_params.setdefault("width", 130)
        self.input = pn.widgets.TextInput(label=p.label, value=str(getattr(state, name)),
                                          **widget_params)
        self.message = pn.pane.HTML("", visible=False, stylesheets=[page_css()],
                                    sizing_mode="stretch_width", margin=(0, 10))
        self.input.param.watch(self._typed, "value")
        state.param.watch(self._changed, name)

    def _typed(self, event) -> None:
        text = event.new or ""
        try:
            seed = parse_seed(text)
        except ValueError as exc:
            self.message.object = seed_refused_html(text, str(exc), getattr(self.state, self.name_))
            self.message.visible = True
            return
        self.message.visible = False
        if str(seed) != text:
            self.input.value = str(seed)  # the clean form ("007" -> "7")
        setattr(self.state, self.name_, seed)

    def _changed(self, event) -> None:
        self.message.visible = False
        if self.input.value != str(event.new):
            self.input.value = str(event.new)

    def __panel__(self):
        return pn.Column(pn.Row(self.input, *self.beside), self.message, margin=0,
                         sizing_mode="stretch_width")
