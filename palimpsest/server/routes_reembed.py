"""Admin: move the served store to another encoder in the background (``palimpsest reembed`` over HTTP).

``POST /v1/admin/reembed`` starts the job (or, with ``dry_run``, answers how many texts it would encode and an
estimate of the time) and returns at once; ``GET /v1/admin/reembed`` tells how far it is. Searches and ingest
keep being answered while it runs (by the old vectors until the switch). One job at a time per server process.
"""

from __future__ import annotations

import threading
import time

from fastapi import APIRouter
from pydantic import Field

from palimpsest.server.access import Authorized, Caller
from palimpsest.server.errors import ApiError
from palimpsest.server.models import Body
from palimpsest.server.responses import JsonAnswer, JsonRoute

router = APIRouter(prefix="/v1/admin", tags=["admin"], route_class=JsonRoute)


class ReembedBody(Body):
    embedder: str = Field(min_length=1, description="the encoder to move to: minilm, multilingual-e5-small, "
                                                    "sentence-transformers:<name-or-path>, openai:<model>")
    dry_run: bool = False


class _Job:
    """The server's one re-embedding job: its thread, start, outcome or error."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.thread: threading.Thread | None = None
        self.state: dict = {"state": "idle"}

    def start(self, memory, embedder: str) -> dict:
        with self.lock:
            if self.thread is not None and self.thread.is_alive():
                raise ApiError(409, "conflict", "a re-embedding is already running",
                               [("embedder", "wait for it: GET /v1/admin/reembed tells how far it is")])
            self.state = {"state": "running", "embedder": embedder, "started": time.time()}
            self.thread = threading.Thread(target=self._run, args=(memory, embedder), name="reembed", daemon=True)
            self.thread.start()
            return dict(self.state)

    def _run(self, memory, embedder: str) -> None:
        try:
            report = memory.reembed(embedder)
            outcome = {"state": "done", "report": report}
        except Exception as exc:  # reported to whoever asks; what was recorded stays, a new run finishes it
            outcome = {"state": "failed", "error": f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"}
        with self.lock:
            self.state = {**self.state, **outcome, "finished": time.time()}


JOB = _Job()


@router.post("/reembed", summary="Move the store to another encoder, in the background (admin)", status_code=202)
def start(body: ReembedBody, who: Caller = Authorized) -> dict:
    who.require_admin("a re-embedding of the whole store")
    from events.errors import EncoderError
    from projections.adapters.encoder_kinds import parse

    try:
        parse(body.embedder)
    except EncoderError as exc:
        raise ApiError(400, "invalid_input", str(exc), [("embedder", str(exc))]) from None
    if body.dry_run:
        return JsonAnswer(who.memory.reembed(body.embedder, dry_run=True), status_code=200)
    return JsonAnswer(JOB.start(who.memory, body.embedder), status_code=202)


@router.get("/reembed", summary="How far the re-embedding is (admin)")
def status(who: Caller = Authorized) -> dict:
    who.require_admin("the re-embedding's state")
    with JOB.lock:
        state = dict(JOB.state)
    if state["state"] == "running":
        from projections.adapters.encoder_kinds import model_id

        stats = who.memory.stats()
        target = model_id(state["embedder"])
        state["messages"] = stats["messages"]
        state["vectors_recorded"] = sum(s["models"].get(target, {}).get("vectors", 0) for s in stats["shards"])
    return state
