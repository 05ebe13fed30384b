"""The "Check yourself" questions at the end of an episode: predict, then let the page check.

Each question offers a few answers, one button each. The learner presses one (the guess):
the page then moves its controls to the question's setting (the state's
parameters, so its charts and numbers follow) and writes the answer computed from the
state's own numbers at that setting. Question ``i`` (from 1) carries the anchor
``exercise-i``: a link ending in ``#exercise-2`` scrolls to it (``static/exercise_link.js``).

A question is any object with ``question`` (trusted HTML), ``choices`` (plain text),
``settings`` (parameter values) and ``answer(state) -> (index of the right choice,
explanation as trusted HTML)``: the page modules define them (``episodes.Exercise``).
"""

from __future__ import annotations

from collections.abc import Sequence

import panel as pn
from bokeh.models import CustomJS

from .page import esc, page_css, session_doc
from .resources import script

_CSS = "exercises.css"


def anchor(i: int) -> str:
    """The anchor of question ``i`` (counted from 1)."""
    return f"exercise-{i}"


def question_html(i: int, exercise) -> str:
    return (f'<div class="sdp-ex-q" id="{anchor(i)}"><h3>Question {i}</h3>'
            f'<p class="sdp-lede">{exercise.question}</p></div>')


def verdict_html(exercise, picked: int, right: int, explanation: str) -> str:
    """What the page says after Check: right or not, the right answer, and why (from the state)."""
    answer = esc(exercise.choices[right])
    if picked == right:
        head = f'<strong class="ok">✓ Right:</strong> {answer}.'
    else:
        head = (f'<strong class="no">✗ Not quite:</strong> you said {esc(exercise.choices[picked])}; '
                f"the answer is {answer}.")
    return (f'<div class="sdp-ex-answer" role="status">{head} {explanation} '
            '<span class="sdp-note">The controls above now show this setting.</span></div>')


class _Question:
    """One question's widgets, bound to the state (built per session).

    Each choice is a button: pressing one commits to that guess and checks it at once (Panel's
    radio groups always hold a choice, so they could not wait for the learner's own).
    """

    def __init__(self, state, i: int, exercise):
        self.state, self.i, self.exercise = state, i, exercise
        css = [page_css(_CSS)]
        self.head = pn.pane.HTML(question_html(i, exercise), stylesheets=css,
                                 sizing_mode="stretch_width", margin=(0, 10))
        self.buttons = []
        for j, choice in enumerate(exercise.choices):
            b = pn.widgets.Button(label=choice, button_type="default", name=f"{anchor(i)}-choice-{j}",
                                  description=f"Guess: {choice}, then see the answer")
            b.on_click(lambda _event, j=j: self.guess(j))
            self.buttons.append(b)
        self.answer = pn.pane.HTML("", visible=False, stylesheets=css, sizing_mode="stretch_width",
                                   name=f"{anchor(i)}-answer", margin=(0, 10))
        self.picked: int | None = None

    def guess(self, j: int) -> None:
        """Commit to choice ``j``: move the page to the question's setting and answer there."""
        ex = self.exercise
        self.picked = j
        with pn.io.hold():
            if ex.settings:
                self.state.param.update(**ex.settings)
            right, explanation = ex.answer(self.state)
            for k, b in enumerate(self.buttons):
                b.button_type = "primary" if k == j else "default"
            self.answer.object = verdict_html(ex, j, right, explanation)
            self.answer.visible = True

    def panel(self) -> pn.Column:
        row = pn.FlexBox(*self.buttons, flex_wrap="wrap", sizing_mode="stretch_width",
                         name=f"{anchor(self.i)}-choices")
        return pn.Column(self.head, row, self.answer, sizing_mode="stretch_width",
                         name=f"{anchor(self.i)}-box")


def exercises_section(state, exercises: Sequence, *, name: str) -> pn.Column:
    """The episode's questions, each with a button per choice and its answer."""
    questions = [_Question(state, i, ex) for i, ex in enumerate(exercises, 1)]
    intro = pn.pane.HTML(
        '<h2 id="exercises">Check yourself</h2><p class="sdp-lede">Guess first: press the answer '
        "you expect. The page then moves its controls to the question’s setting and answers from "
        "its own numbers.</p>", stylesheets=[page_css(_CSS)], sizing_mode="stretch_width")
    section = pn.Column(intro, *[q.panel() for q in questions], sizing_mode="stretch_width",
                        name=f"{name}-exercises", css_classes=["sdp-exercises"])
    section.questions = questions  # for tests and notebooks
    doc = session_doc()
    if doc is not None:
        doc.js_on_event("document_ready", CustomJS(code=script("exercise_link.js")))
    return section
