"""The layers keep to their rooms: imports run one way, no data is read on import, and the
browser code and styles live in kit/static with the theme's colours.

Static checks of the source tree (no browser, no server).
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from specdec_playable.kit import resources, theme
from specdec_playable.kit.lanes.controls import PLAYER_ARGS

PKG = Path(__file__).resolve().parents[1] / "src" / "specdec_playable"
STATIC = PKG / "views" / "static"
HEX = re.compile(r"#[0-9a-fA-F]{6}\b|#[0-9a-fA-F]{3}\b")


def _modules(folder: str) -> list[Path]:
    return sorted((PKG / folder).rglob("*.py"))


def _imports(path: Path) -> set[str]:
    """Absolute names of the modules ``path`` imports (relative imports resolved)."""
    rel = path.relative_to(PKG.parent).with_suffix("")
    package = list(rel.parts[:-1]) if rel.name != "__init__" else list(rel.parts[:-1])
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                name = ".".join(base + ([node.module] if node.module else []))
                out.add(name)
                out.update(f"{name}.{a.name}" for a in node.names)
            else:
                out.add(node.module)
    return out


#: What each room may import from the package (besides itself and ``specdec_playable.shipped``),
#: and which libraries it may import: sim <- lm <- data <- runtime <- kit <- episodes <- app.
#: No exception: nothing below the app imports it, and no arrow runs up.
P = "specdec_playable"
ORDER = ("sim", "lm", "data", "runtime", "kit", "episodes", "app")
ROOMS = {
    "sim": ((), {"numpy"}),
    # llvmlite is numba's own code generator (installed with it): lm.kernel writes its tiles in it
    "lm": (("sim",), {"numpy", "gguf", "tokenizers", "numba", "llvmlite"}),
    "data": (("sim", "lm"), {"numpy"}),
    "runtime": (("sim", "lm", "data"), {"numpy"}),
    "kit": (("sim", "lm", "data", "runtime"), None),
    "episodes": (("sim", "lm", "data", "runtime", "kit"), None),
    "app": (("sim", "lm", "data", "runtime", "kit", "episodes"), None),
    # Beside the house: training the draft head (JAX, the train extra); nothing imports it
    # (tests/test_train_rooms.py), and it starts worker processes to write replies.
    "train": (("sim", "lm"), {"numpy", "jax", "optax"}),
}
#: The rooms that compute (each runs in a notebook, a CLI, a test or a worker): they start no
#: thread and no process, and coordinate none (a lock, e.g. for a lazily loaded model, is fine).
COMPUTE = ("sim", "lm", "data")
#: What starting or coordinating a thread or a process looks like in code.
CONCURRENCY = {"threading.Thread", "threading.Condition", "threading.Timer", "threading.Barrier",
               "concurrent.futures", "multiprocessing", "subprocess", "os.fork", "ThreadPoolExecutor",
               "ProcessPoolExecutor", "asyncio"}
STDLIB = set(sys.stdlib_module_names)


def _allowed(path: Path) -> tuple[tuple[str, ...], set[str] | None]:
    room = path.relative_to(PKG).parts[0]
    inner, libs = ROOMS[room]
    return (room, "shipped", *inner), libs


def test_every_room_is_ruled_and_in_order():
    rooms = {p.name for p in PKG.iterdir() if p.is_dir() and (p / "__init__.py").is_file()}
    assert rooms == set(ROOMS) == set(ORDER) | {"train"}
    for i, room in enumerate(ORDER):  # a room may import only the rooms below it
        assert set(ROOMS[room][0]) == set(ORDER[:i]), room


def test_no_module_below_the_app_imports_it():
    for room in [*ORDER[:-1], "train"]:
        for path in _modules(room):
            up = [n for n in _imports(path) if n == f"{P}.app" or n.startswith(f"{P}.app.")]
            assert not up, f"{path.relative_to(PKG)} imports the app: {up}"


def test_an_episode_imports_no_other_episode():
    for path in _modules("episodes"):
        parts = path.relative_to(PKG).parts
        if len(parts) < 3:  # the registry and its navigation list the episodes
            continue
        own, nav = f"{P}.episodes.{parts[1]}", f"{P}.episodes.nav"  # nav: the series' order
        others = [n for n in _imports(path) if n.startswith(f"{P}.episodes.")
                  and not any(n == m or n.startswith(m + ".") for m in (own, nav))]
        assert not others, f"{path.relative_to(PKG)} imports another episode: {others}"


@pytest.mark.parametrize("room", sorted(ROOMS))
def test_imports_run_one_way(room):
    for path in _modules(room):
        inner, libs = _allowed(path)
        for name in _imports(path):
            if name == P:
                continue  # `from .. import lm` names the package and the module it holds
            if name.startswith(P + "."):
                rest = name[len(P) + 1:]
                # A package named on the way to an allowed module (``from ..serve import interface``)
                ok = any(rest == r or rest.startswith(r + ".") or r.startswith(rest + ".")
                         for r in inner)
                assert ok, f"{path.relative_to(PKG)} imports {name}; {room} may import {inner}"
            elif libs is not None:
                top = name.split(".")[0]
                assert top in STDLIB or top in libs, f"{path.relative_to(PKG)} imports {name}"


def _dotted(node: ast.AST) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


def _concurrency(tree: ast.AST) -> list[tuple[int, str]]:
    """``(line, name)`` wherever ``tree`` imports or names a way to start or coordinate a
    thread or a process."""
    out = []
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Attribute):
            names = [_dotted(node)]
        out += [(node.lineno, n) for n in names
                if any(n == c or n.startswith(c + ".") for c in CONCURRENCY)]
    return out


@pytest.mark.parametrize("room", COMPUTE)
def test_the_computing_rooms_start_no_thread_and_no_process(room):
    for path in _modules(room):
        hits = _concurrency(ast.parse(path.read_text()))
        assert not hits, f"{path.relative_to(PKG)} starts or coordinates threads or processes: {hits}"


@pytest.mark.parametrize("code", [
    "import threading\nthreading.Thread(target=print).start()\n",
    "from concurrent.futures import ThreadPoolExecutor\n",
    "import subprocess\n",
    "import threading\ncv = threading.Condition()\n",
    "from multiprocessing import Process\n",
])
def test_the_concurrency_check_sees_a_thread_or_a_process(code):
    assert _concurrency(ast.parse(code))
    assert not _concurrency(ast.parse("import threading\nlock = threading.Lock()\n"))


def test_no_module_imports_a_private_name_of_another():
    for path in PKG.rglob("*.py"):
        here = ".".join(path.relative_to(PKG.parent).with_suffix("").parts)
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module != "__future__":
                names = [a.name for a in node.names]
                mod = node.module or ""
                bad = [n for n in names if n.startswith("_") and n != "__version__"]
                bad += [mod] if any(part.startswith("_") for part in mod.split(".")) else []
                assert not bad, f"{here} imports private {bad} from {mod or '.'}"
            elif isinstance(node, ast.Import):
                bad = [a.name for a in node.names
                       if a.name.startswith(P) and any(s.startswith("_") for s in a.name.split("."))]
                assert not bad, f"{here} imports private {bad}"


def test_the_episodes_reach_no_private_attribute_of_bokeh_or_serving():
    for room in ("episodes",):
        for path in _modules(room):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Constant) and node.value in ("_session", "_document"):
                    pytest.fail(f"{path.relative_to(PKG)}:{node.lineno} reads {node.value!r}")


def test_the_lane_timeline_needs_no_bokeh():
    code = ("import sys\nfrom specdec_playable.kit.lanes import Box, Timeline, bar_columns\n"
            "bad = [m for m in ('panel', 'bokeh') if m in sys.modules]\nassert not bad, bad\n")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_importing_every_module_reads_no_data_file():
    # An audit hook sees every file the interpreter opens; only code may be opened while the
    # package is imported: Python's own files, and the compiled-code cache folders (__pycache__)
    # that Python and numba (lm.kernel's cache=True looks for its machine code there) keep.
    code = f"""
