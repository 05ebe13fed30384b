"""What the pages say of the memory draft and the hybrid, computed from the runs and the index."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

import importlib

ep7_page = importlib.import_module("specdec_playable.episodes.ep7.page")
from specdec_playable.episodes.ep7.words import source_of, sources_sentence
from specdec_playable.lm.memory import META
from specdec_playable.shipped import asset_path
from specdec_playable.sim.events import Event, Events


def _run(drafted_by, kept_rounds):
    events = Events.of([Event("big", "accepted", r, r, "x", 0.0, 1.0) for r in kept_rounds])
    return SimpleNamespace(drafted_by=tuple(drafted_by), events=events)


@pytest.mark.parametrize("by, kept, want", [
    (("memory", "head", "head+memory", "request", "head"), (1, 2, 3, 4),
     "Of the 4 passes that kept a guess, the memory’s guesses were kept in 2, the head’s in 1 "
     "and guesses both drafts made in 1."),
    (("head", "head"), (2,), "Of the 1 pass that kept a guess, the head’s guesses were kept in 1."),
    (("head+memory",), (1,), "Of the 1 pass that kept a guess, guesses both drafts made were kept in 1."),
    (("memory", "memory"), (), ""),
    ((), (1,), ""),
])
def test_the_sources_sentence_counts_the_passes_that_kept_a_guess(by, kept, want):
    assert sources_sentence(_run(by, kept)) == want


def test_every_source_has_words():
    for src in ("memory", "request", "head", "head+memory", "head+request"):
        assert source_of(src) != "the draft"


def test_the_lesson_states_the_index_size_from_its_provenance():
    meta = json.loads(asset_path(META).read_text("utf-8"))
    words = ep7_page.memory_size()
    assert f"{meta['rows']:,} replies" in words
    assert f"{meta['tokens'] / 1e6:.1f} million tokens" in words
    assert words in ep7_page.lesson_html()
