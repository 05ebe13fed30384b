"""One real tree step as a record (lm/tree_step.py) and the shipped example of it."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from specdec_playable.lm import get_model
from specdec_playable.lm.decode import generate
from specdec_playable.lm.drafts import PromptLookup
from specdec_playable.lm.ngram import NgramDraft
from specdec_playable.lm.prompts import PROMPTS
from specdec_playable.lm.tree import build_tree, tree_mask
from specdec_playable.data.tree_example import load_tree_step_example
from specdec_playable.lm.tree_step import TreeStep, example_tree_step

EAGER = NgramDraft(min_share=0.0)
MESSAGE = "Count from one to ten in words, separated by commas."


@pytest.fixture(scope="module")
def model():
    return get_model()


@pytest.fixture(scope="module")
def ids(model):
    return model.tokenizer.chat(MESSAGE, system=None)


def _check_consistent(model, step: TreeStep, ids) -> None:
    """Everything a drawing relies on agrees with itself and with plain greedy decoding."""
    tok = model.tokenizer
    n = step.tokens.size
    assert step.parents.shape == step.depths.shape == step.judged.shape == (n,)
    assert step.mask.shape == (n + 1, n + 1) and np.array_equal(step.mask, tree_mask(step.parents))
    past = step.prompt_tokens + len(step.reply_tokens) - 1
    assert step.positions.tolist() == [past, *(past + step.depths).tolist()]
    assert step.root == step.reply_tokens[-1] and step.root_text == tok.token_text(step.root)
    assert step.reply_text == tok.decode(list(step.reply_tokens))
    assert list(step.texts) == [tok.token_text(t) for t in step.tokens.tolist()]
    assert step.targets.shape == (n + 1,) and step.target_texts == tuple(
        tok.token_text(t) for t in step.targets.tolist())
    assert step.token == step.targets[step.path[-1] + 1 if step.path else 0]
    assert step.text == tok.token_text(step.token)
    assert step.mark == ("bonus" if step.path and not (step.parents == step.path[-1]).any()
                         else "correction" if n else "generate")
    # The accepted nodes are the path, one per depth, each under the previous one.
    assert np.flatnonzero(step.accepted).tolist() == sorted(step.path)
    assert [int(step.depths[i]) for i in step.path] == list(range(1, len(step.path) + 1))
    assert [int(step.parents[i]) for i in step.path] == [-1, *step.path][:len(step.path)]
    assert (step.judged | ~step.accepted).all()  # accepted implies judged
    # Judged: exactly the children of the root and of accepted nodes.
    up = np.array([p < 0 or step.accepted[p] for p in step.parents.tolist()], bool)
    assert np.array_equal(step.judged, up)
    # Greedy: the reply, the accepted path and the step's own token are plain greedy decoding.
    new = len(step.reply_tokens) + step.n_accepted + 1
    plain = generate(model, ids, max_new=new).tokens
    assert list(plain) == [*step.reply_tokens, *step.tokens[list(step.path)].tolist(), step.token]
    # Each judged node off the path was really rejected: the target wanted another token.
    for i in np.flatnonzero(step.judged & ~step.accepted):
        assert step.targets[step.parents[i] + 1] != step.tokens[i]


#: (width, depth, shape, after, empty). The reply starts "The number of words in the sentence is
#: 10": the draft knows no context ending in " sentence" (reply token 6), so that tree is empty.
STEPS = [(2, 3, "spine", 3, False), (2, 2, "full", 7, False), (3, 2, "spine", 6, True)]


@pytest.mark.parametrize("width, depth, shape, after, empty", STEPS)
def test_a_step_is_the_drafts_tree_verified_once(model, ids, width, depth, shape, after, empty):
    step = example_tree_step(model, ids, EAGER, width, depth, shape=shape, after=after)
    assert (step.width, step.depth, step.shape) == (width, depth, shape)
    assert len(step.reply_tokens) == after + 1 and step.prompt_tokens == len(ids)
    tree = build_tree(EAGER.begin(model), ids + list(step.reply_tokens), width, depth, shape=shape)
    assert np.array_equal(step.parents, tree.parents) and np.array_equal(step.tokens, tree.tokens)
    assert (len(tree) == 0) == empty
    if empty:  # an empty tree: a plain pass over the root
        assert step.mark == "generate" and step.path == () and step.mask.tolist() == [[True]]
    _check_consistent(model, step, ids)
    with pytest.raises(ValueError):
        step.mask[0, 0] = False  # read-only
    with pytest.raises(dataclasses.FrozenInstanceError):
        step.path = ()


def test_a_step_survives_json(model, ids):
    step = example_tree_step(model, ids, EAGER, 3, 2, after=2)
    back = TreeStep.from_dict(json.loads(json.dumps(step.to_dict())))
    assert back.to_dict() == step.to_dict()
    assert back.mask.dtype == bool and back.parents.dtype == np.int64


def test_the_shipped_example_is_a_real_step_and_reproduces(model):
    step, meta = load_tree_step_example()
    message = PROMPTS[meta["prompt"]][1]
    assert meta["message"] == message
    # What the page shows: an accepted path, a rejected node, and (the point of a tree) an accepted
    # node that is not the draft's first guess at its level, which a chain would have lost.
    assert step.n_accepted >= 1 and (step.judged & ~step.accepted).any()
    firsts = {int(p): i for i, p in reversed(list(enumerate(step.parents.tolist())))}
    assert any(firsts[int(step.parents[i])] != i for i in step.path)
    assert step.tokens.size <= 16 and step.mask.shape[0] == step.tokens.size + 1
    _check_consistent(model, step, model.tokenizer.chat(message))
    if meta["draft"].get("name") == "head":
        from specdec_playable.lm import head as lmhead

        assert meta["draft"]["sha256"] == lmhead.head_meta()["sha256"]  # drawn with the shipped head
        draft = lmhead.DraftHead()
    else:
        draft = NgramDraft(min_share=meta["draft"]["min_share"])
    again = example_tree_step(model, message, draft, meta["width"], meta["depth"],
                              shape=meta["shape"], after=meta["after"])
    # Every token, link and verdict exactly; the draft's probabilities to float32 rounding (a
    # kernel that sums in another order moves them by about 1e-6).
    want, got = step.to_dict(), again.to_dict()
    assert np.allclose(got.pop("probs"), want.pop("probs"), rtol=1e-4, atol=1e-6)
    assert got == want


def test_bad_settings_raise_clear_errors(model, ids):
    with pytest.raises(ValueError, match="after"):
        example_tree_step(model, ids, EAGER, 2, 2, after=-1)
    with pytest.raises(ValueError, match="width"):
        example_tree_step(model, ids, EAGER, 9, 2)
    with pytest.raises(ValueError, match="shape"):
        example_tree_step(model, ids, EAGER, 2, 2, shape="ring")
    with pytest.raises(ValueError, match="candidates"):
        example_tree_step(model, ids, PromptLookup(), 2, 2)
    with pytest.raises(ValueError, match="at least one token"):
        example_tree_step(model, [], EAGER, 2, 2)
    short = model.tokenizer.chat("What is the capital of France?", system=None)
    reply = generate(model, short, max_new=32)
    assert reply.stopped == "eos"  # "The capital of France is Paris." and end-of-sequence
    n = len(reply.tokens)  # reply token n is end-of-sequence: no step may start from it or later
    for after in (n, n + 2):
        with pytest.raises(ValueError, match="reply ends"):
            example_tree_step(model, short, EAGER, 2, 2, after=after)
    assert example_tree_step(model, short, EAGER, 2, 2, after=n - 1).root == reply.tokens[n - 1]
