"""The "Check yourself" questions at the end of an episode: predict, then let the page check.

Each question offers a few answers, one button each. The learner presses one (the guess):
the page then moves its controls to the question's setting (the state's
parameters, so its charts and numbers follow) and writes the answer computed from the
state's own numbers at that setting. Question ``i`` (from 1) carries the anchor
``exercise-i``: a link ending in ``#exercise-2`` scrolls to it (``static/exercise_link.js``).

Answers count: the first guess is kept and the question locks once its answer is shown (its
choices are disabled; *Show this setting* moves the controls back to it and says why again).
The records and the score are the page's :class:`state.answers.AnswerSheet`; the visitor's
browser keeps them in its local storage (:class:`AnswerStore`, ``static/answers.js``), so a
reload, another episode and the summary see them, and a link shared with someone else does
not carry them.

A question is any object with ``question`` (trusted HTML), ``choices`` (plain text),
``settings`` (parameter values) and ``answer(state) -> (index of the right choice,
explanation as trusted HTML)``: the page modules define them (``episodes.Exercise``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

import panel as pn
import param
from bokeh.models import CustomJS
from panel.custom import JSComponent

from .answers import (MAX_STORED_CHARS, VERSION, AnswerSheet, Score, dumps, loads,
                              question_key, series_score)
from .deferred import when_near
from .page import SUMMARY_HREF, esc, page_css, session_doc
from .resources import path, script, stylesheet

_CSS = "exercises.css"
_BUTTON_CSS = "choice_button.css"
#: The summary's section that adds up every episode's score.
SCORE_HREF = f"{SUMMARY_HREF}#your-answers"


def anchor(i: int) -> str:
    """The anchor of question ``i`` (counted from 1)."""
    return f"exercise-{i}"


def questions_of(exercises: Sequence) -> list[tuple[str, int]]:
    """Each question's key and number of choices, as :mod:`state.answers` names them."""
    return [(question_key(ex.question, ex.choices), len(ex.choices)) for ex in exercises]


class AnswerStore(JSComponent):
    """Invisible; the visitor's answers in this browser's local storage (``static/answers.js``).

    On the page's first paint the browser sends what it keeps (``loaded``: untrusted text the
    server reads with :func:`state.answers.loads`); every answer the server records comes back
    as ``saved`` and the browser merges it into what it keeps.
    """

    loaded = param.String(default="", doc="What the browser keeps, sent once (untrusted).")
    saved = param.String(default="", doc="Records to merge into the browser's store (JSON).")
    max_chars = param.Integer(default=MAX_STORED_CHARS, constant=True,
                              doc="The most characters the browser sends.")

    _esm = path("answers.js")

    def __init__(self, **params):
        params.setdefault("height", 0)
        params.setdefault("margin", 0)
        super().__init__(**params)


def question_html(i: int, exercise) -> str:
    return (f'<div class="sdp-ex-q" id="{anchor(i)}"><h3>Question {i}</h3>'
            f'<p class="sdp-lede">{exercise.question}</p></div>')


def verdict_head(exercise, picked: int, right: int) -> str:
    """Right or not, and the right answer (the choices escaped)."""
    answer = esc(exercise.choices[right])
    if picked == right:
        return f'<strong class="ok">✓ Right:</strong> {answer}.'
    return (f'<strong class="no">✗ Not quite:</strong> you said {esc(exercise.choices[picked])}; '
            f"the answer is {answer}.")


def verdict_html(exercise, picked: int, right: int, explanation: str | None) -> str:
    """What the page says once a question is answered: right or not, the right answer, and why
    (from the state), or, for an answer kept from an earlier visit, how to see why again."""
    if explanation is None:
        why = ('<span class="sdp-note">You answered this earlier in this browser; <em>Show this '
               "setting</em> moves the controls there and says why.</span>")
    else:
        why = f'{explanation} <span class="sdp-note">The controls above now show this setting.</span>'
    return f'<div class="sdp-ex-answer" role="status">{verdict_head(exercise, picked, right)} {why}</div>'


def score_html(score: Score) -> str:
    """The page's score line (empty before the first answer)."""
    if not score.answered:
        return ""
    left = score.total - score.answered
    more = f"; {left} still to answer" if left else ""
    return (f'<p class="sdp-ex-score" role="status"><strong>Your score here:</strong> {score.right} of '
            f"{score.answered} answered right at the first try{more}. Kept in this browser: the "
            f'<a href="{SCORE_HREF}">summary</a> adds up the series.</p>')


