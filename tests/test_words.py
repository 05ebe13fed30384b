"""Words are claims: the numbers the pages state are the numbers the simulation uses."""

from __future__ import annotations

import importlib

from specdec_playable.sim import adaptive, montecarlo
from specdec_playable.episodes import ep1, ep2, ep6
from specdec_playable.episodes.ep1.state import SENTENCE, WritingVsChecking
from specdec_playable.episodes.ep2.state import BIG_PASS_MS, DRAFT_STEP_MS, Relay
from specdec_playable.episodes.ep3.state import N_ROUNDS as EP3_ROUNDS
from specdec_playable.episodes.ep3.state import QualityDial
from specdec_playable.episodes.ep5.state import N_ROUNDS as EP5_ROUNDS
from specdec_playable.episodes.ep5.state import BreakEvenMap
from specdec_playable.episodes.ep6.state import SAMPLE_SIZES, FinePrint
from specdec_playable.episodes.ep2 import view as ep2_relay
ep1_page = importlib.import_module("specdec_playable.episodes.ep1.page")
ep2_page = importlib.import_module("specdec_playable.episodes.ep2.page")
ep6_page = importlib.import_module("specdec_playable.episodes.ep6.page")


def test_episode_1_states_the_pass_time_and_the_longest_sentence_it_simulates():
    s = WritingVsChecking()
    assert f"a simulated {s.big_pass_ms:,} ms per pass" in ep1_page.LEDE
    n = len(SENTENCE)
    assert f"with {n} tokens instead of {WritingVsChecking().n_tokens}" in ep1.EPISODE.try_this and f"<em>Tokens (N)</em> to {n}" in ep1.EPISODE.try_this
    assert WritingVsChecking(n_tokens=n).comparison.ratio == n
    assert WritingVsChecking.param.n_tokens.bounds[1] == len(SENTENCE)


def test_episode_2_states_the_costs_its_run_pays():
    r = Relay(seed=1).result
    drafts, passes = r.events.of_kind("draft"), r.events.of_kind("verify")
    step = float((drafts.end_ms - drafts.start_ms)[0])
    one_pass = float((passes.end_ms - passes.start_ms)[0])
    assert (step, one_pass) == (DRAFT_STEP_MS, BIG_PASS_MS)
    titles = [lane.title for lane in ep2_relay.LANES]
    assert titles == [f"Draft model · {step:,.0f} ms a step", f"Big model · {one_pass:,.0f} ms a pass"]
    assert f"one big-model pass {one_pass:,.0f} ms, one draft step {step:,.0f} ms" in ep2_page.OUTRO
    assert f"draft step ({step:,.0f} ms)" in ep2_relay.legend_html()


def test_the_buttons_run_as_many_rounds_as_they_say(monkeypatch):
    s = QualityDial(rng=0)
    assert s.param.run_again.label == f"Run {EP3_ROUNDS:,} new rounds"
    s.param.trigger("run_again")
    assert s.result.n_rounds == EP3_ROUNDS
    m = BreakEvenMap(rng=0)
    assert m.param.simulate.label == f"Simulate {EP5_ROUNDS:,} rounds"
    seen = []
    real = montecarlo.simulate
    monkeypatch.setattr(montecarlo, "simulate", lambda *a, **kw: seen.append(a[3]) or real(*a, **kw))
    m.param.trigger("simulate")
    assert seen == [EP5_ROUNDS] and len(m.points) == 1


def test_episode_6_describes_the_policies_it_races():
    fixed, plus, estimate, off = adaptive.default_policies()
    assert f"never above {plus.k_max}" in ep6_page.part2_intro() and plus.k_max == adaptive.K_CAP
    assert f"moves it {estimate.alpha:.0%} of the way" in ep6_page.part2_intro()
    assert f"every {off.probe_every} plain rounds, draft {off.probe_k} tokens" in ep6_page.part2_intro()
    assert f"to {FinePrint.param.bias.bounds[1]:g} and" in ep6.EPISODE.try_this
    assert f"{max(SAMPLE_SIZES):,}:" in ep6.EPISODE.try_this
    # The race's texts are named with their measured mean acceptance, in the stream's order.
    for kind, mean in ep6_page.race_means():
        assert f"(mean acceptance rate q = {mean:.2f})" in ep6_page.part2_intro()


def test_a_legend_item_is_its_swatch_and_one_span_of_words():
    """The key's items are flex boxes: the words in one span, so a glossary link inside them runs
    on with the words around it ("the big model’s own token", not "the big model ’s own token")."""
    import re

    from specdec_playable.episodes.ep2 import view as ep2
    from specdec_playable.episodes.ep7 import view as ep7
    from specdec_playable.kit.terms import link_terms

    for html_ in (ep2.legend_html(), ep7.legend_html()):
        items = re.findall(r'<span class="i">(.*?)</span></span>', html_)
        assert len(items) == 8
        for item in items:
            assert re.fullmatch(r'<span class="sw [a-z]+">[^<]*</span><span class="t">[^<]+', item), item
    linked = link_terms(ep2.legend_html())
    assert re.search(r"<span class=\"t\">the <a [^>]*>big model</a>’s own <a [^>]*>token</a></span>", linked), linked
