"""Plain and speculative decoding with the real model: exactness, sampling law, events, control.

Greedy: speculative output equals plain greedy output token for token for every draft and every k
in 1..8 on six varied prompts. Sampling: the emitted token follows the target's p (chi-square over
20,000 draws at a fixed real context, seeded). Timing is not tested here (see benchmarks/).
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

from specdec_playable.lm import get_model
from specdec_playable.lm import sampling
from specdec_playable.sim.sampling import chi_square
from fake_clock import FakeClock, TimedModel, pass_ms
from specdec_playable.lm.decode import (MARKS, generate, generate_passes, judge, speculate,
                                        speculate_passes)
from specdec_playable.lm.drafts import EarlyExit, PromptLookup
from specdec_playable.lm.head import DraftHead
from specdec_playable.lm.hybrid import HybridDraft
from specdec_playable.lm.memory import MemoryDraft
from specdec_playable.lm.ngram import NgramDraft
from specdec_playable.lm.prompts import PROMPTS

MAX_NEW = 24
EARLY_MAX_NEW = 16  # the early exit is slow to run (about a third of a step per drafted token)
DRAFTS = {
    "lookup": (PromptLookup(), MAX_NEW),
    "ngram": (NgramDraft(min_share=0.0), MAX_NEW),  # 0: propose wherever it can, the harder case
    "early-exit": (EarlyExit(2), EARLY_MAX_NEW),
    "head": (DraftHead(), MAX_NEW),  # the trained draft head, fed the target's features
    # the memory of past replies, proposing wherever it has any match (the harder case)
    "memory": (MemoryDraft(min_share=0.0, min_match=1, factor=16.0), MAX_NEW),
    # both drafts in one tree a round (the default), and one chain a round by the rule
    "hybrid": (HybridDraft(memory=MemoryDraft(min_share=0.0, min_match=1)), MAX_NEW),
    "hybrid-rule": (HybridDraft(memory=MemoryDraft(min_share=0.0, min_match=1), merge=False), MAX_NEW),
    # at 4-bit prices: the head asked less, the memory's chain cut where it does not pay
    "hybrid-q4-prices": (HybridDraft(memory=MemoryDraft(min_share=0.0, min_match=1), prices_of="q4"),
                         MAX_NEW),
}


#: Short, varied prompts (no system turn, so each prefill is cheap): copying, code, facts, prose.
SHORT = {
    "copy": "Repeat exactly: the red fox, the red fox, the red fox.",
    "code": "Rename x to value:\ndef double(x):\n    return x * 2",
    "json": 'Give this as JSON: name Ada, age 36, city Leeds.',
    "fact": "What is the capital of France?",
    "poem": "Write a two-line poem about rain.",
    "list": "Name three primary colours.",
}


@pytest.fixture(scope="module")
def model():
    return get_model()


def _ids(model, text):
    return model.tokenizer.chat(text, system=None)


@pytest.fixture(scope="module")
def plain(model):
    """Plain greedy runs, computed once per prompt."""
    return {name: generate(model, _ids(model, text), max_new=MAX_NEW) for name, text in SHORT.items()}


@pytest.mark.parametrize("draft_name", list(DRAFTS))
@pytest.mark.parametrize("k", range(1, 9))
def test_greedy_speculation_writes_exactly_the_plain_greedy_tokens(model, plain, draft_name, k):
    draft, max_new = DRAFTS[draft_name]
    assert len(SHORT) >= 6
    for name, text in SHORT.items():
        spec = speculate(model, _ids(model, text), draft, k, max_new=max_new)
        ref = plain[name]
        n = len(spec.tokens)
        assert spec.tokens == ref.tokens[:n], (name, k)
        assert n == len(ref.tokens) or (n == max_new and spec.stopped == "budget")
        assert spec.stopped == (ref.stopped if n == len(ref.tokens) else "budget")
        assert len(spec.marks) == n and set(spec.marks) <= set(MARKS)


def test_prompt_lookup_accepts_on_copying_prompts(plain, model):
    spec = speculate(model, _ids(model, SHORT["copy"]), PromptLookup(), 4, max_new=MAX_NEW)
    assert spec.tokens == plain["copy"].tokens
    assert spec.acceptance_rate > 0.4 and spec.tokens_per_pass > 1.3  # measured: 0.58, 1.44


def test_events_tell_the_whole_story(model):
    tok = model.tokenizer
    k = 4
    r = speculate(model, tok.chat(PROMPTS["json-reshape"].message), PromptLookup(), k, max_new=MAX_NEW)
    ev = r.events
    assert (ev.start_ms <= ev.end_ms).all() and (ev.start_ms >= 0).all()
    assert ev.end_ms.max() <= r.wall_ms
    drafts, verifies = ev.of_kind("draft"), ev.of_kind("verify")
    assert len(drafts) == r.proposed and set(drafts.lane) == {"draft"}
    assert len(ev.of_kind("accepted")) == r.accepted and len(ev.of_kind("rejected")) == r.rejected
    assert len(verifies) + len(ev.of_kind("generate")) == r.passes + 1  # + the prefill
    # Each verdict is stamped at the end of its round's verify pass.
    ends = dict(zip(verifies.round.tolist(), verifies.end_ms.tolist()))
    verdicts = ev.of_kind("accepted", "rejected", "discarded", "correction", "bonus")
    assert all(e == ends[rnd] for rnd, e in zip(verdicts.round, verdicts.start_ms))
    # The output read back from the events: one deciding event per token, in order.
    writers = ev.of_kind("accepted", "correction", "bonus", "generate")
    order = np.argsort(writers.token, kind="stable")
    assert writers.token[order].tolist() == list(range(len(r.tokens)))
    assert "".join(writers.text[order]) == "".join(tok.token_text(t) for t in r.tokens)
    # Rejected guesses keep the draft's text, which differs from the correction at that position.
    for rnd, pos, text in zip(*(ev.of_kind("rejected").round, ev.of_kind("rejected").token,
                                ev.of_kind("rejected").text)):
        corr = ev.of_kind("correction").where(ev.of_kind("correction").round == rnd)
        assert corr.token.tolist() == [pos]
        assert r.tokens[pos] != tok.encode(text)[:1] or text != corr.text[0]
    assert r.accept_at.shape == (k,)
    judged = r.accept_at[~np.isnan(r.accept_at)]
    assert ((judged >= 0) & (judged <= 1)).all()


def test_progress_streams_every_token_and_cancel_stops_cleanly(model):
    ids = model.tokenizer.chat(PROMPTS["poem"].message)
    seen = []
    r = speculate(model, ids, PromptLookup(), 3, max_new=20, progress=seen.append)
    assert sum((u.tokens for u in seen), ()) == r.tokens
    assert [u.round for u in seen] == list(range(len(seen)))
    assert sum(u.n_accepted for u in seen) == r.accepted

    cancel = threading.Event()
    got = []

    def stop_after_three(update):
        got.append(update)
        if len(got) == 3:
            cancel.set()

    for runner in (lambda **kw: generate(model, ids, **kw),
                   lambda **kw: speculate(model, ids, EarlyExit(2), 3, **kw)):
        got.clear()
        cancel.clear()
        r = runner(max_new=40, progress=stop_after_three, cancel=cancel)
        assert r.stopped == "cancelled" and len(got) == 3
        assert r.tokens == sum((u.tokens for u in got), ())


def _drain(passes):
    """Every update a decoder yields, by ``next()``, and what it returns."""
    seen = []
    while True:
        try:
            seen.append(next(passes))
        except StopIteration as stop:
            return seen, stop.value


def _pass_of(u):
    return u.round, u.kind, u.tokens, u.marks, u.proposed, u.n_accepted, u.judged, u.missed


def test_a_run_driven_by_next_yields_exactly_the_passes_a_full_run_makes(model):
    ids = model.tokenizer.chat(PROMPTS["json-reshape"].message)
    for make in (lambda: speculate_passes(model, ids, PromptLookup(), 4, max_new=MAX_NEW),
                 lambda: generate_passes(model, ids, max_new=MAX_NEW)):
        stepped, g = _drain(make())
        full = []
        again = speculate(model, ids, PromptLookup(), 4, max_new=MAX_NEW, progress=full.append) \
            if g.k else generate(model, ids, max_new=MAX_NEW, progress=full.append)
        assert [_pass_of(u) for u in stepped] == [_pass_of(u) for u in full]
        assert g.tokens == again.tokens and g.marks == again.marks
        assert g.passes == len(stepped) - 1 == again.passes
        assert g.tokens == sum((u.tokens for u in stepped), ())
        assert g.proposed == sum(len(u.proposed) for u in stepped)
    # Arguments are checked at the call, before any pass runs.
    with pytest.raises(ValueError, match="k"):
        speculate_passes(model, ids, PromptLookup(), 0)


def test_a_fake_clock_gives_exact_pass_times(model):
    ids = model.tokenizer.chat(PROMPTS["json-reshape"].message)
    clock = FakeClock()
    timed = TimedModel(model, clock)
    for run in (speculate_passes(timed, ids, PromptLookup(), 4, max_new=MAX_NEW, clock=clock),
                generate_passes(timed, ids, max_new=MAX_NEW, clock=clock)):
        ups, g = _drain(run)
        clock.advance_ms(5000.0)  # time that passes outside the run counts for nothing
        costs = [pass_ms(u.positions) for u in ups]
        assert ups[0].positions == len(ids)
        np.testing.assert_allclose([u.pass_ms for u in ups], costs, atol=1e-6)
        np.testing.assert_allclose([u.turn_ms for u in ups], costs, atol=1e-6)
        np.testing.assert_allclose([u.elapsed_ms for u in ups], np.cumsum(costs), atol=1e-6)
        assert g.prefill_ms == pytest.approx(costs[0], abs=1e-6)
        assert g.wall_ms == pytest.approx(sum(costs), abs=1e-6)
        assert g.draft_ms == pytest.approx(0.0, abs=1e-6)  # prompt lookup takes no fake time
        big = g.events.where(np.isin(g.events.kind, ("generate", "verify")))
        np.testing.assert_allclose(big.end_ms - big.start_ms, costs, atol=1e-6)


def test_budgets_and_end_of_sequence(model, plain):
    tok = model.tokenizer
    ids = tok.chat(PROMPTS["poem"].message)
    r = generate(model, ids, max_new=5)
    assert len(r.tokens) == 5 and r.stopped == "budget" and r.passes == 4
    r = generate(model, ids, max_new=40, max_seconds=1e-6)
    assert r.stopped == "time" and len(r.tokens) <= 1
    cap = plain["fact"]  # "The capital of France is Paris." then end-of-sequence
    assert cap.stopped == "eos" and tok.eos_id not in cap.tokens
    spec = speculate(model, _ids(model, SHORT["fact"]), PromptLookup(), 8, max_new=MAX_NEW)
    assert spec.tokens == cap.tokens and spec.stopped == "eos"


@pytest.mark.parametrize("bad, match", [
    (dict(k=0), "k must be"), (dict(k=17), "k must be"), (dict(max_new=0), "max_new must be"),
    (dict(temperature=-0.5), "temperature must be"), (dict(top_p=0.0), "top_p must be"),
    (dict(max_seconds=0.0), "max_seconds must be"),
])
def test_speculate_refuses_bad_arguments(model, bad, match):
    args = dict(k=4, max_new=8) | bad
    with pytest.raises(ValueError, match=match):
        speculate(model, [1, 2, 3], PromptLookup(), **args)


# ---------------------------------------------------------------- sampling: the emitted law is p

def _chi_square_p_value(counts: np.ndarray, p: np.ndarray) -> float:
    """Pearson's test, tokens with expected count < 5 pooled into one bin."""
    n = counts.sum()
    big = p * n >= 5
    obs = np.append(counts[big], counts[~big].sum())
    probs = np.append(p[big], p[~big].sum())
    return chi_square(obs, probs / probs.sum()).p_value


