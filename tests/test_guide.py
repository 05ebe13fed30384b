"""The teacher's guide and what it stands on: every episode's objectives (also the page's first
line), the misconception it targets and what the page shows instead (checked against the
numbers), discussion prompts, the two class plans (timed from the pages, the short one the
index's short path), the answer key (the page's own answers), the navigation along the short
path, and the served docs the guide links to. No browser; the last tests fetch the site."""

from __future__ import annotations

import html
import re
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np
import pytest

from specdec_playable.data import hardware, measured
from specdec_playable.data.recorded import recorded_runs
from specdec_playable.episodes import EPISODES, neighbours
from specdec_playable.app.site import episode_times, teaching
from specdec_playable.kit.episode import KEY_SEED
from specdec_playable.shipped import doc_names
from specdec_playable.sim import theory
from specdec_playable.episodes.ep1.state import WritingVsChecking
from specdec_playable.episodes.ep2.state import Relay, TOKENS
from specdec_playable.episodes.ep3.state import QualityDial
from specdec_playable.episodes.ep5.state import BreakEvenMap
from specdec_playable.episodes.ep8.state import BusyAndTrees
from specdec_playable.kit.page import SUMMARY_HREF, nav_html, objectives_html
from specdec_playable.kit.site import course, guide
from specdec_playable.kit.site.docs import doc_page, heading_id, render

PKG = Path(__file__).resolve().parents[1] / "src" / "specdec_playable"


def plain(markup: str) -> str:
    markup = re.sub(r"</?a\b[^>]*>", "", markup)  # a glossary link inside a sentence is no gap
    text = re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", markup))).strip()
    return re.sub(r" ([,.;:])", r"\1", text)  # a link that ends before a comma


@pytest.fixture(scope="module")
def times():
    return episode_times()


@pytest.mark.parametrize("ep", EPISODES, ids=lambda e: e.slug)
def test_every_episode_has_objectives_a_misconception_and_prompts(ep):
    t = next(t for t in teaching() if t.number == ep.number)
    assert 2 <= len(t.objectives) <= 4
    for o in t.objectives:  # each completes "After this episode you can ..."
        assert o[0].islower() and not o.endswith(".") and len(o.split()) >= 5, o
    belief, shown = t.misconception
    assert belief.endswith(".") and shown.endswith(".") and belief != shown
    assert 2 <= len(t.discuss) <= 3 and all(p.endswith("?") or p.endswith(".") for p in t.discuss)
    assert any("?" in p for p in t.discuss)


@pytest.mark.parametrize("ep", EPISODES, ids=lambda e: e.slug)
def test_every_page_opens_with_its_objectives_in_one_line(ep):
    root = ep.page()
    header = next(p for p in root.select() if getattr(p, "name", "") == f"ep{ep.number}-header")
    markup = "".join(str(getattr(o, "object", "")) for o in header.select())
    line = objectives_html(ep.objectives)
    assert line in markup or plain(line) in plain(markup)
    assert markup.count('class="sdp-objectives"') == 1
    assert plain(line).startswith("After this episode you can ") and plain(line).endswith(".")


def test_page_modules_stay_short():
    for path in sorted((PKG / "episodes").glob("ep*.py")):
        assert len(path.read_text().splitlines()) <= 200, path.name


def test_the_45_minute_plan_is_the_short_path_at_the_measured_times(times):
    plan = course.short_class(times)
    by = {t.number: t.minutes for t in times}
    assert plan.episodes == course.short_path(times) == course.SHORT_PATH
    assert plan.total == course.CLASS_MINUTES == 45
    eps = [s for s in plan.steps if s.kind == "episode"]
    assert [s.episode for s in eps] == list(plan.episodes)
    assert all(s.minutes == by[s.episode] for s in eps)
    assert plan.steps[0].kind == "open" and plan.steps[-1].kind == "close"
    assert all(s.minutes > 0 for s in plan.steps)


