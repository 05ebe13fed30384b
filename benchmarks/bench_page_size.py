"""How many bytes does opening each page send before the first message: its Bokeh document?

Builds every episode's page (and the index) as a server session would, serialises its
document the way Bokeh sends it, and prints a markdown table: the document's size, the
part of it that is stylesheets, the part that is JavaScript (CustomJS code and Panel
component modules), and the stylesheet strings by count. Comparing two versions of the
code: run it in each (``PYTHONPATH=<other checkout>/src``) and put the tables side by side.

Run: ``python benchmarks/bench_page_size.py``. This measures; it asserts nothing.
"""

from __future__ import annotations

import json

import panel as pn
from bokeh.core.json_encoder import serialize_json
from bokeh.document import Document

from specdec_playable.episodes import EPISODES
from specdec_playable.app.site import index_page


def _strings_by_key(obj, out: dict, key: str = "") -> None:
    if isinstance(obj, dict):
        for k, v in obj.items():
            _strings_by_key(v, out, k)
    elif isinstance(obj, list):
        for v in obj:
            _strings_by_key(v, out, key)
    elif isinstance(obj, str):
        out.setdefault(key, []).append(obj)


def measure(build) -> dict:
    doc = Document()
    doc.add_root(build().get_root(doc))
    text = serialize_json(doc.to_json())
    strings: dict[str, list[str]] = {}
    _strings_by_key(json.loads(text), strings)
    css = strings.get("stylesheets", [])
    js = strings.get("code", []) + strings.get("esm", [])
    return dict(total=len(text.encode()), css=sum(len(s.encode()) for s in css), n_css=len(css),
                js=sum(len(s.encode()) for s in js))


def main() -> None:
    pn.extension()
    pages = [("index", index_page)] + [(f"Episode {e.number}", e.page) for e in EPISODES]
    print("| page | document | stylesheets | stylesheet strings | JavaScript |")
    print("|---|---:|---:|---:|---:|")
    for name, build in pages:
        m = measure(build)
        print(f"| {name} | {m['total'] / 1000:,.1f} kB | {m['css'] / 1000:,.1f} kB | {m['n_css']} | "
              f"{m['js'] / 1000:,.1f} kB |")


if __name__ == "__main__":
    main()
