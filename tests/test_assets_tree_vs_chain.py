"""The shipped chain-vs-tree measurements (assets/lm/tree_vs_chain.csv) and the README's words on them."""

from __future__ import annotations

import csv
import json

from specdec_playable.shipped import asset_path


def _rows():
    with asset_path("lm/tree_vs_chain.csv").open() as fh:
        return list(csv.DictReader(fh))


def test_the_csv_has_every_configuration_and_its_provenance():
    rows = _rows()
    meta = json.loads(asset_path("lm/tree_vs_chain.meta.json").read_text())
    labels = {label for group in meta["groups"].values() for label in group}
    assert {r["label"] for r in rows} == labels
    assert {r["prompt"] for r in rows} == {"all", *meta["prompts"]}
    assert len(rows) == len(labels) * (len(meta["prompts"]) + 1)
    for key in ("date_utc", "machine", "model", "draft", "command"):
        assert meta[key]
    for r in rows:  # a pass decides 1 token plus at most one per level, never more than it verifies
        tpp, nodes = float(r["tokens_per_pass"]), float(r["nodes_per_pass"])
        assert 1.0 <= tpp <= 1.0 + int(r["depth"]) and nodes <= int(r["positions"])


def test_what_the_readme_says_about_trees_and_chains():
    pooled = [r for r in _rows() if r["prompt"] == "all"]
    for npos in {r["positions"] for r in pooled}:
        group = [r for r in pooled if r["positions"] == npos]
        chain = next(r for r in group if r["width"] == "1")
        trees = [r for r in group if r["width"] != "1"]
        tpp = {r["label"]: float(r["tokens_per_pass"]) for r in group}
        # At equal verified positions every tree decides more tokens per pass than the chain...
        assert all(tpp[r["label"]] > tpp[chain["label"]] for r in trees)
        # ... and the widest tree the most.
        widest = max(trees, key=lambda r: int(r["width"]))
        assert tpp[widest["label"]] == max(tpp.values())
        # None pays on this CPU: each pass costs more plain steps than the tokens it decides.
        assert all(float(r["est_speedup_vs_plain"]) < 1 for r in group)
        # The independent-acceptance closed form overestimates the wide trees.
        assert float(widest["closed_form_shape_at_chain_q"]) > tpp[widest["label"]]