def test_the_90_minute_plan_takes_the_episodes_in_order_with_time_to_discuss_each(times):
    plan = course.long_class(times)
    by = {t.number: t.minutes for t in times}
    assert plan.total == course.LONG_CLASS_MINUTES == 90
    n = len(plan.episodes)
    assert plan.episodes == tuple(sorted(by))[:n] and n >= len(course.SHORT_PATH)
    discuss = {s.episode: s.minutes for s in plan.steps if s.kind == "discuss"}
    assert set(discuss) == set(plan.episodes)
    assert min(discuss.values()) >= course.DISCUSS_MINUTES
    # The next episode in order would not have fitted with its discussion and the slack.
    if n < len(by):
        used = (course.OPEN_MINUTES + course.CLOSE_MINUTES + course.slack_minutes(90)
                + sum(by[e] + course.DISCUSS_MINUTES for e in plan.episodes))
        assert used + by[n + 1] + course.DISCUSS_MINUTES > 90


def test_a_plan_that_overruns_says_so_by_its_total():
    times = [course.EpisodeTime(1, 6000, 1), course.EpisodeTime(2, 4000, 1)]  # 32 and 22 minutes
    plan = course.class_plan(times, (1, 2), 45)
    assert plan.total > 45 and not [s for s in plan.steps if s.kind == "discuss"]
    markup = guide.plan_html(plan, teaching(), heading="x", plan_id="p", rest=times)
    assert f"this plan runs {plan.total}" in plain(markup)


def test_the_guide_shows_both_plans_every_episode_and_every_answer(times):
    markup = guide.guide_html(teaching(), times)
    text = plain(markup)
    for plan, pid in ((course.short_class(times), "plan-45"), (course.long_class(times), "plan-90")):
        assert f'id="{pid}"' in markup
        start = 0
        for step in plan.steps:
            assert f"{start}–{start + step.minutes} {step.minutes} " in text
            start += step.minutes
        assert f"{plan.total} in all" in text
    for t in teaching():
        assert f'id="guide-ep{t.number}"' in markup and f'id="answers-ep{t.number}"' in markup
        for o in t.objectives + t.discuss + t.misconception:
            assert plain(html.escape(o)) in text
        for i, a in enumerate(t.answers, 1):
            assert f"Answer: {a.choices[a.right]}." in text and plain(a.explanation) in text
    assert f'href="{guide.SERVING_HREF}"' in markup


@pytest.mark.parametrize("ep", EPISODES, ids=lambda e: e.slug)
def test_the_answer_key_is_the_pages_own_answer(ep):
    t = next(t for t in teaching() if t.number == ep.number)
    assert len(t.answers) == len(ep.questions)
    cls = ep.state
    for ex, key in zip(ep.questions, t.answers):
        kw = {"rng": KEY_SEED} if "rng" in cls.__init__.__code__.co_varnames else {}
        s = cls(**kw)
        s.param.update(**ex.settings)
        right, why = ex.answer(s)
        assert (key.question, key.choices, key.right) == (ex.question, ex.choices, right)
        assert key.explanation == why
        # The right choice does not hang on the seed (the guide computes it once).
        if kw:
            other = cls(rng=KEY_SEED + 7)
            other.param.update(**ex.settings)
            assert ex.answer(other)[0] == right


