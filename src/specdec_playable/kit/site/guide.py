"""The teacher's guide (``/guide``): what students need first; for each episode what a student can
do after it, the episodes it builds on, the belief it sets out to correct and questions to discuss,
each with a model answer (:mod:`.discussion`); a 45-minute and a 90-minute class plan timed from
the pages, each keeping slack; every "Check yourself" question with its answer; and how to serve a
class, with how many students one model process and one machine held in the class benchmark
(:mod:`...data.classroom`).

The plans come from :mod:`.course` (the episodes' measured times and the index's short path),
the answers from :meth:`kit.episode.Episode.answer_key` (the page's own answer at the question's
setting): the site passes both in (``app/site.py``), so this module builds no page and runs no state.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from pathlib import Path

import panel as pn

from . import course, discussion
from .index import SITE_TITLE
from ...data.classroom import load_class_run
from ..episode import Teaching
from ..page import GLOSSARY_HREF, SUMMARY_HREF, esc, site_shell

#: The serving guide's section on classes (``docs/serving.md``, served by the site).
SERVING_HREF = "./docs/serving.md#serving-a-class"
DOCS_HREF = "./docs/serving.md"


def _episode_link(t: Teaching) -> str:
    return f'<a href="./{esc(t.slug)}">Episode {t.number}: {esc(t.title)}</a>'


def _step_html(step: course.PlanStep, by: dict[int, Teaching]) -> str:
    t = by.get(step.episode) if step.episode is not None else None
    if step.kind == "open":
        return ("Open the <a href=\"./\">index</a> with the question of the day: can a model check a "
                "text faster than it can write it?")
    if step.kind == "episode" and t is not None:
        return (f"{_episode_link(t)}: read, do its “Try this”, answer its questions "
                f'(<a href="#guide-ep{t.number}">objectives and prompts</a>)')
    if step.kind == "discuss" and t is not None:
        return f"Discuss Episode {t.number}: one of <a href=\"#guide-ep{t.number}\">its prompts</a>"
    if step.kind == "discuss":
        return ("Discuss: one prompt from each episode (below), and the questions most of the class "
                "got wrong")
    if step.kind == "slack":
        return ("Slack, kept free: for a slow start, a page that loads slowly or a question that "
                "runs long. If the class is on time, discuss one prompt of the episodes "
                '(<a href="#episodes">below</a>, each with a model answer)')
    return (f'Close on the <a href="{SUMMARY_HREF}">summary</a>: the formulas, the worked example, '
            "and each student's series score under “Your answers”")


def plan_html(plan: course.ClassPlan, teaching: Sequence[Teaching], *, heading: str,
              plan_id: str, rest: Sequence[course.EpisodeTime]) -> str:
    """One class plan as a table of steps with their minutes and the minute each starts at."""
    by = {t.number: t for t in teaching}
    rows, start = [], 0
    for step in plan.steps:
        rows.append(f'<tr><td class="n">{start}–{start + step.minutes}</td>'
                    f'<td class="n">{step.minutes}</td><td>{_step_html(step, by)}</td></tr>')
        start += step.minutes
    over = ("" if plan.total <= plan.minutes else
            f" The episodes alone take longer than {plan.minutes} minutes: this plan runs {plan.total}.")
    free = (f" It keeps {plan.slack} minutes of slack." if plan.slack else
            " It keeps no slack.") + _talk_words(plan)
    left = [t for t in rest if t.number not in plan.episodes]
    after = ("" if not left else
             f'<p class="sdp-small">Not in this class, for homework or a second session: '
             f'{", ".join(f"Episode {t.number}" for t in left)} '
             f"(about {sum(t.minutes for t in left)} minutes).</p>")
    return (f'<h3 id="{esc(plan_id)}">{esc(heading)}</h3>'
            '<div class="sdp-hscroll"><table class="sdp-plan"><thead><tr><th>minute</th>'
            '<th>minutes</th><th>step</th></tr></thead>'
            f'<tbody>{"".join(rows)}</tbody><tfoot><tr><td></td><td class="n">{plan.total}</td>'
            f"<td>in all</td></tr></tfoot></table></div>"
            f'<p class="sdp-small">Episodes, in order: {", ".join(str(n) for n in plan.episodes)}.'
            f"{free}{over}</p>{after}")


#: The steps the teacher leads (talks, or leads the discussion); students work through the episodes.
TEACHER_STEPS = {"open": "the opening", "discuss": "the discussions", "close": "the close"}


def _talk_words(plan: course.ClassPlan) -> str:
    """How many of the plan's minutes the teacher leads, from its steps: the opening, the
    discussions and the close, and the slack where the class is on time."""
    parts: dict[str, int] = {}
    for s in plan.steps:
        if s.kind in TEACHER_STEPS:
            parts[TEACHER_STEPS[s.kind]] = parts.get(TEACHER_STEPS[s.kind], 0) + s.minutes
    talk = sum(parts.values())
    listed = ", ".join(f"{name} {m}" for name, m in parts.items())
    slack = (f", and up to {plan.slack} more in the slack if the class is on time"
             if plan.slack else "")
    return (f" You lead {talk} of its {plan.minutes} minutes ({listed}){slack}; students work "
            f"through the episodes the other {plan.total - talk - plan.slack}.")


def episode_html(t: Teaching, time: course.EpisodeTime | None, on_path: bool) -> str:
    """One episode's objectives, misconception and discussion prompts."""
    when = "" if time is None else f"{time.minutes} minutes · "
    where = "on the short path" if on_path else "goes deeper"
    objectives = "".join(f"<li>{esc(o)}</li>" for o in t.objectives)
    belief, shown = t.misconception
    prompts = "".join(f"<li>{esc(p)}{_model_answer_html(t.number, i, p)}</li>"
                      for i, p in enumerate(t.discuss))
    before = discussion.BUILDS_ON.get(t.number, ())
    builds = (f'<p class="sdp-small">Builds on {_episodes_words(before)}.</p>' if before else
              '<p class="sdp-small">Builds on nothing before it: start here.</p>')
    return (f'<section class="sdp-guide-ep" aria-labelledby="guide-ep{t.number}">'
            f'<h3 id="guide-ep{t.number}">{_episode_link(t)}</h3>'
            f'<p class="sdp-small">{when}{where} · <a href="#answers-ep{t.number}">its answers</a></p>'
            f"{builds}<p><strong>After this episode a student can</strong></p><ul>{objectives}</ul>"
            f"<p><strong>The misconception it targets:</strong> “{esc(belief)}” "
            f"<strong>What the page shows instead:</strong> {esc(shown)}</p>"
            f"<p><strong>To discuss</strong></p><ul>{prompts}</ul></section>")