@pytest.fixture(scope="module")
def real_context(model):
    """Target and early-exit distributions at a fixed real context, temperature 1."""
    ids = model.tokenizer.chat(PROMPTS["poem"].message)
    cache = model.new_cache()
    fw = model.forward(ids, cache, capture=(4,))
    from specdec_playable.lm.drafts import exit_logits

    p = sampling.probabilities(fw.logits[-1], 1.0)
    q = sampling.probabilities(exit_logits(model, fw.captured[4][-1:])[0], 1.0)
    return p, q


N_DRAWS = 20_000
ALPHA = 1e-3  # each test fails by chance with probability 0.001 (seeds fixed: it passes or not)


@pytest.fixture(scope="module")
def memory_q(model):
    """The memory draft's q at a real context where past replies agree on several continuations."""
    ids = model.tokenizer.chat(PROMPTS["poem"].message) + model.tokenizer.encode("In the")
    q = MemoryDraft().distribution(ids, model.config.vocab_size, temperature=1.0)
    assert (q > 0).sum() >= 2
    return q


@pytest.mark.parametrize("draft_kind", ["sampled-q", "one-hot", "memory-q"])
def test_speculative_sampling_emits_the_target_distribution(real_context, memory_q, draft_kind):
    p, q = real_context
    if draft_kind == "memory-q":
        q = memory_q
        draft_kind = "sampled-q"
    rng = np.random.default_rng(20261130)
    p_rows = np.stack([p, p])  # position 0 judged; the bonus row is never reached on rejection
    counts = np.zeros(p.size, np.int64)
    one_hot_token = int(np.argmax(q))  # a deterministic draft always proposes this token
    accepted = 0
    for _ in range(N_DRAWS):
        if draft_kind == "sampled-q":
            x = sampling.draw(q, rng)
            a, last = judge(p_rows, [x], q[None, :], rng)
        else:
            x = one_hot_token
            a, last = judge(p_rows, [x], None, rng)
        accepted += a
        counts[x if a == 1 else last] += 1
    assert _chi_square_p_value(counts, p) > ALPHA
    # The acceptance rate is sum(min(p, q)) (one-hot: p(x)), within 4 standard errors.
    expect = np.minimum(p, q).sum() if draft_kind == "sampled-q" else p[one_hot_token]
    assert abs(accepted / N_DRAWS - expect) < 4 * np.sqrt(expect * (1 - expect) / N_DRAWS)
    # A draft far from p: the emitted law is still p, not q.
    assert abs(p - q).sum() > 0.5


