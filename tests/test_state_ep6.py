"""State tier: Episode 6's derived values follow its parameters (real p, the draft head's q)."""

from __future__ import annotations

import numpy as np
import pytest

from specdec_playable.sim import adaptive, sampling
from specdec_playable.data import measured
from specdec_playable.episodes.ep6.state import RACE_TEXTS, FinePrint, draft_distribution


def test_draft_distribution_is_the_real_q_at_temperature_one_without_bias():
    for ctx in measured.CONTEXTS:
        c = measured.context(ctx)
        np.testing.assert_allclose(draft_distribution(ctx, 1.0, 1, 0.0), c.q)
        q = draft_distribution(ctx, 1.0, 3, 0.5)
        assert q.sum() == pytest.approx(1.0) and q[2] >= 0.5


def test_part1_is_the_real_models_p_over_a_real_context():
    s = FinePrint(rng=0)
    c = measured.context(s.context)
    assert s.labels == c.labels and s.labels[-1] == measured.REST
    np.testing.assert_allclose(s.p_big, c.p)
    assert s.acceptance_theory == pytest.approx(c.alpha, abs=2e-3)  # the measured alpha
    s.context = measured.CONTEXTS[-1]
    assert s.labels[0] == "," and s.p_big[0] > 0.8  # "def __init__(self" -> ","
    assert s.samples.p_big.size == len(s.labels)


def test_knobs_change_q_and_resample():
    s = FinePrint(rng=0, context=measured.CONTEXTS[-1])
    before = s.samples
    s.param.update(favourite=4, bias=0.6)
    assert s.samples is not before
    assert s.p_draft[3] >= 0.6 - 1e-12 and s.favourite_label == s.labels[3]
    assert s.acceptance_theory == pytest.approx(np.minimum(s.p_big, s.p_draft).sum())
    s.bias = 0.0
    np.testing.assert_allclose(s.p_draft, measured.context(s.context).q)


@pytest.mark.parametrize("ctx", measured.CONTEXTS)
def test_samples_follow_real_p_whatever_q(ctx):
    """Seed 7, 100,000 draws with a draft biased 60 % to the model's 3rd token: the chi-square
    test against the real p passes (p-value > 0.001), against q it fails (< 1e-12)."""
    s = FinePrint(rng=7, n_samples=100_000, context=ctx, favourite=3, bias=0.6, temperature=2.0)
    assert s.samples.n == 100_000
    assert s.fit_big.p_value > 1e-3 and s.fit_draft.p_value < 1e-12
    # The measured acceptance is within 4 standard errors (<= 0.0016 each) of sum(min(p, q)).
    assert abs(s.samples.acceptance_rate - s.acceptance_theory) < 0.0064
    np.testing.assert_allclose(s.frequencies.sum(), 1.0)
    old = s.samples
    s.param.trigger("draw")
    assert s.samples is not old and s.samples.n == 100_000


def test_race_runs_over_the_measured_texts():
    s = FinePrint(rng=2)
    stream = measured.measured_stream(RACE_TEXTS, 2, draft="ngram")
    assert s.stream.tokens == stream.tokens
    np.testing.assert_array_equal(s.stream.q, stream.q)
    assert [seg[0] for seg in s.stream.segments] == ["python", "poem", "json"]
    assert [r.label for r in s.runs][0] == "fixed k = 4"
    first = [r.speedup for r in s.runs]
    s.fixed_k = 7
    assert s.runs[0].label == "fixed k = 7" and (s.runs[0].k == 7).all()
    s.c = 0.6
    assert all(r.output == s.stream.tokens for r in s.runs)
    s.param.update(c=0.05, fixed_k=4)
    assert [r.speedup for r in s.runs] == first
    s.race_seed = 5
    s.new_race()
    assert s.race_seed != 5
    assert len(s.runs) == 5 and s.best_run in s.runs


def test_two_sessions_draw_independently():
    a, b = FinePrint(), FinePrint()
    assert not np.array_equal(a.samples.samples, b.samples.samples)
    assert isinstance(a.samples, sampling.SampleResult)
    assert isinstance(a.runs[0], adaptive.PolicyRun)


def test_the_match_policy_drafts_what_each_rounds_match_earns():
    """The fifth policy: at every round start, k = the match length there (capped at 12), and
    plain decoding where the text just written matches fewer than two tokens; the stream's match
    lengths are the measured texts' own, laid out as the stream lays out their tokens."""
    from specdec_playable.sim import adaptive

    s = FinePrint()
    match = s.stream.match
    assert match is not None and match.shape == (len(s.stream),) and not match.flags.writeable
    for (_, a, b), tid in zip(s.stream.segments, RACE_TEXTS):
        one = measured.match_lengths((tid,))
        np.testing.assert_array_equal(match[a:a + one.size], one)
    run = s.runs[4]
    assert run.label == adaptive.MatchLength().label
    m = match[run.start]
    want = np.where(m < 2, 0, np.minimum(m, adaptive.K_CAP))
    np.testing.assert_array_equal(run.k, want)
    assert run.output == s.stream.tokens and 0 < run.plain_rounds < run.n_rounds


def test_a_stream_without_match_lengths_refuses_the_match_policy():
    from specdec_playable.sim import adaptive

    import dataclasses

    stream = dataclasses.replace(measured.measured_stream(RACE_TEXTS, 1, draft="ngram"), match=None)
    with pytest.raises(ValueError, match="needs a stream with match lengths"):
        adaptive.race(stream, (adaptive.MatchLength(),), 0.1, rng=0)
    with pytest.raises(ValueError, match="one length >= 0 per token"):
        adaptive.Stream(("a", "b"), np.array([0.5, 0.5]), (("code", 0, 2),), match=[1])


@pytest.mark.parametrize("c, seed", [(0.05, 1), (0.05, 99), (0.3, 7), (0.6, 123)])
def test_the_story_says_what_the_match_policy_drafted_on_each_text(c, seed):
    from specdec_playable.episodes.ep6.view import race_story_html

    s = FinePrint(c=c, race_seed=seed)
    run = s.runs[4]
    story = race_story_html(s)
    for _, a, b in s.stream.segments:
        assert f"{run.mean_k(a, b):.1f} in " in story
    assert (f"decoded {run.plain_rounds:,} round{'s' if run.plain_rounds != 1 else ''} plainly "
            f"({run.plain_rounds / run.n_rounds:.0%} of its rounds)") in story


@pytest.mark.parametrize("k, c, seed", [(1, 0.05, 1), (1, 0.05, 7), (2, 0.05, 3), (4, 0.3, 1), (8, 0.6, 2)])
def test_the_why_never_says_theorys_loss_where_the_race_shows_a_win_without_saying_so(k, c, seed):
    """Episode 6's "Why": where the fixed policy drafts other than theory's best k yet spent the
    fewest passes on a text in this race, the sentence says so beside theory's reason."""
    from specdec_playable.episodes.ep6.view import _same, _the, race_why_html, text_best_k

    s = FinePrint(fixed_k=k, c=c, race_seed=seed)
    why = race_why_html(s)
    costs = np.array([r.stretch_costs(s.stream.segments) for r in s.runs])
    import re

    upset = " ".join(re.findall(r"in this race it spent the fewest passes on ([^:]+):", why))
    for (g, _, best_k, _), col in zip(text_best_k(s), costs.T):
        won = _same(col[0], col.min())
        assert (_the(g) in upset) == (won and best_k != k), (g, won, why)
