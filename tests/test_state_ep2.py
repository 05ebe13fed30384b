"""State tier for Episode 2: set parameters, check what the page derives from sim.relay."""

from __future__ import annotations

import re

import numpy as np
import pytest

from specdec_playable.sim import relay
from specdec_playable.sim.seeds import SEED_MAX
from specdec_playable.episodes.ep2 import state as st
from specdec_playable.episodes.ep2.state import Relay


def test_passage_has_a_plausible_wrong_guess_for_every_token():
    assert 40 <= len(st.PASSAGE) <= 60
    for token, decoy in st.PASSAGE:
        assert token and decoy and token != decoy
        # A decoy is a word or a punctuation mark, never filler such as "?".
        assert re.fullmatch(r"\s?[\w'’]+|[.,!]", decoy), decoy
    assert st.TOKENS == tuple(t for t, _ in st.PASSAGE)


def test_defaults_follow_the_brief():
    s = Relay()
    assert (s.k, s.q, s.seed) == (4, 0.8, st.DEFAULT_SEED)
    assert s.param.k.bounds == (1, 12)
    assert s.param.q.bounds == (0.0, 1.0)
    assert s.param.seed.bounds == (0, SEED_MAX)
    for name in ("k", "q", "seed"):
        assert s.param[name].doc and s.param[name].label


def test_result_is_core_relay_on_the_passage():
    s = Relay(k=5, q=0.6, seed=1234)
    expected = relay.run(st.TOKENS, 0.6, 5, rng=np.random.default_rng(1234), decoys=st.DECOYS)
    assert s.result.events.to_dict() == expected.events.to_dict()
    assert s.result.wall_ms == expected.wall_ms
    assert s.result.output == st.TOKENS


def test_setting_k_recomputes_the_run():
    s = Relay(seed=5)
    for k in (1, 7, 12):
        s.k = k
        drafted = s.result.rounds["drafted"]
        assert drafted.max() == min(k, len(st.TOKENS))
        # k drafts a round, fewer only where the text has fewer tokens left.
        left = len(st.TOKENS) - s.result.rounds["first_token"]
        np.testing.assert_array_equal(drafted, np.minimum(k, left))
        # Every round costs its draft steps plus one big pass.
        np.testing.assert_allclose(s.result.rounds["end_ms"] - s.result.rounds["start_ms"],
                                   drafted * st.DRAFT_STEP_MS + st.BIG_PASS_MS)


@pytest.mark.parametrize("q, bad_all", [(0.0, True), (1.0, False)])
def test_q_extremes(q, bad_all):
    s = Relay(q=q, k=4, seed=9)
    p = s.progress
    assert p.bad[1:].all() == bad_all
    if q == 1.0:
        assert p.bad_rounds[-1] == 0
        # Every full round yields k + 1 tokens.
        assert (s.result.rounds["tokens"][:-1] == 5).all()
    else:
        # Nothing accepted: one token per round, each dearer than plain decoding.
        n = len(st.TOKENS)
        assert p.bad_rounds[-1] == n
        assert p.bad_plain_ms[-1] == n * st.BIG_PASS_MS
        assert p.bad_ms[-1] == s.result.wall_ms > n * st.BIG_PASS_MS
        assert s.result.speedup < 1


def test_same_seed_same_run_new_run_changes_it():
    a, b = Relay(seed=42), Relay(seed=42)
    assert a.result.events.to_dict() == b.result.events.to_dict()
    before = a.result.events.to_dict()
    old = a.seed
    new = a.new_run()
    assert new == a.seed != old
    assert 0 <= new <= SEED_MAX
    a.seed = old
    assert a.result.events.to_dict() == before


def test_seed_is_bounded():
    s = Relay()
    with pytest.raises(ValueError):
        s.seed = -1
    with pytest.raises(ValueError):
        s.seed = SEED_MAX + 1
    with pytest.raises(ValueError):
        s.k = 13
    with pytest.raises(ValueError):
        s.q = 1.5


def test_progress_is_the_ratio_of_the_two_clocks_round_by_round():
    s = Relay(seed=77, q=0.7, k=6)
    r, p = s.result, s.progress
    assert len(p) == r.n_rounds + 1
    assert p.end_ms[0] == 0 and p.tokens[0] == 0 and np.isnan(p.speedup[0])
    np.testing.assert_array_equal(p.end_ms[1:], r.rounds["end_ms"])
    np.testing.assert_array_equal(p.tokens[1:], np.cumsum(r.rounds["tokens"]))
    np.testing.assert_array_equal(p.alone_ms, p.tokens * st.BIG_PASS_MS)
    np.testing.assert_allclose(p.speedup[1:], p.alone_ms[1:] / p.end_ms[1:])
    assert p.speedup[-1] == pytest.approx(r.speedup)
    assert p.end_ms[-1] == r.wall_ms and p.alone_ms[-1] == r.baseline_ms


