"""The whole series as one site: an index at ``/`` and every built episode at its slug."""

from __future__ import annotations

import logging

import panel as pn
from bokeh.settings import settings as bokeh_settings
from tornado.web import OutputTransform

from . import shared
from ..episodes import available
from ..views.page import declare_viewport, episode_cards_html, page_css, safe_page
from ..views.resources import theme_css

log = logging.getLogger("specdec_playable")

SITE_TITLE = "Speculative Decoding, Playable"


def index_page() -> pn.Column:
    """The landing page: what the series is, and links to the built episodes in order."""
    body = f"""
<p class="sdp-kicker">An interactive explainer</p>
<h1 class="sdp-title">{SITE_TITLE}</h1>
<p class="sdp-lede">A large language model writes text one token at a time, and every token costs a full,
slow pass through the whole model. Speculative decoding lets a small, fast model guess the next few tokens
and has the big model check all the guesses in a single pass. When the guesses are good, text can arrive
two or three times faster, or more, and it is exactly the text the big model would have written on its own.
When they are bad, the trick makes things slower.</p>
<p class="sdp-lede">These episodes let you run it and see both cases. Every number on them is measured
from a simulation running in front of you or from a real language model running on this server,
labelled as theory, or measured on real hardware with its source named.</p>
{episode_cards_html(available())}
<p class="sdp-note">The closed-form theory is from Leviathan, Kalman and Matias, “Fast Inference from
Transformers via Speculative Decoding” (ICML 2023); real forward-pass times were measured on an NVIDIA H200;
the real model is SmolLM2-135M-Instruct (Hugging Face, Apache-2.0), run in numpy on this server's CPU.</p>
"""
    declare_viewport()
    return pn.Column(pn.pane.HTML(body, stylesheets=[page_css("index.css")], sizing_mode="stretch_width"),
                     name="index", sizing_mode="stretch_width", max_width=1100,
                     stylesheets=[theme_css()],
                     styles={"margin": "0 auto", "padding": "8px 16px 32px 16px"})


def applications() -> dict:
    """Slug -> page builder, as ``pn.serve`` takes them (each call builds a fresh session)."""
    apps = {"/": lambda: safe_page(index_page)}
    for ep in available():
        apps[ep.slug] = (lambda ep=ep: safe_page(ep.page))
    return apps


def titles() -> dict:
    out = {"/": SITE_TITLE}
    out.update({e.slug: f"Episode {e.number}: {e.title} · {SITE_TITLE}" for e in available()})
    return out


class AbsoluteAutoloadStatic(OutputTransform):
    """Make ``autoload.js`` load Panel's static files from this server, not the host page.

    Panel 1.10 caches some bundled resource URLs (es-module-shims) relative to the
    first page rendered (``../static/...``). In a script embed those resolve against
    the course site's origin and 404, so nothing renders. This rewrites them to
    absolute URLs on this server, only in ``autoload.js`` responses.
    """

    def __init__(self, request):
        self._active = request.path.endswith("/autoload.js")
        self._root = f"{request.protocol}://{request.host}/static/".encode()

    def _fix(self, chunk: bytes) -> bytes:
        for quote in (b'"', b"'"):
            chunk = chunk.replace(quote + b"../static/", quote + self._root)
        return chunk

    def transform_first_chunk(self, status_code, headers, chunk, finishing):
        if self._active:
            chunk = self._fix(chunk)
            if "Content-Length" in headers:
                headers["Content-Length"] = str(len(chunk))
        return status_code, headers, chunk

    def transform_chunk(self, chunk, finishing):
        return self._fix(chunk) if self._active else chunk


def _log_exception(exc: BaseException) -> None:
    log.error("unhandled error in a session callback", exc_info=exc)


def prepare_process() -> None:
    """What a serving process does once, so that no session does it again.

    - Bokeh checks every new session's document for broken models (about a sixth of a page's
      build). The pages are the same structure for every visitor, so the tests check each
      page's document once (``tests/test_open_cost.py``) and the server does not repeat it.
    - The results that every session shares (``serve.shared``) are computed for the pages'
      opening settings now, before the first visitor arrives.
    """
    bokeh_settings.perform_document_validation.set_value(False)
    n = shared.warm()
    log.info("computed %d shared results for the pages' opening settings", n)


def serve(*, port: int = 5006, address: str = "127.0.0.1", allow_websocket_origin=(),
          show: bool = False, threaded: bool = False, **kwargs):
    """Serve the index and every built episode from one process.

    Websocket connections are accepted only from the served address unless
    ``allow_websocket_origin`` names more ``host:port`` origins.
    """
    origins = [f"{address}:{port}"]
    if address in ("127.0.0.1", "localhost"):
        origins.append(f"{'localhost' if address == '127.0.0.1' else '127.0.0.1'}:{port}")
    origins.extend(o for o in allow_websocket_origin if o not in origins)
    pn.config.exception_handler = _log_exception
    opts = dict(port=port, address=address, websocket_origin=origins, show=show, title=titles(),
                liveness=True, admin=False, autoreload=False, **kwargs)
    apps = applications()
    prepare_process()
    if threaded:  # for tests and notebooks: the server runs on its own thread
        return pn.serve(apps, threaded=True, **opts)
    server = pn.serve(apps, start=False, **opts)
    server._tornado.transforms.append(AbsoluteAutoloadStatic)
    server.start()
    server.io_loop.start()
    return server
