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
from specdec_playable.kit.page import nav_html, objectives_html
from specdec_playable.kit.site import course, guide
from specdec_playable.kit.site.docs import doc_page, heading_id, render

PKG = Path(__file__).resolve().parents[1] / "src" / "specdec_playable"


def plain(markup: str) -> str:
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
    # The next episode in order would not have fitted with its discussion.
    if n < len(by):
        used = course.OPEN_MINUTES + course.CLOSE_MINUTES + sum(by[e] + course.DISCUSS_MINUTES
                                                                 for e in plan.episodes)
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
