"""The CLI's view of a running server: the :class:`palimpsest.Memory` reads it prints, over ``/v1`` HTTP.

With ``--server URL`` (or ``PALIMPSEST_URL``) and ``PALIMPSEST_API_KEY``,
:func:`palimpsest.cli_common.open_store` returns a :class:`RemoteMemory`
instead of opening the store: the same methods answer the same Python
objects (hits and contexts rebuilt from their JSON), so every command
prints exactly what it prints in embedded mode. The tenant is the key's; a
``--tenant`` naming another is refused rather than silently ignored. No Ray is started
and no store is opened.
"""

from __future__ import annotations

import os
from datetime import datetime
from urllib.parse import quote

import httpx

from events.errors import InvalidInputError, PalimpsestError
from projections.queries.context import Context, ContextItem
from projections.queries.retrieval import Hit


def server_url(args) -> str | None:
    return getattr(args, "server", None) or os.environ.get("PALIMPSEST_URL") or None


class RemoteMemory:
    def __init__(self, url: str, key: str) -> None:
        if not key:
            raise InvalidInputError([("PALIMPSEST_API_KEY", "set it to a key from `palimpsest --store DIR keys "
                                                            "create --tenant T` to use --server")], what="server")
        self.http = httpx.Client(base_url=url.rstrip("/"), headers={"Authorization": f"Bearer {key}"}, timeout=120)
        self._tenant: str | None = None

    def __enter__(self) -> RemoteMemory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.http.close()

    def _call(self, method: str, path: str, **kw) -> dict:
        try:
            r = self.http.request(method, path, **kw)
        except httpx.HTTPError as exc:
            raise PalimpsestError(f"the server at {self.http.base_url} did not answer ({type(exc).__name__}); "
                                  "check that `palimpsest serve` runs there") from None
        body = r.json() if r.headers.get("content-type", "").startswith("application/json") else {}
        if r.status_code >= 400:
            problems = [(p["field"], p["fix"]) for p in body.get("problems", ())] or [("server", r.text[:200])]
            raise InvalidInputError(problems, what=f"{r.status_code} {body.get('message', 'request')}")
        return body

    def _user(self, tenant: str | None, user_id: str) -> str:
        if self._tenant is None:
            self._tenant = self._call("GET", "/v1/whoami")["tenant"]
        if tenant and tenant != self._tenant:
            raise InvalidInputError([("--tenant", f"your key is tenant {self._tenant!r}; leave --tenant at it or "
                                                  "use that tenant's key")], what="server request")
        return f"/v1/users/{quote(user_id, safe='')}"

    @staticmethod
    def _when(now: datetime | None) -> dict:
        return {"now": now.isoformat()} if now else {}

    def search(self, tenant: str, user_id: str, query: str, k: int = 10, *, now: datetime | None = None,
               scope: str = "active") -> list[Hit]:
        body = self._call("POST", self._user(tenant, user_id) + "/search",
                          json={"query": query, "k": k, "scope": scope, **self._when(now)})
        return [Hit(**{**h, "occurred_at": datetime.fromisoformat(h["occurred_at"])}) for h in body["hits"]]

    def build_context(self, tenant: str, user_id: str, query: str, token_budget: int = 1000, *,
                      now: datetime | None = None) -> Context:
        body = self._call("POST", self._user(tenant, user_id) + "/context",
                          json={"query": query, "token_budget": token_budget, **self._when(now)})
        return Context(body["query"], body["budget"], body["tokens"], tuple(ContextItem(**i) for i in body["items"]))

    def notes(self, tenant: str, user_id: str, *, at: datetime | None = None, include_inactive: bool = False,
              now: datetime | None = None) -> list[dict]:
        params = {"include_inactive": str(include_inactive).lower(), **({"at": at.isoformat()} if at else {})}
        return self._call("GET", self._user(tenant, user_id) + "/notes", params=params)["notes"]

    def episodes(self, tenant: str, user_id: str, query: str | None = None, *, k: int = 5) -> list[dict]:
        params = {"k": k, **({"query": query} if query else {})}
        return self._call("GET", self._user(tenant, user_id) + "/episodes", params=params)["episodes"]

    def get_user_profile(self, tenant: str, user_id: str, *, include_knowledge: bool = True,
                         include_assistant_knowledge: bool = False) -> dict:
        params = {"include_knowledge": str(include_knowledge).lower(),
                  "include_assistant_knowledge": str(include_assistant_knowledge).lower()}
        return self._call("GET", self._user(tenant, user_id) + "/profile", params=params)

    def __getattr__(self, name: str):
        raise PalimpsestError(f"this command ({name}) does not work through --server yet; run it with --store on "
                              "the machine that holds the store, or use the HTTP API (see /docs)")
