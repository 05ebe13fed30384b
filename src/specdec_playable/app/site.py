"""The whole series as one site: an index at ``/`` and every built episode at its slug, with the
summary, the glossary, the data page and the teacher's guide beside them, the shipped files at
``/assets/`` and the project's docs at ``/docs/``."""

from __future__ import annotations

import logging
from functools import cache

import panel as pn
from bokeh.settings import settings as bokeh_settings
from tornado.web import HTTPError, OutputTransform, RequestHandler

from . import files

from . import panel_threads

from ..runtime import shared
from ..episodes import EPISODES
from ..kit.episode import Episode, Teaching
from ..runtime import ModelService, model_process
from ..shipped import doc_names
from ..kit.site import course
from ..kit.deferred import in_session
from ..kit.site.data import data_page
from ..kit.site.docs import DOCS_PREFIX, doc_page
from ..kit.site.error import safe_page
from ..kit.site.glossary import glossary_page
from ..kit.site.guide import guide_page
from ..kit.site import index
from ..kit.site.index import SITE_TITLE
from ..kit.site.summary import summary_page

log = logging.getLogger("specdec_playable")

#: The pages around the episodes, by their paths.
COURSE_PAGES = ("summary", "glossary", "data", "guide")


#: The seed of the pages whose words the episodes' times are measured from.
MEASURE_SEED = 0


#: The service every page of this process runs the real model through: its shared queue, its
#: model processes, its calibration. Built here, at the top, and handed to the pages.
SERVICE = ModelService()


@cache
def episode_times(episodes: tuple[Episode, ...] = EPISODES) -> tuple[course.EpisodeTime, ...]:
    """Each episode's time, measured from its page (built once, outside any session, so every part
    is there, on seeded randomness, so the words do not hang on a draw) and its "Try this" steps.
    Computed once per process."""
    return tuple(course.episode_time(ep.number,
                                     course.page_markup(ep.page(seed=MEASURE_SEED, service=SERVICE)),
                                     ep.steps or ep.try_this) for ep in episodes)


@cache
def teaching(episodes: tuple[Episode, ...] = EPISODES) -> tuple[Teaching, ...]:
    """The teacher's guide's material for every episode (its questions answered), once per process."""
    return tuple(ep.teaching() for ep in episodes)


def _times(episodes: tuple[Episode, ...]) -> tuple[course.EpisodeTime, ...]:
    """The episodes' times once measured (they are measured once per process, before serving; a
    session never builds the other pages to measure them)."""
    known = episode_times.cache_info().currsize > 0
    return episode_times(episodes) if known or not in_session() else ()


def index_page(episodes: tuple[Episode, ...] = EPISODES) -> pn.Column:
    """The index, with the episodes' times once measured."""
    return index.index_page(episodes, _times(episodes))


def guide(episodes: tuple[Episode, ...] = EPISODES) -> pn.Column:
    """The teacher's guide, with the class plans once the episodes' times are measured."""
    return guide_page(teaching(episodes), _times(episodes))


def applications(episodes: tuple[Episode, ...] = EPISODES, service=SERVICE) -> dict:
    """Slug -> page builder, as ``pn.serve`` takes them (each call builds a fresh session); every
    episode page runs the model through ``service``."""
    apps = {"/": lambda: safe_page(lambda: index_page(episodes)),
            "summary": lambda: safe_page(lambda: summary_page(episodes, with_score=True,
                                                               service=service)),
            "glossary": lambda: safe_page(lambda: glossary_page(episodes)),
            "data": lambda: safe_page(data_page),
            "guide": lambda: safe_page(lambda: guide(episodes))}
    for ep in episodes:
        apps[ep.slug] = (lambda ep=ep: safe_page(lambda: ep.make_page(service=service)))
    return apps


def episode_alone(episode: Episode):
    """One episode's page served alone (``panel serve episodes/epN_*.py``), running the model
    through this process's :data:`SERVICE`, with the site's error page instead of a traceback."""
    return safe_page(lambda: episode.make_page(service=SERVICE))


def titles(episodes: tuple[Episode, ...] = EPISODES) -> dict:
    out = {"/": SITE_TITLE, "summary": f"Summary · {SITE_TITLE}", "glossary": f"Glossary · {SITE_TITLE}",
           "data": f"Data · {SITE_TITLE}", "guide": f"Teacher's guide · {SITE_TITLE}"}
    out.update({e.slug: f"Episode {e.number}: {e.title} · {SITE_TITLE}" for e in episodes})
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