class _Question:
    """One question's widgets, bound to the state and the page's answer sheet (built per session).

    Each choice is a button: pressing one commits to that guess and checks it at once (Panel's
    radio groups always hold a choice, so they could not wait for the learner's own).
    """

    def __init__(self, state, sheet: AnswerSheet, i: int, exercise, on_record):
        self.state, self.sheet, self.i, self.exercise = state, sheet, i, exercise
        self._on_record = on_record
        css = [page_css(_CSS)]
        self.head = pn.pane.HTML(question_html(i, exercise), stylesheets=css,
                                 sizing_mode="stretch_width", margin=(0, 10))
        self.buttons = []
        for j, choice in enumerate(exercise.choices):
            b = pn.widgets.Button(label=choice, color="default", stylesheets=[stylesheet(_BUTTON_CSS)])
            b.on_click(lambda _event, j=j: self.guess(j))
            self.buttons.append(b)
        self.again = pn.widgets.Button(label="Show this setting", color="primary", variant="outline",
                                       visible=False, css_classes=["sdp-ex-again"])
        self.again.on_click(lambda _event: self.show_setting())
        self.answer = pn.pane.HTML("", visible=False, stylesheets=css, sizing_mode="stretch_width",
                                   name=f"{anchor(i)}-answer", margin=(0, 10))

    @property
    def picked(self) -> int | None:
        a = self.sheet.answer(self.i)
        return None if a is None else a.picked

    def _at_setting(self) -> tuple[int, str]:
        ex = self.exercise
        if ex.settings:
            self.state.param.update(**ex.settings)
        return ex.answer(self.state)

    def guess(self, j: int) -> None:
        """Commit to choice ``j``: move the page to the question's setting and answer there.
        A question already answered keeps its first guess (its buttons are disabled anyway)."""
        if self.sheet.locked(self.i):
            return
        with pn.io.hold():
            right, explanation = self._at_setting()
            self.sheet.record(self.i, picked=j, right=right)
            self.show(explanation)
        self._on_record()

    def show_setting(self) -> None:
        """Move the controls to the question's setting again and say why (the record stays)."""
        if not self.sheet.locked(self.i):
            return
        with pn.io.hold():
            _, explanation = self._at_setting()
            self.show(explanation)

    def show(self, explanation: str | None = None) -> None:
        """Draw the question as answered: choices closed, the guess marked, the verdict."""
        a = self.sheet.answer(self.i)
        if a is None:
            return
        for k, b in enumerate(self.buttons):
            b.color = "primary" if k == a.picked else "default"
            b.disabled = True
        self.answer.object = verdict_html(self.exercise, a.picked, a.right, explanation)
        self.answer.visible = True
        self.again.visible = True

    def panel(self) -> pn.Column:
        row = pn.FlexBox(*self.buttons, flex_wrap="wrap", sizing_mode="stretch_width",
                         name=f"{anchor(self.i)}-choices")
        return pn.Column(self.head, row, self.answer, self.again, sizing_mode="stretch_width",
                         name=f"{anchor(self.i)}-box")


class ExerciseSection:
    """The questions of one page, their answer sheet and the browser's store of them."""

    def __init__(self, state, exercises: Sequence, *, name: str):
        self.name = name
        asked = questions_of(exercises)
        self.sheet = AnswerSheet(keys=[k for k, _ in asked], sizes=[n for _, n in asked])
        self.questions = [_Question(state, self.sheet, i, ex, self._recorded)
                          for i, ex in enumerate(exercises, 1)]
        self.store = AnswerStore(name=f"{name}-answers")
        self.store.param.watch(self._restore, "loaded")
        self.score = pn.pane.HTML("", visible=False, stylesheets=[page_css(_CSS)],
                                  sizing_mode="stretch_width", name=f"{name}-score", margin=(0, 10))

    def _restore(self, event) -> None:
        """Lock the questions the browser says were answered on an earlier visit."""
        records = loads(event.new, {self.name: questions_of(q.exercise for q in self.questions)})
        done = self.sheet.restore(records.get(self.name, {}))
        with pn.io.hold():
            for i in done:
                self.questions[i - 1].show()
            self._show_score()

    def _recorded(self) -> None:
        self._show_score()
        self.store.saved = dumps(self.name, self.sheet.answers)

    def _show_score(self) -> None:
        self.score.object = score_html(self.sheet.score)
        self.score.visible = bool(self.sheet.score.answered)


def exercises_section(state, exercises: Sequence, *, name: str) -> pn.Column:
    """The episode's questions, each with a button per choice and its answer, and the score: at
    the foot of the page, built when the visitor scrolls near them (:func:`.deferred.when_near`;
    at once outside a server session). They are a large share of a page's widgets, so a page
    opens without them. The slot carries the section's ``questions``, ``sheet`` and ``store``
    once built (tests, notebooks)."""
    slots: list[pn.Column] = []
    built: list[pn.Column] = []

    def build() -> pn.Column:
        section = _section(state, exercises, name=name)
        built.append(section)
        for slot in slots:
            _expose(slot, section)
        return section

    slot = when_near(build, name=f"{name}-exercises-slot")
    slots.append(slot)
    for section in built:  # outside a session the section was built at once
        _expose(slot, section)
    doc = session_doc()
    if doc is not None:
        doc.js_on_event("document_ready", CustomJS(code=script("exercise_link.js")))
    return slot


