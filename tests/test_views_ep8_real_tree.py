"""Episode 8, part 3: the real-model tree part's words and drawing follow the measured assets.

No model and no browser: the table and the step are the shipped assets, and variants of them
built here (numbers changed so every branch of a sentence is taken).
"""

from __future__ import annotations

import re
from dataclasses import replace

import numpy as np
import pytest

from specdec_playable.data import tree_table
from specdec_playable.data.tree_example import load_tree_step_example
from specdec_playable.data.tree_table import POOLED, TreeVsChain, load_tree_vs_chain
from specdec_playable.episodes.ep8 import real_tree as v
from specdec_playable.episodes.ep8 import words as w
from specdec_playable.kit import theme
from specdec_playable.kit.tokens import token_label


def _plain(html: str) -> str:
    return re.sub(r"<[^>]+>", "", html)


@pytest.fixture(scope="module")
def table() -> TreeVsChain:
    return load_tree_vs_chain()


@pytest.fixture(scope="module")
def cost(table):
    from specdec_playable.episodes.ep8.state import cpu_curve

    return tree_table.pass_costs(table, cpu_curve())


@pytest.fixture(scope="module")
def step():
    return load_tree_step_example()[0]


def test_the_table_asset_is_complete_and_read_only(table):
    assert len(table) > 0
    pooled = table.rows()
    assert pooled.size > 0 and set(table.prompt) - {POOLED}
    # every prompt has a row for every pooled configuration
    configs = {(table.positions[i], table.label[i]) for i in pooled}
    for p in table.prompts():
        assert {(table.positions[i], table.label[i]) for i in table.rows(p)} == configs
    assert (table.tokens_per_pass >= 1).all()          # a pass always writes the target's token
    assert ((table.q >= 0) & (table.q <= 1)).all()
    assert (table.nodes_per_pass <= table.positions + 1e-9).all()
    with pytest.raises(ValueError):
        table.tokens_per_pass[0] = 9.0


def test_each_group_names_the_tree_that_wrote_the_most(table, cost):
    text = _plain(w.table_sentence(table, cost))
    for n in sorted(set(table.positions[table.rows()].tolist())):
        chain, best = tree_table.best_tree(table, n)
        assert table.width[chain] == 1 and table.width[best] > 1
        rows = [i for i in table.rows() if table.positions[i] == n and table.width[i] > 1]
        assert table.tokens_per_pass[best] == max(table.tokens_per_pass[i] for i in rows)
        if round(table.tokens_per_pass[best] - table.tokens_per_pass[chain], 2) > 0:
            assert (f"at {n} positions the best tree ({table.label[best]}) wrote "
                    f"{table.tokens_per_pass[best]:.2f}") in text
        else:
            assert f"at {n} positions no tree beat the chain" in text


def _scaled(table: TreeVsChain, tokens: float) -> TreeVsChain:
    return replace(table, tokens_per_pass=np.full(len(table), tokens))


@pytest.mark.parametrize("tokens,cost,words", [
    (1.1, 2.5, "None pays on this CPU"),
    (3.0, 1.2, "all of them pay here"),
])
def test_the_paying_verdict_follows_tokens_against_pass_cost(table, tokens, cost, words):
    assert words in w.table_sentence(_scaled(table, tokens), np.full(len(table), cost))


def test_the_paying_verdict_counts_a_mixed_table(table):
    mixed = np.where(table.width == 1, 0.5, 9.0)
    pooled = table.rows()
    paying = int((table.tokens_per_pass[pooled] > mixed[pooled]).sum())
    assert 0 < paying < pooled.size
    assert f"{paying} of {pooled.size} shapes" in w.table_sentence(table, mixed)


def test_pass_costs_price_the_candidates_checked_with_the_cpu_curve(table, cost):
    from specdec_playable.episodes.ep8.state import cpu_curve

    curve = cpu_curve()
    i = int(np.argmax(table.nodes_per_pass))
    assert cost[i] == pytest.approx(curve.time_ms(table.nodes_per_pass[i] + 1) / curve.time_ms(1)
                                    + table.draft_cost_vs_plain[i])
    assert (cost >= 1.0).all()                # a pass of more positions never costs less
    passes = cost - table.draft_cost_vs_plain
    order = np.argsort(table.nodes_per_pass)
    assert (np.diff(passes[order]) >= -1e-12).all()
    assert (table.draft_cost_vs_plain >= 0).all()


@pytest.mark.parametrize("draft", ["the draft head", "the n-gram table"])
@pytest.mark.parametrize("q, gain, words", [
    (0.1, 0.0, "so a chain rarely gets past its first guess"),
    (0.5, 0.3, "and a tree's spare candidates catch some of the guesses the chain misses"),
    (0.5, 0.0, "and spare candidates did not catch what the chain misses"),
])
def test_the_sentence_names_the_draft_and_follows_its_acceptance(table, cost, draft, q, gain, words):
    tpp = np.where(table.width == 1, 1.5, 1.5 + gain)
    t = replace(table, q=np.full(len(table), q), tokens_per_pass=tpp)
    text = _plain(w.table_sentence(t, cost, draft))
    assert f"{draft.capitalize()}'s top guess was accepted {q:.1%}" in text
    assert words in text


