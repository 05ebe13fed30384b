"""The shipped files, served read-only at ``/assets/<path>`` (``/assets/pass_cost_h200.csv``).

Only the files of :func:`data.provenance.served_files` are served, by their exact names: a
name not on that list (another file, a folder, ``..``) is a plain 404, so
nothing outside the list can be reached and no folder is listed. GET and HEAD only; each
file with its content type, ``nosniff``, and a filename for saving it.
"""

from __future__ import annotations

from tornado.web import HTTPError, RequestHandler

from ..data.provenance import served_files
from ..shipped import asset_path

#: The fixed path the files are served under.
PREFIX = "/assets/"
CONTENT_TYPES = {
    ".csv": "text/csv; charset=utf-8",
    ".json": "application/json; charset=utf-8",
    ".md": "text/markdown; charset=utf-8",
    ".txt": "text/plain; charset=utf-8",
    ".gz": "application/gzip",
}


def content_type(name: str) -> str:
    return CONTENT_TYPES["." + name.rsplit(".", 1)[-1]]


class AssetHandler(RequestHandler):
    """One shipped file, read-only."""

    def _file(self, name: str) -> tuple[str, bytes]:
        if name not in served_files():
            raise HTTPError(404)
        return name, asset_path(name).read_bytes()

    def _describe(self, name: str, size: int) -> None:
        self.set_header("Content-Type", content_type(name))
        self.set_header("Content-Length", str(size))
        self.set_header("X-Content-Type-Options", "nosniff")
        self.set_header("Cache-Control", "public, max-age=3600")
        filename = name.rsplit("/", 1)[-1]
        self.set_header("Content-Disposition", f'inline; filename="{filename}"')

    def get(self, name: str) -> None:
        name, body = self._file(name)
        self._describe(name, len(body))
        self.write(body)

    def head(self, name: str) -> None:
        name, body = self._file(name)
        self._describe(name, len(body))

    def compute_etag(self):  # HEAD has no body to hash; the files change only with a release
        return None

    def write_error(self, status_code: int, **kwargs) -> None:  # no traceback, no page of Tornado's
        self.set_header("Content-Type", "text/plain; charset=utf-8")
        self.finish(f"{status_code}: {self._reason}\n")


def routes() -> list:
    """The route to add to the server's patterns."""
    return [(PREFIX.rstrip("/") + r"/(.+)", AssetHandler)]