@pytest.mark.parametrize("draft", [MemoryDraft(min_share=0.0, min_match=1), HybridDraft()],
                         ids=["memory", "hybrid"])
def test_sampled_runs_with_memory_drafts_carry_q_and_repeat_by_seed(model, draft):
    ids = model.tokenizer.chat(PROMPTS["poem"].message)
    a = speculate(model, ids, draft, 4, max_new=16, temperature=0.8, rng=11)
    b = speculate(model, ids, draft, 4, max_new=16, temperature=0.8, rng=11)
    assert a.tokens == b.tokens and len(a.tokens) == 16
    assert a.proposed > 0 and len(a.drafted_by) == a.passes


def test_the_chi_square_test_can_fail(real_context):
    p, q = real_context
    counts = np.random.default_rng(1).multinomial(N_DRAWS, q)  # draws from q, not p
    assert _chi_square_p_value(counts, p) < ALPHA


def test_sampled_runs_are_reproducible_and_differ_by_seed(model):
    ids = model.tokenizer.chat(PROMPTS["poem"].message)
    a = speculate(model, ids, EarlyExit(2), 3, max_new=12, temperature=0.9, top_p=0.95, rng=5)
    b = speculate(model, ids, EarlyExit(2), 3, max_new=12, temperature=0.9, top_p=0.95, rng=5)
    c = generate(model, ids, max_new=12, temperature=0.9, rng=6)
    d = generate(model, ids, max_new=12, temperature=0.9, rng=7)
    assert a.tokens == b.tokens
    assert c.tokens != d.tokens
    assert a.proposed > 0 and np.isfinite(a.acceptance_rate)