def test_what_each_page_shows_against_each_misconception_holds():
    # 1: checking N tokens takes one pass, for any N.
    for n in (1, 2, 8, 16):
        c = WritingVsChecking(n_tokens=n).comparison
        assert c.parallel_ms == WritingVsChecking().big_pass_ms
    # 2: the relay's text is the big model's, whatever q and k.
    for q, k, seed in ((0.0, 4, 1), (0.3, 8, 2), (0.9, 2, 3), (1.0, 12, 4)):
        r = Relay(q=q, k=k, seed=seed).result
        assert r.output == tuple(TOKENS)
    # 3: an interior best k, and a long, costly, weak draft below 1x.
    d = QualityDial()
    by_k = theory.expected_speedup(d.q, np.arange(1, 17), d.c)
    assert 1 < int(np.argmax(by_k)) + 1 < 16 and by_k[-1] < by_k.max()
    assert theory.expected_speedup(0.3, 16, 0.3) < 1
    # 4: the same draft is kept far more often on some measured texts than on others.
    alphas = [m["alpha"] for m in measured.genre_means().values()]
    assert max(alphas) > 2 * min(alphas)
    # 5: at the page's cost every curve drops below 1x for a weak draft; a dearer step moves it up.
    m = BreakEvenMap()
    for k in m.curve_ks:
        assert theory.expected_speedup(0.0, k, m.c) < 1
        assert theory.break_even_q(k, 2 * m.c) > theory.break_even_q(k, m.c)
    # 7: a verify pass over many positions costs more than a step on a CPU (the shipped measurement:
    # a start-up calibration on a loaded machine may read flat up to 16); most recorded drafts do
    # not pay, prompt lookup on the copy task does.
    shipped = hardware.load_cpu_pass_costs()
    assert shipped.at(17) > 1.2 * shipped.at(1)
    runs = recorded_runs()
    assert sum(c.fair.verdict == "faster" for c in runs.values()) < len(runs) / 2
    assert runs[("repeat", "lookup")].fair.verdict == "faster"
    # 8: past some batch size speculating is slower.
    assert BusyAndTrees(rng=0).break_even_batch is not None


def test_next_follows_the_short_path_and_offers_the_next_episode_in_number(times):
    path = course.short_path(times)
    assert path == (1, 2, 3, 5)
    n, walked = path[0], [path[0]]
    while True:
        _, following, _ = neighbours(n)
        if following is None or following.number not in path:
            break
        walked.append(following.number)
        n = following.number
    assert tuple(walked) == path
    previous, following, deeper = neighbours(3)
    assert (previous.number, following.number, deeper.number) == (2, 5, 4)
    nav = nav_html(previous, following, deeper)
    assert f'href="./{following.slug}" rel="next"' in nav and "next on the short path" in nav
    assert f'href="./{deeper.slug}"' in nav and "Or deeper, Episode 4" in nav
    for n in (1, 2, 4, 5, 6, 7, 8):  # elsewhere the numbers lead, with no second link
        assert neighbours(n)[2] is None
    assert neighbours(4)[1].number == 5 and neighbours(5)[1].number == 6
    # The short path's last episode leads on to the summary it ends on; no other does.
    end = nav_html(*neighbours(path[-1]), path_ends=True)
    assert f'<a href="{SUMMARY_HREF}">The short path ends here: the summary →</a>' in end
    assert "short path ends" not in nav_html(*neighbours(3))
    for ep in EPISODES:
        page_nav = ep.make_page().objects[0].object
        assert ("The short path ends here" in page_nav) == (ep.number == path[-1]), ep.number


def test_docs_render_with_githubs_heading_ids():
    assert "serving.md" in doc_names()
    assert heading_id("`specdec-playable serve`") == "specdec-playable-serve"
    assert heading_id("Serving a class") == "serving-a-class"
    out = render("# T\n\n## A b\n\n## A b\n\n<script>alert(1)</script>\n\n| a | b |\n|---|---|\n| 1 | 2 |\n")
    assert 'id="a-b"' in out and 'id="a-b-1"' in out and "<table>" in out
    assert "<script>" not in out and "&lt;script&gt;" in out
    page = doc_page("serving.md")
    anchor = guide.SERVING_HREF.split("#")[1]
    assert f'id="{anchor}"' in page and '<meta name="viewport"' in page


def _get(url: str, method: str = "GET"):
    req = urllib.request.Request(url, method=method)
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


def test_the_guide_and_the_docs_are_served(site):
    status, _, body = _get(f"{site.url}/guide")
    assert status == 200 and b"Traceback" not in body
    for name in doc_names():
        status, headers, body = _get(f"{site.url}/docs/{name}")
        assert status == 200 and headers["Content-Type"].startswith("text/html"), name
        assert headers["X-Content-Type-Options"] == "nosniff"
    status, headers, body = _get(f"{site.url}/docs/serving.md", "HEAD")
    assert status == 200 and body == b""
    for path in ("/docs/", "/docs/nothing.md", "/docs/../pyproject.toml", "/docs/%2e%2e/README.md",
                 "/docs/serving.md/x", "/docs/.hidden.md"):
        status, _, body = _get(site.url + path)
        assert status == 404, path
        assert b"Traceback" not in body
    for method in ("POST", "PUT", "DELETE"):
        assert _get(f"{site.url}/docs/serving.md", method)[0] == 405


