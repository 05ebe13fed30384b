"""The shipped chain-vs-tree measurements (assets/lm/tree_vs_chain.csv) and the docs' words on them."""

from __future__ import annotations

import csv
import json
import math

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


def test_what_the_docs_say_about_trees_and_chains():
    """docs/performance.md's and docs/real-model.md's words on the table, computed from it: past
    4 positions the best tree is a dynamic one, at 4 the chain is a little ahead, the closed form
    overestimates every fixed-shape tree, every shape pays and which pays most, with the figures
    the docs quote."""
    from pathlib import Path

    from specdec_playable.lm.head import head_meta

    docs = Path(__file__).resolve().parents[1] / "docs"
    perf = " ".join((docs / "performance.md").read_text().split())
    real = " ".join((docs / "real-model.md").read_text().split())
    rows = _rows()
    pooled = [r for r in rows if r["prompt"] == "all"]
    meta = json.loads(asset_path("lm/tree_vs_chain.meta.json").read_text())
    assert meta["draft"]["name"] == "head" and meta["draft"]["sha256"] == head_meta()["sha256"]
    assert f"(sha256 `{meta['draft']['sha256'][:8]}…`)" in perf
    row = {r["label"]: r for r in pooled}
    chains = {int(r["positions"]): float(r["tokens_per_pass"]) for r in pooled if r["width"] == "1"}
    best = {}
    for r in pooled:
        n, v = int(r["positions"]), float(r["tokens_per_pass"])
        if r["width"] != "1" and v > best.get(n, ("", 0.0))[1]:
            best[n] = (r["label"], v)
    # "Past 4 positions the best tree is a dynamic one; at 4 the chain is a little ahead."
    assert all(best[n][0].startswith("dynamic") and best[n][1] > chains[n] for n in (6, 8))
    assert best[4][0] == "dynamic 2x2" and 0 < chains[4] - best[4][1] < 0.1
    assert (f"({best[6][1]:.2f} and {best[8][1]:.2f} at 6 and 8, against the chain's "
            f"{chains[6]:.2f} and {chains[8]:.2f})") in real
    assert f"({chains[4]:.2f} against {best[4][1]:.2f})" in real
    # a tree that spends every position on the next token (4x1, 6x1, 8x1) decides fewer than the chain
    for n in (4, 6, 8):
        assert float(row[f"spine {n}x1"]["tokens_per_pass"]) < chains[n]
    # "The closed form overestimates every fixed-shape tree" (a dynamic tree's shape is chosen per
    # pass, so it has none: NaN).
    for r in pooled:
        if r["width"] != "1":
            cf = float(r["closed_form_shape_at_chain_q"])
            assert math.isnan(cf) if r["shape"] == "dynamic" else cf > float(r["tokens_per_pass"])
    # "every shape pays, the 2x4 spine most (1.60x)", "against the k = 4 chain's 1.51x: it drafts
    # for about as long as that chain (7.6 against 8.0 ms a pass) and decides 2.35 tokens a pass
    # against 2.09"
    speed = {label: float(r["est_speedup_vs_plain"]) for label, r in row.items()}
    top = max(speed, key=speed.get)
    assert min(speed.values()) > 1.0
    assert f"every shape pays, the {top.split()[1]} {top.split()[0]} most ({speed[top]:.2f}x)" in perf
    t, c = row[top], row["chain k=4"]
    assert (f"{speed[top]:.2f}x against the k = 4 chain's {speed['chain k=4']:.2f}x: it drafts for "
            f"about as long as that chain ({float(t['draft_ms_per_pass']):.1f} against "
            f"{float(c['draft_ms_per_pass']):.1f} ms a pass) and decides "
            f"{float(t['tokens_per_pass']):.2f} tokens a pass against {chains[4]:.2f}") in real
    assert abs(float(t["draft_ms_per_pass"]) - float(c["draft_ms_per_pass"])) < 0.1 * float(c["draft_ms_per_pass"])
