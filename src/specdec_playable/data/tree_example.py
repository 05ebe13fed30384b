"""The shipped real tree step (``assets/lm/tree_step_example.json``, from
``scripts/make_tree_step_example.py``), so Episode 8 can draw one without the model."""

from __future__ import annotations

import json

from ..lm.tree_step import TreeStep
from ..shipped import asset_path

ASSET = "lm/tree_step_example.json"


def load_tree_step_example() -> tuple[TreeStep, dict]:
    """The shipped step (``assets/lm/tree_step_example.json``) and its provenance record."""
    d = json.loads(asset_path(ASSET).read_text())
    return TreeStep.from_dict(d["step"]), d["meta"]
