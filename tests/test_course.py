"""State tier: the index's times and short path, and the summary's sentences and links.

The times are recomputed here from each page's own words and "Try this" steps, and the index's
sentences from those times; every number in the summary is recomputed from the theory or the
shipped measurement it comes from, and every summary link is checked by its episode's own URL
check (no value clamped or ignored). No browser.
"""

from __future__ import annotations

import math
import re
from urllib.parse import parse_qsl, urlsplit

import panel as pn
import pytest

from specdec_playable.data import hardware, measured
from specdec_playable.episodes import EPISODES
from specdec_playable.app import site
from specdec_playable.sim import theory
from specdec_playable.kit.site import course, index, summary
from specdec_playable.kit.urlstate import read_query

from test_claims import number, plain


@pytest.fixture(scope="module", autouse=True)
def _panel():
    pn.extension()


@pytest.fixture(scope="module")
def times():
    # episode_times is computed once per process; an earlier test of the same process may have
    # filled it while it patched a page's data, so measure afresh, as a server does at its start
    site.episode_times.cache_clear()
    return site.episode_times()


def test_each_time_is_the_pages_words_and_steps(times):
    assert [t.number for t in times] == [e.number for e in EPISODES]
    for ep, t in zip(EPISODES, times):
        words = sum(len(re.findall(r"[^\W\d_][\w’'-]*", course.plain_text(m)))
                    for m in course.page_markup(ep.page(seed=site.MEASURE_SEED, service=site.SERVICE)))
        assert t.words == words > 100  # measured on the page as served: with the site's service
        assert t.steps == course.try_steps(ep.try_this) >= 1
        assert t.minutes == math.ceil(words / course.WORDS_PER_MINUTE + course.MINUTES_PER_STEP * t.steps)


@pytest.mark.parametrize("text, steps", [
    ("press <em>Play</em>.", 1),
    ("press Play; then drag N to 16.", 2),
    ("drag B; then, in part 2, set q low.", 2),
    ("do a. Then do b. In part 2, do c.", 3),
])
def test_try_steps_counts_where_a_try_this_moves_on(text, steps):
    assert course.try_steps(text) == steps


def test_the_index_says_each_time_and_a_path_that_fits_the_class(times):
    body = plain(index.path_html(times)) + " " + plain(index.episode_list_html(EPISODES, times))
    by = {t.number: t for t in times}
    path = course.short_path(times)
    assert path and path == course.SHORT_PATH[: len(path)]
    total = sum(by[n].minutes for n in path)
    assert total <= course.CLASS_MINUTES
    stated = number(r"in that order, about (\d+) minutes", body)
    assert stated == total
    assert number(r"leaving (\d+) for questions", body) == course.CLASS_MINUTES - total
    for ep in EPISODES:
        assert f"Episode {ep.number} · {by[ep.number].minutes} min" in body.replace("  ", " ")
    deeper = [n for n in by if n not in path]
    assert number(r"deeper \(about (\d+) minutes", body) == sum(by[n].minutes for n in deeper)
    # The badge agrees with the path.
    items = index.episode_list_html(EPISODES, times).split("<li>")[1:]
    for ep, item in zip(EPISODES, items):
        assert ("short path" in item) == (ep.number in path) and ("deeper" in item) != (ep.number in path)


def test_a_path_that_does_not_fit_is_cut_short():
    long = [course.EpisodeTime(n, 200 * 30, 0) for n in (1, 2, 3, 5)]
    assert course.short_path(long) == (1,)
    assert course.short_path([course.EpisodeTime(1, 200 * 50, 0)]) == ()


def test_summary_links_open_each_episode_at_a_setting_its_url_check_accepts():
    for ep in EPISODES:
        assert ep.summary_link and ep.summary_sentence is not None, ep.slug
        url = urlsplit(summary.link(ep))
        assert url.path == f"./{ep.slug}"
        query = dict(parse_qsl(url.query))
        assert set(ep.url_params) <= set(ep.state.param)
        values, notices = read_query(ep.state(), ep.url_params, query)
        assert notices == [], (ep.number, notices)
        assert set(values) == set(query)