def test_bad_rounds_and_their_running_cost():
    s = Relay(seed=3, q=0.5, k=5)
    rounds, p = s.result.rounds, s.progress
    bad = rounds["accepted"] == 0
    assert bad.any(), "this seed should have bad rounds"
    np.testing.assert_array_equal(p.bad[1:], bad)
    # A bad round yields one token (the big model's correction) for its drafts plus a pass.
    np.testing.assert_array_equal(rounds["tokens"][bad], 1)
    cost = rounds["drafted"][bad] * st.DRAFT_STEP_MS + st.BIG_PASS_MS
    np.testing.assert_allclose(rounds["end_ms"][bad] - rounds["start_ms"][bad], cost)
    assert p.bad_rounds[-1] == bad.sum()
    assert p.bad_ms[-1] == pytest.approx(cost.sum())
    assert p.bad_plain_ms[-1] == bad.sum() * st.BIG_PASS_MS
    assert (np.diff(p.bad_ms) >= 0).all()


def test_guarantee_is_checked_not_assumed():
    s = Relay(q=0.3, seed=11)
    g = s.guarantee
    assert g.ok and g.matches == g.n_tokens == len(st.TOKENS) and g.first_mismatch is None
    # The check itself can fail: it compares token by token.
    bad = st.check_guarantee(st.TOKENS[:10] + (" loaf",) + st.TOKENS[11:], st.TOKENS)
    assert not bad.ok and bad.first_mismatch == 10 and bad.matches == len(st.TOKENS) - 1
    short = st.check_guarantee(st.TOKENS[:-1], st.TOKENS)
    assert not short.ok and short.first_mismatch == len(st.TOKENS) - 1


# --- what the page builds from the state (no browser) -----------------------------


def test_page_rows_and_html_come_from_the_state():
    pytest.importorskip("panel")
    from specdec_playable.episodes.ep2 import view as page

    s = Relay()
    p = s.progress
    rows = page.round_rows(p, len(st.TOKENS))
    last = len(p) - 1
    assert rows["relay"][last] == f"{s.result.wall_ms:,.0f} ms"
    assert rows["alone"][last] == f"{s.result.baseline_ms:,.0f} ms"
    assert rows["speedup"][last] == f"{s.result.speedup:.2f}×"
    assert rows["speedup"][0] == "–"
    timeline = page.relay_timeline(s.result, pass_ms=st.BIG_PASS_MS)
    stops = list(timeline.stops)
    tips = [b.tip for b in timeline.boxes]
    before = [b.tip_before for b in timeline.boxes]
    assert stops == s.result.rounds["end_ms"].tolist()
    lanes = np.array([b.lane for b in timeline.boxes])
    assert (lanes == "draft").sum() == s.result.rounds["drafted"].sum()
    assert (lanes == "bad").sum() == p.bad_rounds[-1]
    assert len(tips) == len(before) == len(lanes)
    # A draft's tooltip gives its verdict only once it is judged.
    assert all("waiting" in b and "waiting" not in a
               for a, b, lane in zip(tips, before, lanes) if lane == "draft")
    html = page.text_html(s, "ep2-x")
    kept = re.findall(r'<span class="tk kept[^"]*"[^>]*>(.*?)<span class="w">(.*?)</span></span>', html)
    assert "".join(a + b for a, b in kept) == "".join(st.TOKENS)


def test_page_html_escapes_text(monkeypatch):
    pytest.importorskip("panel")
    from specdec_playable.episodes.ep2 import view as page

    evil = ("<b>", " &amp;", ' "x"') * 5
    monkeypatch.setattr(st, "TOKENS", evil)
    monkeypatch.setattr(st, "DECOYS", ("<i>",) * len(evil))
    monkeypatch.setattr(page, "TOKENS", evil)
    monkeypatch.setattr(page, "DECOYS", ("<i>",) * len(evil))
    s = Relay(q=0.5, seed=1)
    html = page.text_html(s, 'u"><script>')
    assert "<b>" not in html and "<i>" not in html and "<script>" not in html
    assert "&lt;b&gt;" in html and "&amp;amp;" in html and "&quot;x&quot;" in html
