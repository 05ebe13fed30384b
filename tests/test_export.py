"""Static export: what can be checked offline (files, links, pinned requirements, loud failure)."""

from __future__ import annotations

import html.parser
import importlib.metadata as md
import subprocess
import sys
import zipfile

import pytest

from specdec_playable.app import export as export_mod
from specdec_playable.episodes import EPISODES

EP1 = EPISODES[0].slug


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    return export_mod.build_wheel(export_mod.Path(__file__).resolve().parents[1],
                                  tmp_path_factory.mktemp("wheel"))


class _Links(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.hrefs = []

    def handle_starttag(self, tag, attrs):
        if tag == "a":
            self.hrefs.append(dict(attrs)["href"])


def test_wheel_carries_the_data_files(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    assert "specdec_playable/assets/pass_cost_h200.csv" in names
    assert "specdec_playable/sim/theory.py" in names
    assert "specdec_playable/kit/static/lanes.js" in names
    assert "specdec_playable/kit/static/page.css" in names


def test_export_writes_pages_index_and_pinned_requirements(tmp_path, wheel):
    files = export_mod.export(tmp_path, wheel=wheel, slugs=[EP1])
    names = {p.name for p in files}
    assert {f"{EP1}.html", f"{EP1}.js", "index.html", "requirements.txt"} <= names
    reqs = (tmp_path / "requirements.txt").read_text().split()
    assert f"param=={md.version('param')}" in reqs
    assert any(r.endswith(".whl") for r in reqs)
    worker = (tmp_path / f"{EP1}.js").read_text()
    import panel
    assert f"panel-{panel.__version__}-py3-none-any.whl" in worker
    assert "packed_wheels/specdec_playable-" in worker and f"param=={md.version('param')}" in worker
    packed = zipfile.ZipFile(tmp_path / f"{EP1}.resources.zip").namelist()
    assert any(n.startswith("packed_wheels/specdec_playable-") for n in packed)
    links = _Links()
    links.feed((tmp_path / "index.html").read_text())
    assert links.hrefs == [f"{EP1}.html"]
    assert all((tmp_path / h).is_file() for h in links.hrefs)


def test_conversion_failure_is_loud(tmp_path, wheel, monkeypatch):
    monkeypatch.setattr(export_mod, "_SCRIPT", "this is not python(\n")
    with pytest.raises(export_mod.ExportError, match="panel convert failed"):
        export_mod.export(tmp_path, wheel=wheel, slugs=[EP1])


def test_unknown_episode_and_missing_wheel_are_refused(tmp_path):
    with pytest.raises(export_mod.ExportError, match="unknown episode"):
        export_mod.export(tmp_path, slugs=["ep9_nope"])
    proc = subprocess.run([sys.executable, "-m", "specdec_playable", "export", str(tmp_path),
                           "--wheel", str(tmp_path / "missing.whl")], capture_output=True, text=True)
    assert proc.returncode == 1
    assert "wheel not found" in proc.stderr and "Traceback" not in proc.stderr
