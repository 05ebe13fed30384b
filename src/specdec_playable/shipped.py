"""Locate the project's data files (``assets/``) and its documentation (``docs/``), installed or
in a checkout."""

from __future__ import annotations

from pathlib import Path

_HERE = Path(__file__).resolve()
#: Installed wheel: ``specdec_playable/assets``; source checkout: ``<repo>/assets``.
_CANDIDATES = (_HERE.parent / "assets", _HERE.parents[2] / "assets")
#: The same for ``docs/`` (the wheel carries it as ``specdec_playable/docs``).
_DOC_CANDIDATES = (_HERE.parent / "docs", _HERE.parents[2] / "docs")


def asset_dir() -> Path:
    for cand in _CANDIDATES:
        if cand.is_dir():
            return cand
    raise FileNotFoundError(f"no assets directory found in {[str(c) for c in _CANDIDATES]}")


def asset_path(name: str) -> Path:
    """Path of a file in ``assets/``; refuses names that leave the folder."""
    base = asset_dir()
    path = (base / name).resolve()
    if base.resolve() not in path.parents:
        raise ValueError(f"asset name must stay inside assets/; got {name!r}")
    if not path.is_file():
        raise FileNotFoundError(f"asset {name!r} not found in {base}")
    return path


def doc_names() -> tuple[str, ...]:
    """The Markdown files of ``docs/`` (``serving.md``, ...), sorted; none if it is not there."""
    for cand in _DOC_CANDIDATES:
        if cand.is_dir():
            return tuple(sorted(p.name for p in cand.glob("*.md") if p.is_file()
                                and not p.name.startswith(".")))
    return ()


def doc_text(name: str) -> str:
    """The text of ``docs/<name>``, for a name of :func:`doc_names` only."""
    if name not in doc_names():
        raise ValueError(f"{name!r} is not one of the docs {doc_names()}")
    for cand in _DOC_CANDIDATES:
        if (cand / name).is_file():
            return (cand / name).read_text(encoding="utf-8")
    raise FileNotFoundError(name)
