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
    meta = json.loads(asset_path("lm/tree_vs_chain.meta.json").read_text())
    assert meta["draft"]["name"] == "head"  # the README describes the draft head's table
    from specdec_playable.lm.head import head_meta

    assert meta["draft"]["sha256"] == head_meta()["sha256"]  # measured with the shipped head
    tpp = {(r["positions"], r["label"]): float(r["tokens_per_pass"]) for r in pooled}
    chains = [float(r["tokens_per_pass"]) for r in pooled if r["width"] == "1"]
    trees = [float(r["tokens_per_pass"]) for r in pooled if r["width"] != "1"]
    # "every tree decides more tokens per pass than the chain (1.61-1.79 against 1.52-1.53)"
    assert (round(min(trees), 2), round(max(trees), 2)) == (1.61, 1.79)
    assert (round(min(chains), 2), round(max(chains), 2)) == (1.52, 1.53)
    chain_q = next(float(r["q"]) for r in pooled if r["label"] == "chain k=4")
    assert 0.30 <= chain_q <= 0.37  # "kept about a third of the time"
    for npos in {r["positions"] for r in pooled}:
        group = [r for r in pooled if r["positions"] == npos]
        chain = next(r for r in group if r["width"] == "1")
        assert all(float(r["tokens_per_pass"]) > float(chain["tokens_per_pass"])
                   for r in group if r["width"] != "1")
        # The independent-acceptance closed form overestimates every tree.
        assert all(float(r["closed_form_shape_at_chain_q"]) > float(r["tokens_per_pass"])
                   for r in group if r["width"] != "1")
    # "at 8 positions 4 guesses at each of 2 levels (1.79) beat 8 guesses for the next token (1.68)"
    assert round(tpp[("8", "spine 4x2")], 2) == 1.79 and round(tpp[("8", "spine 8x1")], 2) == 1.68
    assert tpp[("8", "spine 4x2")] == max(v for (n, _), v in tpp.items() if n == "8")
    # "none of it pays here ... the best implied speedup is 0.95x (4 guesses for the next token)"
    speed = {r["label"]: float(r["est_speedup_vs_plain"]) for r in pooled}
    assert max(speed.values()) < 1 and max(speed, key=speed.get) == "spine 4x1"
    assert round(speed["spine 4x1"], 2) == 0.95
    cost = [float(r["pass_cost_vs_plain"]) for r in pooled]
    draft = [float(r["draft_ms_per_pass"]) for r in pooled]
    assert (round(min(cost), 1), round(max(cost), 1)) == (1.5, 1.9)
    assert (round(min(draft)), round(max(draft))) == (6, 28)