def test_top_p_keeps_the_smallest_nucleus():
    p = sampling.probabilities(np.log(np.array([0.5, 0.3, 0.15, 0.05])), 1.0, top_p=0.75)
    assert np.allclose(p, [0.5 / 0.8, 0.3 / 0.8, 0, 0])


# ---------------------------------------------------------------- prompt lookup, no model needed

@pytest.mark.parametrize("context, k, expect", [
    ([5, 6, 7, 9, 5, 6], 2, [7, 9]),               # trigram? no; bigram 5 6 -> 7 9
    ([1, 2, 3, 4, 9, 2, 3, 8, 2, 3], 2, [8, 2]),    # the most recent match of the bigram wins
    ([1, 2, 3, 7, 9, 2, 3, 8, 1, 2, 3], 3, [7, 9, 2]),  # the trigram beats a later bigram
    ([4, 4, 4], 3, [4]),                            # what is left after the match
    ([1, 2, 3], 2, []),                              # nothing repeats
])
def test_prompt_lookup_longest_recent_match(context, k, expect):
    assert PromptLookup().propose(np.array(context), k).tokens.tolist() == expect


def test_prompt_lookup_respects_n_min():
    assert PromptLookup(n_min=2).propose(np.array([7, 1, 2, 7]), 2).tokens.tolist() == []
    assert PromptLookup(n_min=1).propose(np.array([7, 1, 2, 7]), 2).tokens.tolist() == [1, 2]
    with pytest.raises(ValueError):
        PromptLookup(n_min=3, n_max=2)


