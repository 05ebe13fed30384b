"""The shipped files served read-only at /assets/: the allowlist, exact bytes, content types, and
nothing else (no other file, no folder listing, no way out of assets/, no writing). Plain HTTP
against the served site; no browser."""

from __future__ import annotations

import urllib.error
import urllib.request

import pytest

from specdec_playable.data.provenance import SERVED_SUFFIXES, notes_for, provenance, served_files
from specdec_playable.app.files import CONTENT_TYPES
from specdec_playable.shipped import asset_dir, asset_path
from specdec_playable.kit import figures


def _get(url: str, method: str = "GET"):
    req = urllib.request.Request(url, method=method)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


def test_the_allowlist_is_the_data_and_notes_only():
    files = served_files()
    assert "pass_cost_h200.csv" in files and "lm/tree_vs_chain.csv" in files and "PROVENANCE.md" in files
    assert all(f.endswith(SERVED_SUFFIXES) for f in files)
    every = {p.relative_to(asset_dir()).as_posix() for p in asset_dir().rglob("*") if p.is_file()}
    left_out = every - set(files)
    assert {"lm/ngram_draft.npz", "lm/draft_head.npz", "screenshot-ep1.png"} <= left_out
    assert "lm/ep7_recorded.json.gz" in files  # compressed JSON, described on the data page
    for f in files:  # every served file says where it comes from
        assert f == "PROVENANCE.md" or notes_for(f) is not None, f


def test_every_figure_file_is_served_and_has_provenance():
    for name, files in figures.FIGURE_DATA.items():
        for f in files:
            assert f in served_files(), (name, f)
            assert f in provenance(), (name, f)


def test_served_files_are_the_shipped_bytes_with_their_type(site):
    for name in served_files():
        status, headers, body = _get(f"{site.url}/assets/{name}")
        assert status == 200, name
        assert body == asset_path(name).read_bytes(), name
        assert headers["Content-Type"] == CONTENT_TYPES["." + name.rsplit(".", 1)[-1]]
        assert headers["X-Content-Type-Options"] == "nosniff"
        status, headers, body = _get(f"{site.url}/assets/{name}", "HEAD")
        assert status == 200 and body == b"" and int(headers["Content-Length"]) == len(asset_path(name).read_bytes())


@pytest.mark.parametrize("path", [
    "/assets/", "/assets/lm", "/assets/lm/", "/assets/texts",      # folders: no listing
    "/assets/lm/ngram_draft.npz", "/assets/screenshot-ep1.png",      # shipped, not on the list
    "/assets/../pyproject.toml", "/assets/%2e%2e/pyproject.toml",  # out of the folder
    "/assets/..%2fpyproject.toml", "/assets/lm/../../pyproject.toml",
    "/assets//etc/passwd", "/assets/%2fetc%2fpasswd", "/assets/nothing.csv",
])
def test_nothing_else_is_served(site, path):
    status, _, body = _get(site.url + path)
    assert status == 404, (path, status)
    assert b"Traceback" not in body and b"[tool" not in body


def test_files_cannot_be_written(site):
    before = asset_path("pass_cost_h200.csv").read_bytes()
    for method in ("POST", "PUT", "DELETE", "PATCH"):
        status, _, _ = _get(f"{site.url}/assets/pass_cost_h200.csv", method)
        assert status == 405, method
    assert asset_path("pass_cost_h200.csv").read_bytes() == before


def test_every_file_the_data_page_names_answers(site):
    """Each file the data page lists or describes (its table, its provenance headings) is served."""
    import re

    from specdec_playable.kit.site.data import data_html

    markup = data_html()
    hrefs = set(re.findall(r'href="(\./assets/[^"#]+)"', markup))
    described = {name.strip().strip("`") for heading in re.findall(r"<h2[^>]*>([^<]+)</h2>", markup)
                 for name in heading.split(",")}
    assert "lm/ep7_recorded.json.gz" in described
    unserved = {n for n in described if n not in served_files()}
    # the drafts' binary arrays
    assert unserved == {"lm/ngram_draft.npz", "lm/draft_head.npz", "lm/memory_index.npz"}
    for name in unserved:  # said so where they are described
        assert re.search(rf"</h2><p[^>]*>Not served here: [^<]*{re.escape(name)}", markup), name
    assert {f"./assets/{name}" for name in described - unserved} <= hrefs
    for href in sorted(hrefs):
        status, headers, body = _get(f"{site.url}{href[1:]}", "HEAD")
        assert status == 200, href
    status, headers, body = _get(f"{site.url}/assets/lm/ep7_recorded.json.gz")
    assert status == 200 and headers["Content-Type"] == "application/gzip" and body[:2] == b"\x1f\x8b"