def _expose(slot: pn.Column, section: pn.Column) -> None:
    slot.questions, slot.sheet, slot.store = section.questions, section.sheet, section.store


def _section(state, exercises: Sequence, *, name: str) -> pn.Column:
    """The questions' column itself (see :func:`exercises_section`)."""
    part = ExerciseSection(state, exercises, name=name)
    intro = pn.pane.HTML(
        '<h2 id="exercises">Check yourself</h2><p class="sdp-lede">Guess first: press the answer '
        "you expect. The page then moves its controls to the question’s setting and answers from "
        "its own numbers. Your first guess is the one that counts.</p>",
        stylesheets=[page_css(_CSS)], sizing_mode="stretch_width")
    section = pn.Column(intro, *[q.panel() for q in part.questions], part.score, part.store,
                        sizing_mode="stretch_width", name=f"{name}-exercises",
                        css_classes=["sdp-exercises"])
    section.questions = part.questions  # for tests and notebooks
    section.sheet, section.store = part.sheet, part.store
    return section


def series_html(per: Mapping[str, Score], total: Score, episodes: Mapping[str, tuple[str, str]]) -> str:
    """The summary's score: each episode's line (``episodes``: page name -> its title and the
    address of its questions) and the series' total."""
    rows = []
    for page, (title, href) in episodes.items():
        s = per.get(page, Score(0, 0, 0))
        said = (f"{s.right} of {s.answered} right at the first try"
                + (f", {s.total - s.answered} still to answer" if s.answered < s.total else "")
                if s.answered else f"{s.total} questions, none answered yet")
        rows.append(f'<tr><th scope="row"><a href="{esc(href)}">{esc(title)}</a></th><td>{said}</td></tr>')
    if total.answered:
        head = (f"<strong>The series so far:</strong> {total.right} of {total.answered} answered "
                f"right at the first try; {total.total - total.answered} of the {total.total} "
                "questions still open.")
    else:
        head = (f"No answers kept in this browser yet: each episode ends with its questions, "
                f"{total.total} in all.")
    return (f'<p class="sdp-ex-score series" role="status">{head} Your answers stay in this browser '
            "only (its local storage); nothing is sent anywhere else, and a shared link does not "
            f'carry them.</p><table class="sdp-ex-series"><tbody>{"".join(rows)}</tbody></table>')


class SeriesScore:
    """The summary's part that adds up the answers this browser keeps, with a button to forget
    them (a shared computer in a classroom). ``questions``: page name -> :func:`questions_of`;
    ``episodes``: page name -> (title, address of its questions)."""

    FORGET = "Forget my answers in this browser"

    def __init__(self, questions: Mapping[str, Sequence[tuple[str, int]]],
                 episodes: Mapping[str, tuple[str, str]], *, name: str = "series"):
        self.questions, self.episodes = dict(questions), dict(episodes)
        self.store = AnswerStore(name=f"{name}-answers")
        self.store.param.watch(self._loaded, "loaded")
        self.pane = pn.pane.HTML(self._html({}), stylesheets=[page_css(_CSS)],
                                 sizing_mode="stretch_width", name=f"{name}-score")
        self.forget = pn.widgets.Button(label=self.FORGET, visible=False,
                                        stylesheets=["@media print { :host { display: none; } }"])
        self.forget.on_click(lambda _event: self.forget_all())

    def _html(self, records) -> str:
        per, total = series_score(records, self.questions)
        return series_html(per, total, self.episodes)

    def _loaded(self, event) -> None:
        records = loads(event.new, self.questions)
        with pn.io.hold():
            self.pane.object = self._html(records)
            self.forget.visible = bool(records)

    def forget_all(self) -> None:
        """Clear this browser's store and show the empty score."""
        with pn.io.hold():
            self.store.saved = json.dumps({"v": VERSION, "pages": {}, "forget": True})
            self.pane.object = self._html({})
            self.forget.visible = False

    def panel(self) -> pn.Column:
        head = pn.pane.HTML('<h2 id="your-answers" class="sdp-ex-print-hide">Your answers</h2>',
                            stylesheets=[page_css(_CSS)], sizing_mode="stretch_width")
        return pn.Column(head, self.pane, self.forget, self.store, sizing_mode="stretch_width",
                         name="series-answers", css_classes=["sdp-ex-series-part"])
