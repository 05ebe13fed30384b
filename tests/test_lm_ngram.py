"""The n-gram table (a token n-gram draft over SmolLM2's tokenizer): its asset and its guesses."""

from __future__ import annotations

import json

import numpy as np
import pytest

from specdec_playable.shipped import asset_path
from specdec_playable.lm import get_model
from specdec_playable.lm.ngram import WIDTH, NgramDraft, load_tables
from specdec_playable.lm.score import score_text


@pytest.fixture(scope="module")
def model():
    return get_model()


def test_asset_is_small_sorted_read_only_and_documented():
    path = asset_path("lm/ngram_draft.npz")
    assert path.stat().st_size < 5e6
    t = load_tables()
    assert load_tables() is t  # loaded once per process
    for n in (1, 2, 3):
        keys = t[f"keys{n}"]
        assert keys.size > 1000 and (np.diff(keys) > 0).all()  # sorted, unique: binary search works
        assert t[f"next{n}"].size == keys.size == t[f"share{n}"].size
        assert not keys.flags.writeable
    meta = json.loads(asset_path("lm/ngram_draft.json").read_text())
    assert meta["licence"].startswith("PSF")
    assert meta["training_tokens"] > 500_000
    assert set(meta["held_out"]).isdisjoint({"train"})
    assert 0 <= meta["default_min_share"] <= 1 and meta["default_min_share"] == NgramDraft().min_share


def test_it_completes_common_python(model):
    tok = model.tokenizer
    run = NgramDraft(min_share=0.0).begin(model)
    prop = run.propose(np.array(tok.encode("    def __init__(self")), 3)
    assert len(prop) == 3 and prop.p_draft is None
    assert tok.decode(prop.tokens).startswith(",") or tok.decode(prop.tokens).startswith(")")
    assert tok.decode(run.propose(np.array(tok.encode("if __name__ == '__")), 2).tokens).startswith("main")


def test_min_share_trades_coverage_for_accuracy(model):
    ids = np.array(model.tokenizer.encode(asset_path("lm/heldout_python.txt").read_text()))
    rows = []
    for share in (0.0, 0.5):
        s = score_text(model, ids, draft=NgramDraft(min_share=share))
        has = s.draft_top >= 0
        rows.append((has.mean(), (s.draft_top == s.target_top)[has].mean()))
    (cov0, acc0), (cov5, acc5) = rows
    assert cov0 > cov5 and acc5 > acc0
    # Measured on this held-out file: coverage 0.89 / acceptance 0.30 at 0, 0.23 / 0.49 at 0.5.
    assert acc5 > 0.35


def test_refuses_a_bad_threshold():
    with pytest.raises(ValueError, match="min_share"):
        NgramDraft(min_share=1.5)


# ------------------------------------------------------------------------------- the distribution

def test_table_keeps_the_top_continuations_with_counts():
    t = load_tables()
    assert int(t["width"][0]) == WIDTH == 8
    for n in (1, 2, 3):
        widths = t[f"width{n}"].astype(np.int64)
        assert widths.min() >= 1 and widths.max() <= WIDTH
        assert t[f"cand{n}"].size == t[f"count{n}"].size == widths.sum() == t[f"start{n}"][-1]
        counts = t[f"count{n}"].astype(np.int64)
        first = t[f"start{n}"][:-1]
        # Within each context, counts never increase; the first is what propose reads.
        same = np.repeat(np.arange(widths.size), widths)
        assert (np.diff(counts)[same[1:] == same[:-1]] <= 0).all()
        assert np.array_equal(t[f"next{n}"], t[f"cand{n}"][first])
        # The stored share is the top count over the context's total (kept + rest).
        total = np.add.reduceat(counts, first) + t[f"rest{n}"]
        assert np.array_equal(t[f"share{n}"], np.floor(counts[first] / total * 255).astype(np.uint8))
    meta = json.loads(asset_path("lm/ngram_draft.json").read_text())
    assert meta["width"] == WIDTH and meta["asset_bytes"] == asset_path("lm/ngram_draft.npz").stat().st_size


def test_dropped_mass_is_what_the_docstring_says():
    # NgramDraft.candidates: the kept continuations miss 8% / 18% / 43% of the count of 3 / 2 / 1
    # token contexts (weighted by count); checked to the rounding of the stated figures.
    t = load_tables()
    for n, dropped in ((3, 0.08), (2, 0.18), (1, 0.43)):
        kept, rest = t[f"count{n}"].sum(dtype=np.int64), t[f"rest{n}"].sum(dtype=np.int64)
        assert abs(rest / (kept + rest) - dropped) < 0.005, n


def test_candidates_are_the_drafts_guesses_with_a_distribution(model):
    tok = model.tokenizer
    draft = NgramDraft(min_share=0.0)
    run = draft.begin(model)
    for text in ("    def __init__(self", "import ", "The cat sat on the", "for i in range("):
        ctx = tok.encode(text)
        c = draft.candidates(ctx, 8)
        assert 1 <= len(c) <= 8 and c.order in (1, 2, 3) and 0 < c.kept_mass <= 1
        assert c.tokens[0] == run.propose(ctx, 1).tokens[0]  # the top candidate is the proposal
        assert len(set(c.tokens.tolist())) == len(c)
        assert (np.diff(c.probs) <= 1e-12).all() and c.probs.sum() == pytest.approx(1.0)
        q = draft.distribution(ctx, model.config.vocab_size)
        assert q.sum() == pytest.approx(1.0) and np.array_equal(np.flatnonzero(q), np.sort(c.tokens))
        top2 = draft.candidates(ctx, 2)
        assert top2.tokens.tolist() == c.tokens[:2].tolist() and np.allclose(top2.probs, c.probs[:2])
        # Temperature: 0 is one-hot on the top; lower sharpens, higher flattens (entropy grows).
        assert draft.candidates(ctx, 8, temperature=0.0).probs.tolist() == [1.0] + [0.0] * (len(c) - 1)
        if len(c) > 1 and c.probs[0] < c.probs[-1] * 1e6:
            ent = [_entropy(draft.candidates(ctx, 8, temperature=t).probs) for t in (0.5, 1.0, 2.0)]
            assert ent[0] < ent[1] < ent[2]


def _entropy(p):
    p = p[p > 0]
    return float(-(p * np.log(p)).sum())


def test_candidates_follow_the_confidence_rule_and_refuse_bad_input(model):
    tok = model.tokenizer
    ctx = tok.encode("if __name__ == '__")
    assert NgramDraft(min_share=0.5).candidates(ctx, 2).confident
    assert not NgramDraft(min_share=1.0).candidates(tok.encode("The cat sat on the"), 2).confident
    unknown = np.array([model.tokenizer.eos_id])  # never a context in the table
    assert len(NgramDraft().candidates(unknown, 3)) == 0
    assert not NgramDraft().distribution(unknown, model.config.vocab_size).any()
    with pytest.raises(ValueError, match="w must be"):
        NgramDraft().candidates(ctx, 9)
    with pytest.raises(ValueError, match="temperature"):
        NgramDraft().candidates(ctx, 2, temperature=-1.0)
