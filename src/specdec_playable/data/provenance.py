"""The shipped files a visitor may download, and where each comes from (``assets/PROVENANCE.md``).

:func:`served_files` is the allowlist the site serves read-only (``app/files.py``): every file
under ``assets/`` whose name ends in one of :data:`SERVED_SUFFIXES`, nothing hidden, nothing else
(the model's tables, recordings and pictures are left out). :func:`provenance` reads
``PROVENANCE.md`` once: for each file it names, the text of its section.
"""

from __future__ import annotations

import re
from functools import cache
from types import MappingProxyType

from ..shipped import asset_dir, asset_path

#: What may be downloaded: tables and text (and their metadata), and JSON records kept
#: compressed (Episode 7's recorded runs); never code or binaries.
SERVED_SUFFIXES = (".csv", ".json", ".md", ".txt", ".json.gz")
PROVENANCE = "PROVENANCE.md"
#: The texts' own notes (Episode 4's texts keep theirs beside them).
_NOTES = {"texts/": "texts/README.md"}
_HEADING = re.compile(r"^## (.+)$", re.MULTILINE)


@cache
def served_files() -> tuple[str, ...]:
    """Every file the site serves, as paths inside ``assets/`` (``lm/tree_vs_chain.csv``), sorted."""
    base = asset_dir()
    out = []
    for path in base.rglob("*"):
        rel = path.relative_to(base)
        if (path.is_file() and path.name.endswith(SERVED_SUFFIXES)
                and not any(part.startswith(".") for part in rel.parts)):
            out.append(rel.as_posix())
    return tuple(sorted(out))


@cache
def provenance() -> MappingProxyType:
    """File (path inside ``assets/``) -> the Markdown of the ``PROVENANCE.md`` section naming it."""
    text = asset_path(PROVENANCE).read_text(encoding="utf-8")
    heads = list(_HEADING.finditer(text))
    out = {}
    for i, h in enumerate(heads):
        body = text[h.end(): heads[i + 1].start() if i + 1 < len(heads) else len(text)].strip()
        for name in h.group(1).split(","):
            out[name.strip().strip("`")] = body
    return MappingProxyType(out)


def notes_for(name: str) -> str | None:
    """The file that documents ``name``: its section of PROVENANCE.md, or its folder's README."""
    if name in provenance():
        return PROVENANCE
    for prefix, notes in _NOTES.items():
        if name.startswith(prefix):
            return notes
    return None


def file_size(name: str) -> int:
    """Bytes of the served file ``name``."""
    if name not in served_files():
        raise ValueError(f"{name!r} is not a served file")
    return asset_path(name).stat().st_size
