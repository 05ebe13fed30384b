"""Shared fixtures: a served site and a Debian-Chromium browser for the browser tier.

Browser tests are required, not optional: if Chromium is missing they fail with
a message saying how to install it (`apt-get install chromium`), they never skip.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from hypothesis import settings as _hypothesis_settings

# No Hypothesis test may fail for being slow: the suite runs two workers on two cores, beside
# whatever else the machine does (a test that states a deadline of its own keeps it).
_hypothesis_settings.register_profile("suite", deadline=None)
_hypothesis_settings.load_profile("suite")

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "test-artifacts"

CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]


#: Files whose tests load or run the real model, train the head or serve a site over HTTP, for
#: seconds each: marked ``slow``, so ``pytest -m "not browser and not slow"`` (the inner loop,
#: docs/testing.md) leaves them out. A few slow tests elsewhere carry the mark themselves.
SLOW_FILES = frozenset({
    "test_bad_queries", "test_cli_generate", "test_data_measured", "test_export", "test_lm_compare",
    "test_lm_decode", "test_lm_head", "test_lm_kernel_model", "test_lm_q4_model", "test_lm_race",
    "test_lm_tree", "test_serve_threads", "test_sessions", "test_state_ep4", "test_train_draft_head",
    "test_train_pipeline",
})


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.path.stem in SLOW_FILES:
            item.add_marker(pytest.mark.slow)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def chromium_path() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if not path:
        pytest.fail("Chromium is required for the browser tests: apt-get install -y chromium",
                    pytrace=False)
    return path


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    return {**browser_type_launch_args, "executable_path": chromium_path(), "args": CHROMIUM_ARGS}


@pytest.fixture(scope="session")
def artifacts() -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS


class Server:
    """A `specdec-playable serve` subprocess on a free loopback port (by default without loading
    the model at start: a test that runs the model loads it on its first run)."""

    def __init__(self, *extra: str, log_path: Path, model_at_start: bool = False):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = log_path
        self._log = open(log_path, "w")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "specdec_playable", "serve", "--port", str(self.port), *extra,
             *(() if model_at_start else ("--no-model-at-start",))],
            stdout=self._log, stderr=subprocess.STDOUT, cwd=ROOT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{self.url}/liveness", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"server did not start; log:\n{self.log()}")
            time.sleep(0.2)

    def log(self) -> str:
        self._log.flush()
        return self.log_path.read_text()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        self._log.close()


@pytest.fixture(scope="session")
def site(artifacts):
    """The whole site served once for the session."""
    # One site per pytest-xdist worker (each worker is a session of its own): a log each.
    server = Server(log_path=artifacts / f"server-{os.environ.get('PYTEST_XDIST_WORKER', 'main')}.log")
    yield server
    server.stop()


def wait_for_bokeh(page, name: str | None = None, timeout: float = 30_000) -> None:
    """Wait until the Bokeh document is rendered, with every part built (and, if given, a named
    model exists).

    Parts further down a page are built when the visitor scrolls near them
    (``kit/deferred.py``); like a reader, this scrolls to each one that is still loading
    until none is left, then back to the top.
    """
    page.wait_for_function("() => window.Bokeh && Bokeh.documents.length > 0", timeout=timeout)
    reveal_all(page, timeout=timeout)
    if name:
        page.wait_for_function(
            "n => Bokeh.documents[0].get_model_by_name(n) !== null", arg=name, timeout=timeout)


_NEAR_MARKS = """() => {
  const out = [];
  const walk = (node) => {
    if (node.classList && node.classList.contains('sdp-near-mark')) out.push(node);
    if (node.shadowRoot) walk(node.shadowRoot);
    for (const child of node.children || []) walk(child);
  };
  walk(document.body);
  return out;
}"""


#: Every slot a page fills after its first paint (CSS class ``sdp-deferred``) has its part.
_FIRST_PAINT_PARTS_IN = """() => {
  for (const m of Bokeh.documents[0].all_models) {
    if ((m.css_classes || []).includes('sdp-deferred') && m.children && m.children.length === 0)
      return false;
  }
  return true;
}"""


#: How many parts of the page wait for the visitor to scroll near them: slots (CSS class
#: ``sdp-near``) that still hold their mark, a component with a ``near`` flag.
_NEAR_PENDING = """() => {
  let n = 0;
  for (const m of Bokeh.documents[0].all_models) {
    if (!(m.css_classes || []).includes('sdp-near') || !m.children) continue;
    const first = m.children[0];
    if (first && first.data && typeof first.data.near === 'boolean') n++;
  }
  return n;
}"""


def near_marks(page) -> int:
    """How many parts of the page are still waiting for the visitor to scroll near them."""
    return page.evaluate(_NEAR_PENDING)


def reveal_all(page, timeout: float = 30_000) -> None:
    """Wait for the parts built after the first paint, then scroll to every part still loading
    until all are built, and back to the top."""
    deadline = time.monotonic() + timeout / 1000
    page.wait_for_function(_FIRST_PAINT_PARTS_IN, timeout=timeout)
    while page.evaluate(f"""() => {{ const m = ({_NEAR_MARKS})();
                                      if (m.length) m[0].scrollIntoView({{block: 'center'}});
                                      return ({_NEAR_PENDING})(); }}"""):
        if time.monotonic() > deadline:
            raise AssertionError(f"{near_marks(page)} parts of the page were never built")
        page.wait_for_timeout(100)
    # The server has built every part; wait for the browser to draw them in place of the marks.
    page.wait_for_function(f"() => ({_NEAR_MARKS})().length === 0", timeout=timeout)
    page.evaluate("() => window.scrollTo(0, 0)")


def slider_handle(page, i: int):
    """The ``i``-th slider handle of the page (document order)."""
    return page.locator(".noUi-handle").nth(i)


def wait_data(page, name: str, js_condition: str, timeout: float = 10_000) -> None:
    """Wait until ``js_condition`` (with ``d`` the named source's data) holds in the browser."""
    page.wait_for_function(
        f"n => {{ const d = Bokeh.documents[0].get_model_by_name(n).data; return {js_condition}; }}",
        arg=name, timeout=timeout)


def model_data(page, name: str) -> dict:
    """The data of a named ColumnDataSource as the browser holds it (arrays as lists)."""
    return page.evaluate(
        """n => { const d = Bokeh.documents[0].get_model_by_name(n).data; const o = {};
                  for (const k in d) o[k] = Array.from(d[k]); return o; }""", name)


class _Errors(list):
    """Console errors, and (``failed``) the requests that failed beside them."""


def _collect(page, errors: _Errors) -> None:
    """Append ``page``'s console errors and page errors to ``errors``, and its failed requests to
    ``errors.failed``: a failed load's console line does not say what failed, so the failed
    requests are kept beside the errors (not as errors: a stylesheet that does not load logs
    nothing) and named with them."""
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("requestfailed", lambda r: errors.failed.append(f"{r.url[:200]} ({r.failure})"))


@pytest.fixture
def console(page):
    """Collects console errors and page errors of the test's page."""
    errors = _Errors()
    errors.failed = []
    _collect(page, errors)
    return errors


@pytest.fixture
def phone(browser, playwright, console):
    """A page under Playwright's iPhone 13 emulation (touch, 390 px, the viewport tag honoured),
    its errors collected in ``console``."""
    device = playwright.devices["iPhone 13"]
    assert device["is_mobile"] and device["viewport"]["width"] == 390
    context = browser.new_context(**device)
    page = context.new_page()
    _collect(page, console)
    yield page
    context.close()


#: A glossary link inside a sentence (``a.sdp-term``) is read as part of the words around it.
_DEEP_TEXT = """() => {
  const out = [];
  let glue = false;
  const push = (t, join) => { if (join && out.length) out[out.length - 1] += t; else out.push(t); };
  const walk = (node) => {
    if (node.nodeType === Node.TEXT_NODE) { push(node.textContent, glue); glue = false; return; }
    if (node.nodeName === 'STYLE' || node.nodeName === 'SCRIPT') return;
    if (node.nodeName === 'A' && node.classList.contains('sdp-term')) {
      push(node.textContent, true); glue = true; return;
    }
    if (node.shadowRoot) walk(node.shadowRoot);
    for (const child of node.childNodes) walk(child);
  };
  walk(document.body);
  return out.join(' ').replace(/\\s+/g, ' ');
}"""


def page_text(page) -> str:
    """All text the page shows, including inside Panel's shadow DOM."""
    return page.evaluate(_DEEP_TEXT)


def wait_for_text(page, needle: str, timeout: float = 10.0) -> None:
    """Wait until the page (shadow DOM included) shows ``needle``; fail showing what it shows."""
    deadline = time.monotonic() + timeout
    while needle not in page_text(page):
        if time.monotonic() > deadline:
            raise AssertionError(f"{needle!r} never appeared; page shows: {page_text(page)[:2000]}")
        page.wait_for_timeout(50)


def assert_clean(page, errors: list[str]) -> None:
    """No console errors and no traceback text on the page."""
    text = page_text(page)
    assert len(text) > 200, f"page shows almost no text: {text!r}"
    for bad in ("Traceback", "Exception:", "Error:"):
        assert bad not in text, f"{bad!r} shown on the page"
    failed = getattr(errors, "failed", [])
    assert errors == [], f"console errors: {errors}" + (f"; failed requests: {failed}" if failed else "")
