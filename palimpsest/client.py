"""The CLI's view of a running server: the :class:`palimpsest.Memory` calls it makes, over ``/v1`` HTTP.

With ``--server URL`` (or ``PALIMPSEST_URL``) and ``PALIMPSEST_API_KEY``,
:func:`palimpsest.cli_common.open_store` returns a :class:`RemoteMemory`
instead of opening the store: the same methods answer the same Python
objects (hits and contexts rebuilt from their JSON), so every command
prints what it prints in embedded mode. The tenant is the key's; a
``--tenant`` naming another is refused rather than silently ignored (a
command that spans "every tenant" embedded spans the key's tenant here). No
Ray is started, no store is opened, and nothing heavier than the standard
library and the result records is imported: a command answers in a fraction
of a second from a cold shell.
"""

from __future__ import annotations

import time
from datetime import datetime
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import quote

from events.errors import InvalidInputError, PalimpsestError
from palimpsest.operation import STORE, Operation, answer_of, as_method, http_request, signature
from palimpsest.operations import OPERATIONS
from palimpsest.reports import IngestReport
from palimpsest.transport import Http
from projections.queries.results import Context, ContextItem, Hit

INGEST_BATCH = 256
HIT_FIELDS = tuple(f for f in Hit.__dataclass_fields__ if f != "occurred_at")


def _when(name: str, value: datetime | None) -> dict:
    return {name: value.isoformat()} if value is not None else {}


class ReplayReport(SimpleNamespace):
    @property
    def equal(self) -> bool:
        return self.live == self.rebuilt


class RemoteMemory:
    def __init__(self, url: str, key: str) -> None:
        if not key:
            raise InvalidInputError([("PALIMPSEST_API_KEY", "set it to a key from `palimpsest --store DIR keys "
                                                            "create --tenant T` to use --server")], what="server")
        self.http = Http(url, key)
        self._tenant: str | None = None

    def __enter__(self) -> RemoteMemory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.http.close()

    @property
    def tenant(self) -> str:
        """The key's tenant (asked once)."""
        if self._tenant is None:
            self._tenant = self.http.call("GET", "/v1/whoami")["tenant"]
        return self._tenant

    def _own(self, tenant: str | None) -> str:
        if tenant and tenant != self.tenant:
            raise InvalidInputError([("--tenant", f"your key is tenant {self.tenant!r}; leave --tenant at it or "
                                                  "use that tenant's key")], what="server request")
        return self.tenant

    def _user(self, tenant: str | None, user_id: str) -> str:
        self._own(tenant)
        return f"/v1/users/{quote(user_id, safe='')}"

    # -- writing -------------------------------------------------------
    def add_messages(self, messages, *, tenant: str | None = None, user_id: str | None = None,
                     progress: bool = False, **_) -> IngestReport:
        """Validate every message here (a bad one: nothing is sent), then send each user's in batches.

        Batches are idempotent by ``client_message_id``: after an interruption, send the same file again."""
        from events.commands import validate_messages

        own = self._own(tenant)
        items = [{"tenant": own, **({"user_id": user_id} if user_id else {}), **m} for m in messages]
        commands = validate_messages(items)
        others = sorted({m.tenant for m in commands} - {own})
        if others:
            raise InvalidInputError([("tenant", f"messages name tenant(s) {', '.join(others)}; your key is tenant "
                                                f"{own!r}: use that tenant's key")], what="ingest")
        report = IngestReport(received=len(commands))
        by_user: dict[str, list[tuple[int, dict]]] = {}
        for i, m in enumerate(commands):
            by_user.setdefault(m.user_id, []).append(
                (i, m.model_dump(mode="json", exclude={"tenant", "user_id"}, exclude_none=True)))
        batches = [(u, ms[i:i + INGEST_BATCH]) for u, ms in by_user.items() for i in range(0, len(ms), INGEST_BATCH)]
        if progress:
            from tqdm import tqdm

            batches = tqdm(batches, desc="ingest", unit="batch")
        started = time.perf_counter()
        ids: dict[int, str] = {}
        for user, batch in batches:
            answer = self.http.call("POST", self._user(own, user) + "/messages",
                                    body={"messages": [m for _, m in batch]})
            report.created += answer["created"]
            report.duplicates += answer["duplicates"]
            ids.update(zip((i for i, _ in batch), answer["memory_ids"]))
        report.memory_ids = [ids[i] for i in range(len(commands))]
        report.seconds = time.perf_counter() - started
        return report

    # -- reading one user ----------------------------------------------
    def users(self, tenant: str | None = None) -> list[str]:
        """The users of the key's tenant, by id."""
        self._own(tenant)
        return self.http.call("GET", "/v1/users")["users"]

    # search, build_context, notes, note_history, episodes, retention, get_user_profile, tiers, archived, ...:
    # generated from their declarations (palimpsest.operations), below the class

    # -- acting on one user --------------------------------------------
    # record_reply, judge_feedback, review_notes, archive, restore, ...: generated, below the class
    def _post(self, tenant: str, user_id: str, path: str, body: dict):
        return self.http.call("POST", self._user(tenant, user_id) + path, body=body)

    def tool_call(self, tenant: str, user_id: str, name: str, arguments, *, reference: datetime | None = None) -> dict:
        if isinstance(arguments, str):
            import json

            try:
                arguments = json.loads(arguments)
            except ValueError as exc:
                raise InvalidInputError([("arguments", f"not JSON ({exc}); give the call's JSON object")],
                                        what=f"{name} call") from None
        return self._post(tenant, user_id, f"/tools/{quote(name, safe='')}",
                          {"arguments": arguments, **_when("reference", reference)})

    # -- the tenant ----------------------------------------------------
    def counterfactual(self, policy, now: datetime | None = None, *, queries=(), k: int = 10,
                       tenant: str | None = None) -> list[dict]:
        self._own(tenant)
        compared = []
        for t, u, q in queries:
            self._own(t)
            compared.append({"user_id": u, "query": q})
        return self.http.call("POST", "/v1/counterfactual", body={
            "policy": policy.model_dump(mode="json"), "queries": compared, "k": k, **_when("now", now)})["users"]

    # -- the store -----------------------------------------------------
    # stats, digest, replay (admin keys): generated from their declarations, below the class

    def policies(self) -> dict:
        """The live retention policy, the presets and their old names (``GET /v1/policies``)."""
        return self.http.call("GET", "/v1/policies")

    # -- audit ---------------------------------------------------------
    def audit_events(self, flt, limit: int | None) -> list[dict]:
        params = {"tenant": flt.tenant, "user_id": flt.user_id, "from_seq": flt.from_seq, "to_seq": flt.to_seq,
                  "since": flt.since.isoformat() if flt.since else None,
                  "until": flt.until.isoformat() if flt.until else None,
                  "kind": list(flt.kinds) if flt.kinds else None, "limit": limit}
        answer = self.http.call("GET", "/v1/audit/events", params=params)
        return [dict(zip(answer["columns"], row)) for row in answer["rows"]]

    def audit_sql(self, query: str, tenant: str | None) -> tuple[list[str], list[list]]:
        answer = self.http.call("POST", "/v1/audit/sql", body={"query": query, "tenant": tenant})
        return answer["columns"], answer["rows"]

    def export_parquet(self, out_dir: Path, tenant: str | None) -> Path:
        data = self.http.raw("GET", "/v1/audit/export", params={"tenant": tenant})
        out_dir.mkdir(parents=True, exist_ok=True)
        target, partial = out_dir / "events.parquet", out_dir / "events.parquet.part"
        partial.write_bytes(data)
        partial.replace(target)
        return target

    # -- keys (admin keys) ---------------------------------------------
    def create_key(self, tenant: str, *, admin: bool = False, label: str = "") -> tuple[str, dict]:
        answer = self.http.call("POST", "/v1/keys", body={"tenant": tenant, "admin": admin, "label": label})
        return answer["token"], answer["key"]

    def keys(self, tenant: str | None = None) -> list[dict]:
        return self.http.call("GET", "/v1/keys", params={"tenant": tenant})["keys"]

    def revoke_key(self, key_id: str, *, reason: str = "") -> dict:
        return self.http.call("POST", f"/v1/keys/{quote(key_id, safe='')}/revoke", body={"reason": reason})["key"]

    def __getattr__(self, name: str):
        raise PalimpsestError(f"this command ({name}) does not work through --server; run it with --store on "
                              "the machine that holds the store, or use the HTTP API (see /docs)")


