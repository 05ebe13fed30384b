"""State tier: Episode 6's derived values follow its parameters."""

from __future__ import annotations

import numpy as np
import pytest

from specdec_playable.core import adaptive, sampling
from specdec_playable.state.ep6 import P_BIG, WORDS, FinePrint, draft_distribution


def test_draft_distribution_is_p_at_temperature_one_without_boost():
    np.testing.assert_allclose(draft_distribution(1.0, "mat", 0.0), P_BIG)
    q = draft_distribution(1.0, "moon", 2.0)
    assert q.sum() == pytest.approx(1.0) and q[WORDS.index("moon")] > P_BIG[-1] * 5


def test_knobs_change_q_and_resample():
    s = FinePrint(rng=0)
    before = s.samples
    s.param.update(temperature=1.0, boost=0.0)
    np.testing.assert_allclose(s.p_draft, P_BIG)
    assert s.acceptance_theory == pytest.approx(1.0)
    assert s.samples is not before and s.samples.acceptance_rate == 1.0
    s.favourite = "sofa"
    s.boost = 3.0
    assert s.p_draft.argmax() == WORDS.index("sofa")
    assert s.acceptance_theory == pytest.approx(np.minimum(P_BIG, s.p_draft).sum())


def test_samples_follow_p_and_n():
    s = FinePrint(rng=1, n_samples=100_000)
    assert s.samples.n == 100_000
    assert s.fit_big.p_value > 1e-3 and s.fit_draft.p_value < 1e-12
    assert abs(s.samples.acceptance_rate - s.acceptance_theory) < 0.01
    np.testing.assert_allclose(s.frequencies.sum(), 1.0)
    old = s.samples
    s.param.trigger("draw")
    assert s.samples is not old and s.samples.n == 100_000


def test_race_follows_seed_c_and_fixed_k():
    s = FinePrint(rng=2)
    assert [r.label for r in s.runs][0] == "fixed k = 4"
    first = [r.speedup for r in s.runs]
    s.fixed_k = 7
    assert s.runs[0].label == "fixed k = 7" and (s.runs[0].k == 7).all()
    s.c = 0.6
    assert all(r.output == s.stream.tokens for r in s.runs)
    s.param.update(c=0.3, fixed_k=4)
    assert [r.speedup for r in s.runs] == first
    s.race_seed = 5
    s.new_race()
    assert s.race_seed != 5
    assert len(s.runs) == 4 and s.best_run in s.runs


def test_two_sessions_draw_independently():
    a, b = FinePrint(), FinePrint()
    assert not np.array_equal(a.samples.samples, b.samples.samples)
    assert isinstance(a.samples, sampling.SampleResult)
    assert isinstance(a.runs[0], adaptive.PolicyRun)