import importlib, pkgutil, sys
opened = []
def hook(event, args):
    if (event == "open" and isinstance(args[0], str) and not args[0].endswith((".py", ".pyc"))
            and "/__pycache__" not in args[0]):
        opened.append(args[0])
import specdec_playable
sys.addaudithook(hook)
for m in pkgutil.walk_packages(specdec_playable.__path__, "specdec_playable."):
    if not m.name.endswith("__main__"):  # that one runs the command line
        importlib.import_module(m.name)
ours = [p for p in opened if p.startswith({str(PKG.parent)!r}) or "/assets/" in p]
assert not ours, ours
"""
    subprocess.run([sys.executable, "-c", code], check=True, timeout=300)


def test_no_colour_is_written_outside_the_theme():
    for path in PKG.rglob("*"):
        if path.suffix not in (".py", ".css", ".js", ".html") or path.name == "theme.py":
            continue
        hits = HEX.findall(path.read_text())
        assert not hits, f"{path.relative_to(PKG)} writes colours {hits}; name them in kit/theme.py"


def test_every_css_variable_used_is_defined_by_the_theme():
    defined = set(re.findall(r"(--sdp-[a-z-]+):", theme.css_variables()))
    for path in [*STATIC.glob("*.css"), *(PKG / "episodes").rglob("*.css")]:
        used = set(re.findall(r"var\((--sdp-[a-z-]+)\)", path.read_text()))
        assert used <= defined, f"{path.name} uses undefined {sorted(used - defined)}"
    # A stylesheet carries the values of the properties its files use, so HTML built in
    # Python styles itself through classes, never through a var() of its own.
    for path in [*(PKG / "kit").rglob("*.py"), *(PKG / "episodes").rglob("*.py")]:
        if path.name != "resources.py":
            assert "var(--sdp-" not in path.read_text(), path.name


def test_pages_and_views_declare_the_theme_once_at_their_root():
    from specdec_playable.episodes import EPISODES
    from specdec_playable.kit.deferred import DEFERRED_CLASS

    everything = resources.theme_css()
    assert set(re.findall(r"(--sdp-[a-z-]+):", everything)) >= {"--sdp-ink", "--sdp-font"}
    for ep in EPISODES:
        root = ep.page()
        assert root.stylesheets[0] == everything
        # The episode's view is one of the page's children (or the child of a slot filled after
        # the first paint, kit/deferred.py), and declares the theme again.
        children = [c for obj in root.objects
                    for c in (obj.objects if DEFERRED_CLASS in obj.css_classes else [obj])]
        assert sum(obj.stylesheets[:1] == [everything] for obj in children) == 1
    css = resources.stylesheet("page.css", "relay.css")
    assert "/*" not in css and "--sdp-ink:" not in css and ".ep2-bad" in css and ".sdp-title" in css
    assert resources.stylesheet("page.css", "relay.css") is css  # built once per process
    ep4 = resources.stylesheet("specdec_playable.episodes.ep4:ep4.css")
    assert ".ep4-" in ep4 and "/*" not in ep4  # an episode's own stylesheet, beside its code
    for bad in ("../theme.py", "specdec_playable.episodes.ep4:../page.py", "os:path.py", ":"):
        with pytest.raises(ValueError):
            resources.text(bad)


def _declared_globals(js: str) -> set[str]:
    names = set()
    for block in re.findall(r"/\*\s*global\s+([^*]*)\*/", js):
        names.update(n.strip() for n in block.split(",") if n.strip())
    return names


def test_the_lane_script_declares_exactly_the_arguments_python_passes():
    declared = _declared_globals(resources.text("lanes.js"))
    # cb_obj comes from Bokeh; sdp_frame from the frame hook appended to the script.
    assert declared == set(PLAYER_ARGS) | {"cb_obj", "sdp_frame"}


def test_the_relay_frame_hook_uses_only_the_player_scope_and_its_own_arguments():
    from specdec_playable.episodes.ep2.view import RelayView

    view = RelayView()
    code = view.player.buttons.script.code
    assert resources.script("relay_frame.js") in code and "function sdp_frame(t)" in code
    declared = _declared_globals(resources.text("relay_frame.js"))
    hook_args = set(view.player.buttons.script.args) - set(PLAYER_ARGS)
    scope = {"state", "sdp_total", "findDeep"}  # what lanes.js defines at its top for a hook
    lanes = resources.text("lanes.js")
    assert all(re.search(rf"^(const|function) {name}\b", lanes, re.M) for name in scope)
    assert declared == scope | hook_args


def _docstrings(tree: ast.AST) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = node.body[0] if node.body else None
            if isinstance(doc, ast.Expr) and isinstance(doc.value, ast.Constant):
                out.add(id(doc.value))
    return out


def test_no_python_string_holds_more_than_a_few_lines_of_css_or_javascript():
    # A line of CSS or JavaScript ends in "{", "}" or ";"; prose in docstrings is not code.
    code_line = re.compile(r"[{};]\s*$")
    for path in PKG.rglob("*.py"):
        tree = ast.parse(path.read_text())
        docs = _docstrings(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
                lines = [ln for ln in node.value.splitlines() if code_line.search(ln)]
                assert len(lines) <= 2, (f"{path.relative_to(PKG)}:{node.lineno} holds code in a "
                                         f"string: {lines[:3]}")


def test_ci_lints_every_static_file():
    root = Path(__file__).resolve().parents[1]
    scripts = json.loads((root / "tooling" / "package.json").read_text())["scripts"]
    assert "src/specdec_playable/kit/static" in scripts["lint:js"]
    assert "src/specdec_playable/kit/static/*.css" in scripts["lint:css"]
    assert "src/specdec_playable/episodes/*/*.css" in scripts["lint:css"]
    assert "npm run --silent lint" in (root / ".ci" / "run").read_text()
    assert (root / "tooling" / "package-lock.json").is_file()


#: Longest function body (lines, its docstring not counted) and most positional parameters
#: (``self`` and ``cls`` not counted) in the package: a longer one is split into named steps.
BODY_MAX, POSITIONAL_MAX = 60, 6


def test_functions_are_short_and_take_few_positional_arguments():
    long, wide = [], []
    for path in PKG.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            where = f"{path.relative_to(PKG)}:{node.lineno} {node.name}"
            first = node.body[0]
            doc = (first.end_lineno - first.lineno + 1
                   if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
                   and isinstance(first.value.value, str) else 0)
            if node.end_lineno - node.lineno + 1 - doc > BODY_MAX:
                long.append(where)
            names = [a.arg for a in node.args.posonlyargs + node.args.args]
            if len([n for n in names if n not in ("self", "cls")]) > POSITIONAL_MAX:
                wide.append(where)
    assert not long, f"functions over {BODY_MAX} lines: {long}"
    assert not wide, f"functions over {POSITIONAL_MAX} positional parameters: {wide}"
