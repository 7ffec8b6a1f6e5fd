"""The memory inspector: a static page at ``/ui`` (HTML, CSS and plain JavaScript modules shipped in this package,
nothing fetched from elsewhere) that reads the ``/v1`` JSON API with the key the user enters once.

The page and its files need no key (they hold no data); every read they make
sends the key from the browser's session storage as ``Authorization: Bearer``
and goes through the same tenant checks as any client. The graph view is the
component of the standalone ``graph.html`` (``projections/queries/graph_view.*``).
"""

from __future__ import annotations

import re
from importlib import resources

from fastapi import APIRouter
from fastapi.responses import RedirectResponse, Response

from palimpsest.server.errors import ApiError
from projections.queries.graph_export import view_assets

router = APIRouter(include_in_schema=False)
TYPES = {".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8"}
# Only files of the package, only this origin: a script injected through data could load or send nothing.
HEADERS = {
    "Cache-Control": "no-cache",
    "X-Content-Type-Options": "nosniff",
    "Content-Security-Policy": "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
                               "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
}
NAME = re.compile(r"[a-z_]+\.(?:html|js|css)")


def _read(name: str) -> str | None:
    """A file of the page (read per request: a few small files, and an edited one shows on reload)."""
    if name in ("graph_view.js", "graph_view.css"):
        return view_assets()[name.endswith(".css")]
    file = resources.files("palimpsest.server") / "ui" / name
    return file.read_text(encoding="utf-8") if NAME.fullmatch(name) and file.is_file() else None


def _send(name: str) -> Response:
    text = _read(name)
    if text is None:
        raise ApiError(404, "not_found", f"no inspector file {name!r}", [("path", "open /ui")])
    return Response(text, media_type=TYPES[name[name.rindex("."):]], headers=HEADERS)


@router.get("/")
def root() -> RedirectResponse:
    return RedirectResponse("/ui")


@router.get("/ui")
def page() -> Response:
    return _send("index.html")


@router.get("/ui/{name}")
def asset(name: str) -> Response:
    return _send(name)
