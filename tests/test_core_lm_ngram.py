"""The learned draft (a token n-gram model over SmolLM2's tokenizer): its asset and its guesses."""

from __future__ import annotations

import json

import numpy as np
import pytest

from specdec_playable.core.assets import asset_path
from specdec_playable.core.lm import get_model
from specdec_playable.core.lm.ngram import NgramDraft, load_tables
from specdec_playable.core.lm.score import score_text


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
    assert len(prop) == 3 and prop.q is None
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