def test_summary_sentences_say_what_their_numbers_are():
    s = {n: plain(t) for n, t in summary.sentences(EPISODES).items()}
    assert "Writing 16 tokens takes 16 passes" in s[1] and "takes 1 pass" in s[1]
    assert number(r"E = ([\d.]+)", s[2]) == round(theory.expected_tokens_per_round(0.8, 4), 2)
    assert number(r"passes, ([\d.]+)×", s[2]) == round(theory.expected_speedup(0.8, 4, 0.1), 2)
    k = EPISODES[2].summary_link["k"]
    assert k == theory.best_k(0.8, 0.1, k_max=16)
    assert number(r"it is k = \d+ \(([\d.]+)×\)", s[3]) == round(theory.expected_speedup(0.8, k, 0.1), 2)
    assert number(r"below ([\d.]+)\.", s[3]) == round(theory.break_even_q(16, 0.1), 2)
    assert theory.expected_speedup(0.6, 16, 0.1) < 1 < theory.expected_speedup(0.65, 16, 0.1)
    means = measured.genre_means()
    assert number(r"measured ([\d.]+) on Python", s[4]) == round(means["py-account"]["alpha"], 2)
    assert number(r"and ([\d.]+) on a poem", s[4]) == round(means["poem-kettle"]["alpha"], 2)
    for k5 in (1, 4, 8):
        assert number(rf"([\d.]+) for k = {k5}\b", s[5]) == round(theory.break_even_q(k5, 0.15), 2)
    assert theory.break_even_q(4, 0.3) > theory.break_even_q(4, 0.15)  # "a dearer draft moves it up"
    assert "still follow" in s[6] and number(r"p-value ([\d.]+)", s[6]) >= 0.001
    from specdec_playable.episodes.ep6.state import FinePrint
    biased = FinePrint(bias=0.9, n_samples=100_000, rng=0)
    assert number(r"is ([\d.]+) \(unbiased", s[6]) == round(biased.acceptance_theory, 2)
    assert number(r"unbiased: ([\d.]+)", s[6]) == round(FinePrint(rng=0).acceptance_theory, 2)
    assert number(r"p-value ([\d.]+)", s[6]) == round(biased.fit_big.p_value, 2)
    from specdec_playable.kit.cpu import cpu_passes

    r5 = cpu_passes().ratio(5)  # this server's curve once it measured one, else the shipped one
    assert number(r"costs ([\d.]+)× a one-position", s[7]) == round(r5, 2)
    gpu = hardware.measured_curve("llama-8b-shape", "gemm-cudagraph")
    # the H200's own figure (a server's record, measured under load, may read as flat as it)
    assert number(r"H200, ([\d.]+)×", s[7]) == round(float(gpu.time_ms(5) / gpu.time_ms(1)), 2)
    if 1 < r5 < 5:
        assert number(r"least q = (\d\.\d\d)", s[7]) == round(float(theory.break_even_q(4, (r5 - 1) / 4)), 2)
    assert number(r"batch size B = ([\d,]+)", s[8]) > 1
    assert number(r"decides ([\d.]+) tokens", s[8]) > number(r"against ([\d.]+) for a chain", s[8])


def test_summary_formulas_agree_with_the_theory():
    body = plain(summary.summary_html(EPISODES))
    q, k, c = summary.EXAMPLE["q"], summary.EXAMPLE["k"], summary.EXAMPLE["c"]
    e = (1 - q ** (k + 1)) / (1 - q)
    assert e == pytest.approx(theory.expected_tokens_per_round(q, k))
    assert number(r"gives E = ([\d.]+)", body) == round(e, 2)
    assert number(r"= ([\d.]+)×\. Theory", body) == round(e / (1 + k * c), 2)
    assert "min(1, p big (x) / p draft (x))" in body
    for ep in EPISODES:
        assert f"Episode {ep.number}" in body


@pytest.mark.parametrize("ep", EPISODES, ids=lambda e: e.slug)
def test_a_seeded_page_shows_the_same_words_every_build(ep):
    # The reading times are measured on such a page: a draw (Episode 6's chi-square verdict, say)
    # may not change them. A session's own page stays unseeded.
    assert ep.state.__module__ == f"specdec_playable.episodes.ep{ep.number}.state"
    a, b = ([course.plain_text(m) for m in course.page_markup(ep.page(seed=site.MEASURE_SEED))]
            for _ in range(2))
    assert a == b and len(a) > 3
