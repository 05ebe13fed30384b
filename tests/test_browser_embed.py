"""Embedding in a course site: an <iframe>, and Bokeh's autoload script, from another origin."""

from __future__ import annotations

import functools
import http.server
import threading
import time

import pytest
from bokeh.embed import server_document
from conftest import Server, assert_clean, free_port, model_data

pytestmark = pytest.mark.browser

SLUG = "ep1_writing_vs_checking"


@pytest.fixture(scope="module")
def host(tmp_path_factory):
    """A static 'course site' on its own port (a different origin from the explainer)."""
    root = tmp_path_factory.mktemp("course-site")
    port = free_port()
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    handler = functools.partial(Quiet, directory=str(root))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield root, f"127.0.0.1:{port}"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture(scope="module")
def allowing(host, artifacts):
    server = Server("--allow-websocket-origin", host[1], log_path=artifacts / "server-embed-allow.log")
    yield server
    server.stop()


@pytest.fixture(scope="module")
def refusing(artifacts):
    server = Server(log_path=artifacts / "server-embed-refuse.log")
    yield server
    server.stop()


def _write(root, name, body):
    (root / name).write_text(f"<!DOCTYPE html><html><head><meta charset='utf-8'><link rel='icon' href='data:,'><title>Course</title></head>"
                             f"<body><h1>Week 3: faster inference</h1>{body}</body></html>")


def _play_in(frame_or_page, page):
    page.bring_to_front()
    frame_or_page.get_by_role("button", name="Play").click()


def test_iframe_embed_plays(page, host, allowing, console, artifacts):
    root, origin = host
    _write(root, "iframe.html",
           f'<iframe title="Episode 1" src="{allowing.url}/{SLUG}" width="800" height="600"></iframe>')
    page.set_viewport_size({"width": 900, "height": 720})
    page.goto(f"http://{origin}/iframe.html")
    frame = page.frame_locator("iframe")
    frame.locator(".noUi-handle").first.wait_for(timeout=30_000)
    _play_in(frame, page)
    inner = page.frames[1]
    inner.wait_for_function(
        "() => Bokeh.documents[0].get_model_by_name('ep1-play').label === 'Play' && "
        "Bokeh.documents[0].get_model_by_name('ep1-clocks').data.x[0] === 3600", timeout=20_000)
    page.screenshot(path=artifacts / "embed-iframe-800x600.png")
    assert console == []


def test_autoload_script_embed_plays_when_origin_allowed(page, host, allowing, console, artifacts):
    root, origin = host
    _write(root, "script.html", server_document(f"{allowing.url}/{SLUG}"))
    page.goto(f"http://{origin}/script.html")
    page.wait_for_function("() => window.Bokeh && Bokeh.documents.length > 0 && "
                           "Bokeh.documents[0].get_model_by_name('ep1-bars') !== null", timeout=30_000)
    _play_in(page, page)
    page.wait_for_function(
        "() => Bokeh.documents[0].get_model_by_name('ep1-clocks').data.x[1] === 600 && "
        "Bokeh.documents[0].get_model_by_name('ep1-play').label === 'Play'", timeout=20_000)
    assert model_data(page, "ep1-clocks")["x"] == [3600, 600]
    page.screenshot(path=artifacts / "embed-script.png", full_page=True)
    # Panel 1.10 points two theme stylesheets of a script embed at its CDN and the host's
    # origin; offline they fail to load (the page still renders and plays). Nothing else may fail.
    console[:] = [e for e in console if not e.startswith("Failed to load resource")]
    assert_clean(page, console)


def test_autoload_script_from_unlisted_origin_is_refused_and_logged(page, host, refusing):
    root, origin = host
    _write(root, "script-refused.html", server_document(f"{refusing.url}/{SLUG}"))
    page.goto(f"http://{origin}/script-refused.html")
    deadline = time.monotonic() + 20
    while "Refusing websocket connection" not in refusing.log() and time.monotonic() < deadline:
        page.wait_for_timeout(250)
    log = refusing.log()
    assert "Refusing websocket connection from Origin" in log
    assert f"'http://{origin}'" in log
    # Nothing was rendered in the course page.
    assert page.evaluate("() => !window.Bokeh || Bokeh.documents.length === 0 || "
                         "Bokeh.documents[0].get_model_by_name('ep1-bars') === null")