class DocHandler(RequestHandler):
    """One file of the project's ``docs/`` as a page (``/docs/serving.md``), read-only; a name not
    among them is a plain 404."""

    def _page(self, name: str) -> str:
        if name not in doc_names():
            raise HTTPError(404)
        return doc_page(name)

    def _describe(self, body: bytes) -> None:
        self.set_header("Content-Type", "text/html; charset=utf-8")
        self.set_header("Content-Length", str(len(body)))
        self.set_header("X-Content-Type-Options", "nosniff")
        self.set_header("Cache-Control", "public, max-age=3600")

    def get(self, name: str) -> None:
        body = self._page(name).encode("utf-8")
        self._describe(body)
        self.write(body)

    def head(self, name: str) -> None:
        self._describe(self._page(name).encode("utf-8"))

    def compute_etag(self):  # HEAD has no body to hash; the docs change only with a release
        return None

    def write_error(self, status_code: int, **kwargs) -> None:  # no traceback, no page of Tornado's
        self.set_header("Content-Type", "text/plain; charset=utf-8")
        self.finish(f"{status_code}: {self._reason}\n")


def _log_exception(exc: BaseException) -> None:
    log.error("unhandled error in a session callback", exc_info=exc)


def prepare_process(episodes: tuple[Episode, ...] = EPISODES) -> None:
    """What a serving process does once, so that no session does it again.

    - Panel's read-only editing is made safe for pages built on several threads at once
      (:mod:`.panel_threads`): Bokeh builds each session's page on a worker thread.
    - Bokeh checks every new session's document for broken models (about a sixth of a page's
      build). The pages are the same structure for every visitor, so the tests check each
      page's document once (``tests/test_open_cost.py``) and the server does not repeat it.
    - The results that every session shares (``runtime.shared``) are computed for the pages'
      opening settings now, before the first visitor arrives.
    - The index's times are measured from the episode pages (:func:`episode_times`), and the
      teacher's guide's answers computed (:func:`teaching`).
    """
    panel_threads.install()
    bokeh_settings.perform_document_validation.set_value(False)
    n = shared.warm()
    log.info("computed %d shared results for the pages' opening settings", n)
    times = episode_times(episodes)
    log.info("measured the episodes' times: %s minutes", ", ".join(str(t.minutes) for t in times))
    n = len(teaching(episodes))
    log.info("answered the questions of %d episodes for the teacher's guide", n)


def load_model_at_start() -> None:
    """Queue one job that starts a worker's model process and waits for it to load the model and
    time its passes (``runtime.workers.loading_work``): from then on the pages price a CPU pass with
    this machine's own measurement. It runs on a worker thread, never on the event loop."""
    from ..runtime.jobs import shared_queue
    from ..runtime.model_process import LOAD_S
    from ..runtime.workers import loading_work

    # Room for a slow load on a busy machine and for the retries after a failed one.
    shared_queue().submit(loading_work(), budget_s=3 * LOAD_S, label="loading the model")
    log.info("loading the model in a model process (its passes are timed as it loads)")


def serve(*, port: int = 5006, address: str = "127.0.0.1", allow_websocket_origin=(),
          show: bool = False, threaded: bool = False, model_at_start: bool = False,
          episodes: tuple[Episode, ...] = EPISODES, weights: str = "f32", **kwargs):
    """Serve the index and every episode of ``episodes`` (the registry's) from one process.

    The model processes load the model's weights in format ``weights`` (``"f32"`` or ``"q4"``).

    Websocket connections are accepted only from the served address unless
    ``allow_websocket_origin`` names more ``host:port`` origins. With ``model_at_start`` a model
    process loads the model (and times its passes) as the server starts
    (:func:`load_model_at_start`); otherwise the first run loads it.
    """
    model_process.set_weights(weights)
    origins = [f"{address}:{port}"]
    if address in ("127.0.0.1", "localhost"):
        origins.append(f"{'localhost' if address == '127.0.0.1' else '127.0.0.1'}:{port}")
    origins.extend(o for o in allow_websocket_origin if o not in origins)
    pn.config.exception_handler = _log_exception
    extra = (list(kwargs.pop("extra_patterns", [])) + files.routes()
             + [(rf"/{DOCS_PREFIX}/([^/]+)", DocHandler)])
    opts = dict(port=port, address=address, websocket_origin=origins, show=show, title=titles(episodes),
                liveness=True, admin=False, autoreload=False, extra_patterns=extra, **kwargs)
    apps = applications(episodes)
    prepare_process(episodes)
    if model_at_start:
        load_model_at_start()
    if threaded:  # for tests and notebooks: the server runs on its own thread
        return pn.serve(apps, threaded=True, **opts)
    server = pn.serve(apps, start=False, **opts)
    server._tornado.transforms.append(AbsoluteAutoloadStatic)
    server.start()
    server.io_loop.start()
    return server