def _episodes_words(numbers) -> str:
    links = [f'<a href="#guide-ep{n}">Episode {n}</a>' for n in numbers]
    return links[0] if len(links) == 1 else ", ".join(links[:-1]) + " and " + links[-1]


def _model_answer_html(number: int, index: int, prompt: str) -> str:
    """The model answer under a prompt, where :mod:`.discussion` holds one for it (its opening
    words must be the prompt's)."""
    pairs = discussion.MODEL_ANSWERS.get(number, ())
    if index >= len(pairs) or not prompt.startswith(pairs[index][0]):
        return ""
    return (f'<p class="sdp-small"><strong>A model answer:</strong> '
            f"{esc(discussion.model_answer(number, index))}</p>")


def prerequisites_html() -> str:
    items = "".join(f"<li>{esc(p)}</li>" for p in discussion.PREREQUISITES)
    return (f'<h2 id="before">Before the class</h2><p class="sdp-lede">Students need</p>'
            f"<ul class=\"sdp-prereq\">{items}</ul><p class=\"sdp-small\">Each episode below says which earlier ones it "
            "builds on.</p>")


def class_line() -> str:
    """How many students one model process and one machine held in the class benchmark, from its
    figures (trusted HTML)."""
    run = load_class_run()
    per = run.per_process
    per_words = f"{per:.0f}" if per == int(per) else f"{per:.1f}"
    ended = (f"every one of the {run.visitors} runs finished" if run.all_finished else
             f"{run.finished} of the {run.visitors} runs finished and {run.refused} were refused")
    return (f"In the class benchmark ({esc(run.date[:10])}, a {run.cpus}-core machine) one model "
            f"process held about {per_words} students and one machine with {run.workers} of them held "
            f"{run.finished}: {run.visitors} students pressed Run on Episode 7 at once and {ended} "
            f"within {run.class_s:.0f} s, each process taking its runs in turn (a larger class "
            f"waits in a line of {run.line} runs, then is refused).")


#: Where the connection banner's words live (read, not copied, so the checklist quotes the page).
CONNECTION_JS = "static/connection.js"


@functools.cache
def _banner_words() -> str:
    """The first sentence of the banner a page shows when its connection to the server drops
    (read once)."""
    js = (Path(__file__).resolve().parents[1] / CONNECTION_JS).read_text(encoding="utf-8")
    found = re.search(r"text\.textContent = '([^']+?\.)", js)
    return found.group(1) if found else "The connection to the server was lost."


def class_day_html() -> str:
    """A class-day checklist: what to start, what to check, and what each sign a student may see
    means, quoting the pages' own words (the status line, the lost-connection banner, a failed
    run, a queued run)."""
    from ..modelstatus import status_words
    from ...runtime import service as interface

    ready = status_words(interface.LoadState("ready", 9 * 3600), installed=True)
    loading = status_words(interface.LoadState("loading", 9 * 3600), installed=True)
    items = [
        ("Before the class", "start the server (<code>specdec-playable serve</code>, with the "
         f'workers the <a href="{SERVING_HREF}">serving guide</a> sizes for a class) a few minutes '
         "early, and open the summary or Episode 7 once: the line under the navigation says, for "
         f"example, “{esc(loading)}” while the model loads and “{esc(ready)}” when runs can "
         "start."),
        ("A page opens slowly", "when a class opens pages at once, the server builds them one "
         "after another, so some take several seconds longer to arrive. Wait rather than reload: "
         "a reload asks for the page to be built again."),
        ("A page stops answering", f"a bar across the top says “{esc(_banner_words())}” with a "
         "<em>Reload the page</em> button: the server restarted or the network dropped. Reloading "
         "keeps the page's settings (they are in its address); a student's answers are kept in "
         "their browser."),
        ("A run fails", "Episode 7 says why in plain words (for example that the model process "
         "stopped answering) and to press Run again: a fresh model process takes over if one "
         "died."),
        ("A run waits", "on Episode 7 a run that waits for a free model process says its place in "
         "line and an estimate of when it starts."),
    ]
    rows = "".join(f"<li><strong>{esc(a)}:</strong> {b}</li>" for a, b in items)
    return (f'<h3 id="class-day">A class-day checklist</h3><ul class="sdp-checklist">{rows}</ul>')