# --- what students need first, model answers, slack, and how many students a server held ------

def test_both_plans_keep_slack_at_the_measured_times(times):
    for plan, minutes in ((course.short_class(times), 45), (course.long_class(times), 90)):
        # A tenth of the class, at least 3 minutes: 4 of 45, 9 of 90.
        assert course.slack_minutes(minutes) == max(3, minutes // 10)
        assert plan.slack == course.slack_minutes(minutes), (minutes, plan.steps)
        assert plan.total == minutes and plan.steps[-2].kind == "slack"
    markup = guide.guide_html(teaching(), times)
    for plan in (course.short_class(times), course.long_class(times)):
        assert f"It keeps {plan.slack} minutes of slack." in plain(markup)
    # A class whose episodes leave no time keeps none, and says so.
    tight = course.class_plan([course.EpisodeTime(1, 8000, 0)], (1,), 45)
    assert tight.slack == 0 and "It keeps no slack." in plain(
        guide.plan_html(tight, teaching(), heading="x", plan_id="p", rest=()))


def test_every_discussion_prompt_has_its_model_answer_in_the_guide(times):
    from specdec_playable.kit.site import discussion

    text = plain(guide.guide_html(teaching(), times))
    assert set(discussion.MODEL_ANSWERS) == {e.number for e in EPISODES}
    for t in teaching():
        pairs = discussion.MODEL_ANSWERS[t.number]
        assert len(pairs) == len(t.discuss), t.number
        for i, (prompt, (opening, _)) in enumerate(zip(t.discuss, pairs)):
            assert prompt.startswith(opening), (t.number, i, opening)
            answer = discussion.model_answer(t.number, i)
            assert len(answer.split()) >= 25 and answer.endswith("."), (t.number, i)
            assert f"{plain(html.escape(prompt))} A model answer: {plain(html.escape(answer))}" in text


def test_the_model_answers_quote_their_numbers_right():
    from specdec_playable.data import tree_table
    from specdec_playable.data.recorded import recorded_runs
    from specdec_playable.kit.site import discussion as d

    # Episode 3: the best k at q = 0.8, c = 0.05, and the knob that is worth more at its setting.
    ks = np.arange(1, 17)
    s = theory.expected_speedup(0.8, ks, 0.05)
    assert f"the best k is {int(np.argmax(s)) + 1}, at {s.max():.2f}×" in d.model_answer(3, 0)
    better, cheaper = theory.expected_speedup(0.7, 4, 0.2), theory.expected_speedup(0.6, 4, 0.1)
    assert ("cheaper guesses" if cheaper > better else "better guesses") in d.model_answer(3, 1)
    # Episode 4: the page's two texts, and the title's verdict from the measured means.
    means = measured.genre_means()
    assert f"{means['py-account']['alpha']:.0%} of the Python" in d.model_answer(4, 0)
    boiler = max(m["alpha"] for m in means.values() if m["kind"] in ("code", "json", "letter"))
    assert ("it holds" in d.model_answer(4, 2)) == (boiler > means["poem-kettle"]["alpha"])
    # Episode 5: the break-even and the binomial tail of the misses.
    assert f"q = {theory.break_even_q(4, 0.15):.2f}" in d.model_answer(5, 1)
    tail4 = 1 - sum(__import__("math").comb(20, m) * 0.05 ** m * 0.95 ** (20 - m) for m in range(4))
    assert tail4 < 0.05 and f"4 or more would happen by chance only {tail4:.1%}" in d.model_answer(5, 2)
    # Episode 7: the recorded runs that were faster.
    runs = recorded_runs()
    faster = sum(c.fair.verdict == "faster" for c in runs.values())
    assert f"of the {len(runs)} recorded pairs of a task and a draft, {faster} were" in d.model_answer(7, 1)
    # Episode 8: where a tree beat the chain and where it did not, as measured.
    table = tree_table.load_tree_vs_chain()
    answer = d.model_answer(8, 1)
    for n in sorted(tree_table.pooled(table)):
        chain, best = tree_table.best_tree(table, n)
        if f"at {n} positions the best tree" in answer:
            assert table.tokens_per_pass[best] > table.tokens_per_pass[chain]
        if f"at {n} positions the chain's" in answer:
            assert table.tokens_per_pass[best] <= table.tokens_per_pass[chain]


def test_the_guide_says_what_students_need_and_what_each_episode_builds_on(times):
    import panel as pn
    from bokeh.models import LogAxis
    from specdec_playable.kit.site import discussion

    markup = guide.guide_html(teaching(), times)
    assert 'id="before"' in markup and 'href="#before"' in markup
    for p in discussion.PREREQUISITES:
        assert plain(html.escape(p)) in plain(markup)
    for n, before in discussion.BUILDS_ON.items():
        assert all(b < n for b in before), n
    assert set(discussion.BUILDS_ON) == {e.number for e in EPISODES}
    assert "Builds on nothing before it" in plain(markup)
    # "A logarithmic axis (Episodes 1 and 8)": their pages draw one.
    from bokeh.document import Document

    pn.extension()
    for ep in EPISODES:
        if ep.number in (1, 8):
            doc = Document()
            doc.add_root(ep.page().get_root(doc))
            assert list(doc.select({"type": LogAxis})), ep.number


def test_the_class_line_is_the_class_benchmarks_own_figures():
    from specdec_playable.data.classroom import load_class_run

    run = load_class_run()
    line = plain(guide.class_line())
    assert run.finished / run.workers == run.per_process
    assert (f"{run.visitors} students pressed Run on Episode 7 at once and every one of the "
            f"{run.visitors} runs finished within {run.class_s:.0f} s") in line
    assert (f"one model process held about {run.per_process:.0f} students and one machine with "
            f"{run.workers} of them held {run.finished}") in line
    assert f"a line of {run.line} runs" in line and line.count(". ") == 0
    # The record is the run the performance notes report.
    perf = (PKG.parents[1] / "docs" / "performance.md").read_text()
    section = perf[perf.index("### A class presses Run"):]
    section = section[:section.index("\n## ")]
    assert run.date[:10] in section and run.command in section
    assert f"{run.workers} workers; {run.visitors} visitors press Run" in plain(section)
    assert (f"| visitors | {run.visitors}: {run.finished} finished, {run.refused} refused"
            in section)


def test_the_class_day_checklist_quotes_the_pages_own_words():
    """The checklist's quotes are what the pages show: the status line's words for a model loading
    and ready (``kit.modelstatus``), the lost-connection banner's first sentence (its script)."""
    from specdec_playable.kit.modelstatus import status_words
    from specdec_playable.runtime import service

    markup = guide.class_day_html()
    text = plain(markup)
    for state in ("loading", "ready"):
        assert status_words(service.LoadState(state, 9 * 3600), installed=True) in text
    js = (PKG / "kit" / "static" / "connection.js").read_text()
    banner = guide._banner_words()
    assert banner.endswith(".") and banner in js and banner in text
    assert "Reload the page" in js and "Reload the page" in text
    assert 'id="class-day"' in markup and 'href="#class-day"' in guide.guide_html(teaching(), ())


def test_each_plan_says_how_many_minutes_the_teacher_leads_from_its_steps(times):
    for plan in (course.short_class(times), course.long_class(times)):
        lead = sum(s.minutes for s in plan.steps if s.kind in ("open", "discuss", "close"))
        work = sum(s.minutes for s in plan.steps if s.kind == "episode")
        words = plain(guide.plan_html(plan, teaching(), heading="x", plan_id="p", rest=times))
        assert f"You lead {lead} of its {plan.minutes} minutes" in words
        assert f"up to {plan.slack} more in the slack" in words
        assert f"students work through the episodes the other {work}." in words
        assert lead + work + plan.slack == plan.total