def test_the_shipped_verdict_matches_the_shipped_numbers(table, cost):
    pooled = table.rows()
    text = w.table_sentence(table, cost)
    pays = table.tokens_per_pass[pooled] > cost[pooled]
    assert ("None pays" in text) == (not pays.any())


def test_per_prompt_table_bolds_exactly_each_prompts_best(table):
    n = int(table.positions.max())
    html = v.prompts_html(table, n)
    for p in table.prompts():
        row = re.search(rf'<tr><td class="l">{re.escape(p)}</td>(.*?)</tr>', html).group(1)
        vals = [float(x) for x in re.findall(r"(\d+\.\d\d)", row)]
        bold = [float(x) for x in re.findall(r"<strong>(\d+\.\d\d)</strong>", row)]
        if max(vals) > min(vals):
            assert bold and all(b == max(vals) for b in bold)
        else:
            assert not bold


def test_step_sentence_counts_what_the_step_holds(step):
    text = _plain(w.step_sentence(step, "the draft head"))
    assert "the draft head offered" in text
    n = len(step.tokens)
    assert f"offered {n} candidate" in text
    assert f"one pass of {n + 1} positions" in text
    assert f"{len(step.path) + 1} token" in text
    if step.path:
        assert f"({len(step.path)} drafted" in text


def test_drawing_marks_the_verdicts_and_no_two_boxes_share_a_place(step):
    nodes = v.tree_nodes(step)
    n = len(step.tokens)
    assert len(nodes["x"]) == n + 2                    # root, the drafted nodes, the own token
    fills = nodes["fill"][1:n + 1]
    assert fills.count(theme.ACCEPTED) == len(step.path)
    assert fills.count(theme.REJECTED) == int((step.judged & ~step.accepted).sum())
    places = set(zip(nodes["x"], nodes["y"]))
    assert len(places) == n + 2
    # the own token sits one level past the accepted path's end
    end_depth = int(step.depths[step.path[-1]]) if step.path else 0
    assert nodes["x"][-1] == end_depth + 1


def test_mask_drawn_is_the_mask_the_pass_used(step):
    pic = v.RealTreePicture(step)
    d = pic.mask.data
    size = step.mask.shape[0]
    grid = np.zeros((size, size), int)
    grid[d["i"], d["j"]] = d["v"]
    assert ((grid > 0) == step.mask).all()
    rows = [0, *[i + 1 for i in step.path]]
    assert (grid[rows][step.mask[rows]] == 2).all()    # the kept path's rows stand out


def test_token_pieces_show_whitespace_and_are_escaped_in_html(step):
    assert token_label(" a\nb") == "␣a↵b"
    evil = replace(step, root_text="<script>x</script>")
    html = w.step_sentence(evil)
    assert "<script>" not in html and "&lt;script&gt;" in html


def _with_tpp(table: TreeVsChain, scale_trees: float) -> TreeVsChain:
    """``table`` with every tree's tokens per pass scaled (the chains kept)."""
    tpp = np.where(table.width > 1, table.tokens_per_pass * scale_trees, table.tokens_per_pass)
    return replace(table, tokens_per_pass=tpp)


@pytest.mark.parametrize("scale", [0.5, 1.0, 1.5])
def test_the_memory_trees_sentence_gives_both_drafts_numbers_and_whether_a_tree_beat_the_chain(
        table, scale):
    memory = _with_tpp(table, scale)  # a stand-in memory table: the head's, trees bent
    said = w.memory_trees_sentence(table, memory)
    n = max(tree_table.pooled(table))
    assert f"at {n} verified positions" in said
    for name, t in (("the memory draft", memory), ("the draft head", table)):
        chain, best = tree_table.best_tree(t, n)
        c, b = t.tokens_per_pass[chain], t.tokens_per_pass[best]
        gain = round(b, 2) - round(c, 2)
        assert f"{name}’s chain wrote {c:.2f} tokens per pass and " in said
        assert (f"its best tree ({t.label[best]}) beat it by {gain:.2f}, at {b:.2f}" if gain > 0
                else f"no tree beat it (the best, {t.label[best]}, {b:.2f})") in said
    assert w.memory_trees_sentence(table, None) == ""


def test_the_shipped_memory_trees_are_the_heads_columns_measured_with_the_memory():
    memory = v.memory_trees()
    assert memory is not None and len(memory) > 0
    meta = tree_table.load_tree_vs_chain_meta(tree_table.MEMORY_META_NAME)
    assert tree_table.draft_name(meta) == "memory"
    from specdec_playable.lm.memory import index_meta

    assert meta["draft"]["sha256"] == index_meta()["index_sha256"]
    assert set(tree_table.pooled(memory)) <= set(tree_table.pooled(load_tree_vs_chain()))
    assert ((memory.tokens_per_pass >= 1) & (memory.tokens_per_pass <= memory.positions + 1)).all()
    with pytest.raises(ValueError, match="name must be"):
        tree_table.load_tree_vs_chain("lm/other.csv")
