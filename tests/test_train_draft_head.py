"""The draft head's training script runs end to end on a tiny corpus, and its loss falls.

Seeded (corpus draw, initial weights, batch order), so the run is the same every time. JAX and
optax are in the ``test`` extra (``bash scripts/bootstrap.sh test``), so CI runs this; it skips
only where they are not installed.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]


def _script():
    pytest.importorskip("jax", reason="jax is not installed (pip install -e '.[train]')")
    pytest.importorskip("optax", reason="optax is not installed (pip install -e '.[train]')")
    spec = importlib.util.spec_from_file_location("train_draft_head",
                                                  ROOT / "scripts" / "train_draft_head.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["train_draft_head"] = mod
    spec.loader.exec_module(mod)
    return mod


def test_a_tiny_training_run_lowers_the_loss(tmp_path):
    script = _script()
    args = script.parse_args(["--tiny", "--seed", "3", "--work", str(tmp_path), "--no-write"])
    out = script.run(args)
    loss = np.array([h["loss"] for h in out["history"]])
    assert loss.size == args.steps and np.isfinite(loss).all()
    assert loss[-10:].mean() < 0.7 * loss[:5].mean(), loss
    # The weights it would ship load in the numpy serving code.
    from specdec_playable.lm.head import weights_from_arrays

    w = weights_from_arrays(out["arrays"])
    assert w.vocab.size == args.n_vocab and w.attention
    # Resuming from the last checkpoint repeats nothing and gives the same weights.
    again = script.run(args)
    assert len(again["history"]) == args.steps
    assert all(np.array_equal(out["arrays"][k], again["arrays"][k]) for k in out["arrays"])
