"""The training package keeps to its room: nothing outside it imports it (serving never needs
JAX), and JAX and optax are imported only inside it, inside the functions that train, so importing
any of its modules needs numpy alone.

(``tests/test_layers.py`` checks the serving rooms; the training room is checked here.)
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "src" / "specdec_playable"
TRAIN = PKG / "train"


def _imported(path: Path) -> set[str]:
    """Absolute names of the modules ``path`` imports (relative imports resolved), anywhere in it."""
    package = list(path.relative_to(PKG.parent).with_suffix("").parts[:-1])
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            name = ".".join(base + ([node.module] if node.module else []))
            out.add(name)
            out.update(f"{name}.{a.name}" for a in node.names)
    return out


def test_nothing_outside_the_training_package_imports_it():
    for path in PKG.rglob("*.py"):
        if TRAIN in path.parents:
            continue
        bad = {n for n in _imported(path) if n == "specdec_playable.train"
               or n.startswith("specdec_playable.train.")}
        assert not bad, f"{path.relative_to(PKG)} imports {bad}"


def test_jax_and_optax_are_imported_only_in_the_training_package():
    for path in PKG.rglob("*.py"):
        tops = {n.split(".")[0] for n in _imported(path)}
        if TRAIN not in path.parents:
            bad = tops & {"jax", "optax"}
            assert not bad, f"{path.relative_to(PKG)} imports {bad}"
    in_train = set().union(*({n.split(".")[0] for n in _imported(p)} for p in TRAIN.rglob("*.py")))
    assert "jax" in in_train and "optax" in in_train  # the check above could fail: they are there


def test_the_training_package_imports_only_the_model_the_simulation_and_itself():
    allowed = ("specdec_playable.train", "specdec_playable.lm", "specdec_playable.sim",
               "specdec_playable.shipped")
    for path in TRAIN.rglob("*.py"):
        ours = {n for n in _imported(path) if n.startswith("specdec_playable")}
        bad = {n for n in ours if n != "specdec_playable"
               and not any(n == a or n.startswith(a + ".") for a in allowed)}
        assert not bad, f"{path.relative_to(PKG)} imports {bad}"


def test_importing_the_training_package_imports_no_jax():
    code = ("import sys, importlib, pkgutil\nimport specdec_playable.train as t\n"
            "for m in pkgutil.iter_modules(t.__path__):\n"
            "    if m.name != '__main__':\n"
            "        importlib.import_module('specdec_playable.train.' + m.name)\n"
            "bad = [m for m in ('jax', 'optax') if m in sys.modules]\nassert not bad, bad\n")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