def test_a_draft_can_observe_the_hidden_states_the_target_kept(model):
    seen = []

    class Watching(PromptLookup):
        def begin(self, model):
            outer = self

            class Run:
                capture = (3,)  # the residual stream after block 3 too

                def propose(self, context, k, **kw):
                    return outer.propose(context, k, **kw)

                def observe(self, hidden, captured=None):
                    assert list(captured) == [3] and captured[3].shape == hidden.shape
                    seen.append(hidden)
            return Run()

    ids = _ids(model, SHORT["copy"])
    r = speculate(model, ids, Watching(), 4, max_new=16)
    assert len(seen) == r.passes + 1  # the prompt's prefill, then every verify pass
    assert seen[0].shape[0] == len(ids)
    # Each pass keeps the pending token and the accepted drafts: one final-normed row each.
    assert sum(h.shape[0] for h in seen[1:]) == r.passes + r.accepted
    assert all(h.dtype == np.float32 and h.shape[1] == model.config.d_model for h in seen)


def test_teacher_forced_scores_do_not_depend_on_the_chunk(model):
    from specdec_playable.lm.score import iter_distributions, score_text

    ids = model.tokenizer.encode("for i in range(10):\n    print(i, i * i)\nfor j in range(10):\n")
    a = score_text(model, ids, draft=PromptLookup(), chunk=5)
    b = score_text(model, ids, draft=PromptLookup(), chunk=128)
    assert np.abs(a.logprob - b.logprob).max() < 1e-3
    assert (a.target_top == b.target_top).all() and (a.draft_top == b.draft_top).all()
    assert np.allclose(a.alpha, b.alpha, atol=1e-4)
    rows = 0
    for start, p, q in iter_distributions(model, ids, draft=PromptLookup(), chunk=5):
        assert start == rows and p.shape == q.shape and p.dtype == np.float32
        assert np.allclose(p.sum(axis=1), 1.0, atol=1e-4)
        assert set(np.unique(q.sum(axis=1))) <= {0.0, 1.0}  # one-hot or no proposal
        rows += p.shape[0]
    assert rows == len(ids) - 1
    # Where prompt lookup proposes, alpha is p of its token; where it does not, 0.
    has = a.draft_top >= 0
    assert has.any() and (a.alpha[~has] == 0).all()