def answers_html(t: Teaching) -> str:
    """An episode's questions, each with its choices, the right one and the page's explanation."""
    items = []
    for i, a in enumerate(t.answers, 1):
        choices = " · ".join(esc(c) for c in a.choices)
        items.append(f'<li><p><strong>Question {i}.</strong> {a.question}</p>'
                     f'<p class="sdp-small">Choices: {choices}.</p>'
                     f'<p><strong>Answer: {esc(a.choices[a.right])}.</strong> {a.explanation}</p></li>')
    return (f'<h3 id="answers-ep{t.number}">Episode {t.number}</h3>'
            f'<ol class="sdp-answers">{"".join(items)}</ol>')


def guide_html(teaching: Sequence[Teaching], times: Sequence[course.EpisodeTime]) -> str:
    """The guide's body (trusted HTML: package text, escaped titles, computed numbers)."""
    by_time = {t.number: t for t in times}
    path = set(course.short_path(times)) if times else set()
    plans = ""
    if times:
        plans = (plan_html(course.short_class(times), teaching, plan_id="plan-45", rest=times,
                           heading=f"A {course.CLASS_MINUTES}-minute class: the short path")
                 + plan_html(course.long_class(times), teaching, plan_id="plan-90", rest=times,
                             heading=f"A {course.LONG_CLASS_MINUTES}-minute class"))
    episodes = "".join(episode_html(t, by_time.get(t.number), t.number in path) for t in teaching)
    answers = "".join(answers_html(t) for t in teaching)
    return f"""
<p class="sdp-kicker">{esc(SITE_TITLE)} · Teacher's guide</p>
<h1 class="sdp-title">Teaching with it: a guide for instructors</h1>
<p class="sdp-lede">What each episode teaches, the belief it sets out to correct and questions to
discuss, each with a model answer; what students need first; two class plans; the answer to every
“Check yourself” question; and how to serve the site to a class. Students need only a browser; each episode page opens with its objectives in one line.</p>
<nav class="sdp-toc" aria-label="On this page"><a href="#before">Before the class</a>
<a href="#plans">Class plans</a>
<a href="#episodes">The episodes</a><a href="#answers">Answers</a><a href="#serving">Serving the class</a>
<a href="#class-day">Class-day checklist</a></nav>
{prerequisites_html()}
<h2 id="plans">Class plans</h2>
<p class="sdp-lede">Each episode's time is measured from its page, as on the index: its words at
{course.WORDS_PER_MINUTE} a minute plus {course.MINUTES_PER_STEP} minutes per “Try this” step,
rounded up. Each plan keeps a tenth of the class free (at least {course.SLACK_MINUTES} minutes) as
slack before the close. The first column is the minute each step starts and ends at.</p>
{plans}
<h2 id="episodes">The episodes</h2>
{episodes}
<h2 id="answers">Answers to the questions</h2>
<p class="sdp-lede">Each answer is what the page itself says when a student presses a choice: the page
moves its controls to the question's setting and computes the answer there. Here it is computed the
same way on a fresh copy of the page; where the explanation quotes a simulation or a sample (measured
rounds, drawn tokens) it is this copy's run, and a student's page shows its own run's numbers.
A student's first choice counts, and the summary adds up the series.</p>
{answers}
<h2 id="serving">Serving the class</h2>
<p class="sdp-lede">{class_line()}</p>
{class_day_html()}
<p class="sdp-lede">The <a href="{SERVING_HREF}">serving guide's section for a class</a> says what
one process and several behind nginx held when a class was measured; the rest of
<a href="{DOCS_HREF}">docs/serving.md</a> says how to start the server, run the real model, embed the
pages in a course site and export them as static files.</p>
<p class="sdp-lede">Answers are kept in each student's own browser (its local storage), never on the
server: a student sees their score at the end of each episode and for the series on the
<a href="{SUMMARY_HREF}#your-answers">summary</a>, and a shared computer's answers are cleared there
with <em>Forget my answers in this browser</em>. A link a student shares carries the page's settings,
not their answers. The <a href="{GLOSSARY_HREF}">glossary</a> defines every term the pages use.</p>
"""


def guide_page(teaching: Sequence[Teaching], times: Sequence[course.EpisodeTime] = ()) -> pn.Column:
    """The teacher's guide, for one session (``times`` empty: no class plans)."""
    return site_shell(guide_html(teaching, times), "course.css", "guide.css", name="guide")
