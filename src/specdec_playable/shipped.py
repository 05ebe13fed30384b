"""Locate the project's data files (``assets/``), installed or in a checkout."""

from __future__ import annotations

from pathlib import Path

_HERE = Path(__file__).resolve()
#: Installed wheel: ``specdec_playable/assets``; source checkout: ``<repo>/assets``.
_CANDIDATES = (_HERE.parent / "assets", _HERE.parents[2] / "assets")


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
