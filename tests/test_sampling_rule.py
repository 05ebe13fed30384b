"""One speculative-sampling rule: Episode 6's distributions, judged by the real decoder's own verify
step, come out as the big model's distribution; and the simulation and the decoder call the same
functions (``sim.sampling``), so a change to the rule changes both.

Statistical tests draw with fixed seeds and fail by chance with probability ALPHA = 0.001 each (so,
seeded, they pass or fail the same way on every machine).
"""

from __future__ import annotations

import numpy as np
import pytest

from specdec_playable.episodes.ep6.state import FinePrint, draft_distribution
from specdec_playable.lm import decode, sampling as lm_sampling
from specdec_playable.sim import sampling

ALPHA = 1e-3
N = 20_000


def _ep6_distributions(bias: float) -> tuple[np.ndarray, np.ndarray]:
    """Episode 6's two distributions at its opening context, with the draft pushed to its favourite
    token by ``bias``."""
    s = FinePrint(rng=0)
    return s.p_big, draft_distribution(s.context, s.temperature, s.favourite, bias)


@pytest.mark.parametrize("bias", [0.0, 0.9])
def test_episode_6s_distributions_through_the_decoders_verify_step_follow_p_big(bias):
    p_big, p_draft = _ep6_distributions(bias)
    rng = np.random.default_rng(20261204)
    rows = np.stack([p_big, p_big])  # the pending position; the bonus row after a kept draft
    counts = np.zeros(p_big.size, np.int64)
    kept = 0
    for _ in range(N):
        x = lm_sampling.draw(p_draft, rng)
        a, last = decode.judge(rows, [x], p_draft[None, :], rng)
        counts[x if a == 1 else last] += 1
        kept += a
    assert sampling.chi_square(counts, p_big).p_value > ALPHA
    theory = sampling.acceptance_theory(p_big, p_draft)
    assert abs(kept / N - theory) < 4 * np.sqrt(theory * (1 - theory) / N)


def test_the_check_can_fail_draws_from_the_draft_are_flagged():
    p_big, p_draft = _ep6_distributions(0.9)
    counts = np.random.default_rng(1).multinomial(N, p_draft)
    assert sampling.chi_square(counts, p_big).p_value < ALPHA


def test_a_chain_keeps_each_positions_distribution():
    # Three drafted positions with different big-model and draft distributions. Whatever the
    # earlier positions decided, the token written at position i (among passes that reach it) is
    # distributed as p_big[i]; the bonus token after three kept drafts as p_big[3].
    rng = np.random.default_rng(7)
    vocab, d = 6, 3
    p_big = rng.dirichlet(np.ones(vocab), size=d + 1)
    p_draft = rng.dirichlet(np.full(vocab, 0.5), size=d)
    written = [[] for _ in range(d + 1)]
    draws = np.random.default_rng(20261204)
    for _ in range(N):
        drafts = [int(lm_sampling.draw(p_draft[i], draws)) for i in range(d)]
        a, last = decode.judge(p_big, drafts, p_draft, draws)
        for i in range(a):
            written[i].append(drafts[i])
        written[a].append(last)
    for i in range(d + 1):
        counts = np.bincount(written[i], minlength=vocab)
        assert counts.sum() > 500, i
        assert sampling.chi_square(counts, p_big[i]).p_value > ALPHA, i


def test_a_certain_draft_is_judged_as_one_hot():
    p = np.array([[0.2, 0.5, 0.3], [0.1, 0.1, 0.8]])
    hits = sum(decode.judge(p, [1], None, np.random.default_rng(s))[0] for s in range(4000))
    assert abs(hits / 4000 - 0.5) < 4 * np.sqrt(0.25 / 4000)  # kept with probability p(x) = 0.5


def test_the_simulation_and_the_decoder_call_the_same_rule(monkeypatch):
    p_big, p_draft = _ep6_distributions(0.0)
    # A rule that keeps nothing: both paths must then replace every proposal.
    monkeypatch.setattr(sampling, "keep_probability", lambda p_x, q_x: np.zeros(np.shape(p_x)))
    r = sampling.speculative_sample(p_big, p_draft, 500, rng=3)
    assert not r.accepted.any()
    rows = np.stack([p_big, p_big])
    assert all(decode.judge(rows, [int(np.argmax(p_draft))], p_draft[None, :],
                            np.random.default_rng(s))[0] == 0 for s in range(50))


def test_keep_probability_edges():
    got = sampling.keep_probability([0.0, 0.5, 0.3, 0.2, 1.0], [0.0, 0.25, 0.6, 0.0, 1.0])
    assert got.tolist() == pytest.approx([1.0, 1.0, 0.5, 1.0, 1.0])
    left = sampling.leftover(np.array([0.5, 0.5]), np.array([0.5, 0.5]))
    assert left.tolist() == pytest.approx([0.5, 0.5])  # nothing left over: never used, p_big back