def test_a_hybrid_run_says_whose_guesses_each_round_kept(model):
    ids = model.tokenizer.chat("Write a short email to a colleague thanking them for their help.")
    g = speculate(model, ids, HybridDraft(), 4, max_new=32)
    assert len(g.drafted_by) == g.passes
    assert set(g.drafted_by) <= {"", "head", "memory", "request", "head+memory", "head+request"}
    assert any(s in ("memory", "request") for s in g.drafted_by)  # rounds only the memory won
    assert "head" in g.drafted_by
    rule = speculate(model, ids, HybridDraft(merge=False), 4, max_new=32)
    assert rule.tokens == g.tokens and set(rule.drafted_by) <= {"", "head", "memory", "request"}


def test_at_4_bit_prices_the_hybrid_asks_the_head_less_and_checks_fewer_positions(model):
    """A check costs 2-3.5 steps in 4 bits and the head's guesses cost four times as many steps
    as in float32 (:data:`.hybrid.PRICES`). Along the same greedy reply, one round at each token:
    priced for 4 bits, the hybrid asks the head in fewer rounds than priced for float32, which asks
    it in some, and checks fewer positions a round; unpriced, it asks in every round but the
    request's copies, and checks the most."""
    ids = model.tokenizer.chat("Write a short email to a colleague thanking them for their help.")
    reply = speculate(model, ids, HybridDraft(priced=False), 4, max_new=40).tokens
    text = list(ids) + list(reply)
    got = {}
    for name, draft in (("f32", HybridDraft(prices_of="f32")), ("q4", HybridDraft(prices_of="q4")),
                        ("whole", HybridDraft(priced=False))):
        run = draft.begin(model)
        sizes = [len(run.draft_tree(text[:t], 1, 4)) for t in range(len(ids), len(text))]
        got[name] = (run.asked / run.rounds, float(np.mean(sizes)))
    assert got["q4"][0] < got["f32"][0] <= got["whole"][0] and got["whole"][0] > 0.5, got
    assert got["q4"][1] < got["f32"][1] < got["whole"][1], got


class _Oracle:
    """A draft that proposes a fixed sequence from the end of the prompt on: a short reply, the
    end of the reply, and the model's own greedy tokens after the end (which it then accepts)."""

    name = "oracle"

    def __init__(self, n_prompt: int, future: list[int]):
        self.n_prompt, self.future = n_prompt, future

    def begin(self, model):
        return self

    def propose(self, context, k, *, temperature=0.0, top_p=1.0, rng=None):
        from specdec_playable.lm.drafts import Proposal
        at = len(context) - self.n_prompt
        return Proposal(np.asarray(self.future[at:at + k], np.int64))


def test_guesses_at_or_past_the_end_count_as_nothing(model, plain):
    """A round whose accepted guesses run past the end of the reply counts only the guesses before
    the end: the end itself and what follows it are neither accepted nor judged, and the shown
    texts of control tokens are bracketed words, never their raw spelling."""
    tok = model.tokenizer
    ids = _ids(model, SHORT["fact"])
    reply = list(plain["fact"].tokens)
    seq = ids + reply + [tok.eos_id]
    after = []
    for _ in range(3):  # the model's own greedy continuation past the end, so it is accepted
        after.append(int(np.argmax(model.forward(seq + after, model.new_cache(), logits="last").logits[-1])))
    oracle = _Oracle(len(ids), reply + [tok.eos_id] + after)
    k = len(reply) + 1 + len(after) + 2  # one round: every guess at once
    r = speculate(model, ids, oracle, k, max_new=MAX_NEW)
    assert r.tokens == tuple(reply) and r.stopped == "eos" and r.passes == 1
    # the first generated token comes from the prefill; the round proposes the rest, the end and after
    assert r.accepted == len(reply) - 1 and r.rejected == 0
    assert r.acceptance_rate == 1.0
    assert r.tokens_per_pass == pytest.approx(len(reply))  # the reply's tokens after the first, and the end
    for t in (tok.eos_id, tok.im_end):
        assert tok.token_text(t) == "[end]"
    assert tok.token_text(tok.im_start) == "[start]"
    assert all("<|" not in tok.token_text(t) for t in tok.control)