def replay_reports_of(answer: list[dict]) -> list[ReplayReport]:
    """A replay's reports, one per shard, rebuilt from their JSON (``equal`` as the store's own reports have it)."""
    return [ReplayReport(**r) for r in answer]


def hits_of(answer: list[dict]) -> list[Hit]:
    """A search's hits rebuilt from their JSON (the record's fields, the ``terms`` the shard computed included)."""
    return [Hit(**{k: h[k] for k in HIT_FIELDS if k in h}, occurred_at=datetime.fromisoformat(h["occurred_at"]))
            for h in answer]


def context_of(answer: dict) -> Context:
    """A context rebuilt from its JSON."""
    items = tuple(ContextItem(**{**i, "occurred_at": datetime.fromisoformat(i["occurred_at"])
                                 if i.get("occurred_at") else None}) for i in answer["items"])
    return Context(answer["query"], answer["budget"], answer["tokens"], items)


def _given(values: dict) -> dict:
    """A :class:`Context` given for a list of memory ids (what an agent was given) as its ids, and its query for a
    ``query`` left out, as :class:`palimpsest.Memory` reads it."""
    for name, value in list(values.items()):
        if isinstance(value, Context):
            values[name] = [i.memory_id for i in value.items]
            if values.get("query", "") is None:
                values["query"] = value.query
    return values


def _remote(op: Operation):
    """The declared operation's method: its HTTP request under the user's path (tenant-wide without a user)."""

    def run(self: RemoteMemory, values: dict):
        tenant, user_id = values.pop("tenant", None), values.pop("user_id", None)
        user_path = self._user(tenant, user_id) if user_id else None
        if user_path is None and op.user != STORE:
            self._own(tenant)
        method, path, body, params = http_request(op, op.wire(_given(values)), user_path)
        return answer_of(op, self.http.call(method, path, body=body, params=params))

    return as_method(op, signature(op), run)


for _op in OPERATIONS.values():
    if _op.http is not None:
        if _op.name in vars(RemoteMemory):  # a hand-written one would be silently replaced
            raise TypeError(f"RemoteMemory.{_op.name} is written by hand and declared; remove the hand-written one")
        setattr(RemoteMemory, _op.name, _remote(_op))
