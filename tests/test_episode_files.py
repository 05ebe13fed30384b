"""Every built episode has a servable file named after its slug, and pages build without a server."""

from __future__ import annotations

import re
from pathlib import Path

import panel as pn
import pytest

from specdec_playable.app import site
from specdec_playable.episodes import EPISODES

ROOT = Path(__file__).resolve().parents[1]


def test_episode_files_match_the_registry():
    files = sorted(p.stem for p in (ROOT / "episodes").glob("ep*.py"))
    assert files == sorted(e.slug for e in EPISODES)
    numbers = [e.number for e in EPISODES]
    assert numbers == sorted(numbers) and len(set(numbers)) == len(numbers)
    for e in EPISODES:
        assert re.fullmatch(rf"ep{e.number}_[a-z0-9_]+", e.slug)


@pytest.mark.parametrize("ep", EPISODES, ids=lambda e: e.slug)
def test_each_page_builds_fresh_objects_and_renders_to_html(ep, tmp_path):
    a, b = ep.page(), ep.page()
    assert a is not b
    out = tmp_path / f"{ep.slug}.html"
    a.save(out, embed=False)
    html = out.read_text()
    # The page's own heading travels inside the embedded document.
    assert f"Episode {ep.number}" in html
    assert "Bokeh" in html and "docs_json" in html


def test_site_serves_an_index_and_every_episode():
    apps = site.applications()
    assert set(apps) == {"/", *site.COURSE_PAGES, *(e.slug for e in EPISODES)}
    page = apps["/"]()
    assert isinstance(page, pn.viewable.Viewable)
