"""The adversarial probe, short: audit SQL over HTTP and the CLI, Unicode user ids, a restart right after
``kill -9`` of ``palimpsest serve``, and a grep of a copy of the store for the messages' marker strings.

    python -m benchmarks.chaos --probe --out bench/chaos_probe.json

``palimpsest serve`` runs as a user runs it: its own process and local Ray, a free port, the hash encoder, a
new encrypted store whose audit limits are small (:data:`LIMITS`, so the probes that hit them are quick).
Two tenants each hold English and Chinese messages with marker strings; a third user id is written in
decomposed Unicode (NFD) and read in composed form (NFC). Then:

- every audit probe (:data:`AUDIT_PROBES`) is sent with a tenant key: bad queries must be 400, a file,
  secret or another tenant 403, a costly query stopped at its limit (400 ``query_limit``) within the
  timeout, and no refusal may carry ``Retry-After`` (a client would retry it);
- the CLI runs bad queries through the server and, once it is stopped, on the store itself: exit code 2
  and a message naming the problem, never a traceback;
- the server is killed (SIGKILL) and started again at once on the same port: it must come up, answer with
  every acknowledged write, and no process of the killed server may be left once it is up;
- the restarted server takes one more write (English and Chinese), then is stopped (SIGTERM to it, or with
  ``stop_every`` to it and every process it started at once, as systemd's default stops a service; exit code 0,
  nothing of it left a moment later: :data:`LEFT_WAIT_S`), the store copied and every file of the copy searched
  for the markers: none may hold one (the log and the snapshots are sealed per user).

Only processes this probe started are signalled (the servers it spawned); the killed server's processes
are its descendants recorded (pid and start time) just before the kill.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import unicodedata
from pathlib import Path
from urllib.parse import quote

import httpx

from benchmarks.serve_load import post_admitted
from events.audit_limits import AuditLimits
from palimpsest.server.guard import descendants, left_after, running
from palimpsest.server.ports import free_port

ROOT = Path(__file__).resolve().parents[1]
LIMITS = AuditLimits(timeout_s=2.0, max_rows=10_000, memory_mb=128)
READY_S = 240.0
LEFT_WAIT_S = 10.0  # after a stop, how long the server's processes may take to be gone
MARKERS = {"acme": ("Zanzibarmarker", "玄武湖标记"), "beta": ("Betamarker", "鼓浪屿标记")}
LATE = ("I moved to Lisbon last spring", "我去年春天搬到了里斯本")  # written to the restarted server (:func:`late_write`)
NFD, NFC = unicodedata.normalize("NFD", "josé"), unicodedata.normalize("NFC", "josé")
# (name, query, expected status, expected error code, a phrase the answer must hold)
AUDIT_PROBES = [
    ("unknown table", "SELECT * FROM nope", 400, "invalid_input", "nope does not exist"),
    ("unknown column", "SELECT nope FROM events", 400, "invalid_input", "not found"),
    ("getenv", "SELECT getenv('HOME')", 400, "invalid_input", "getenv"),
    ("file read", "SELECT * FROM read_text('/etc/passwd')", 403, "forbidden", "disabled by configuration"),
    ("file glob", "SELECT * FROM glob('/*')", 403, "forbidden", "disabled by configuration"),
    ("secrets", "SELECT * FROM duckdb_secrets()", 403, "forbidden", "disabled by configuration"),
    ("copy out", "COPY (SELECT * FROM events) TO '/tmp/leak.csv'", 400, "invalid_input", "read-only"),
    ("set", "SET threads = 64", 400, "invalid_input", "read-only"),
    ("two statements", "SELECT 1; SELECT 2", 400, "invalid_input", "2 statements"),
    ("cross join 1e8 x 1e8", "SELECT * FROM range(100000000) t1, range(100000000) t2", 400, "query_limit",
     "audit_limits."),
    ("long aggregate", "SELECT sum(a.range * b.range) FROM range(100000) a, range(100000) b", 400, "query_limit",
     "audit_limits.timeout_s"),
    ("too many rows", "SELECT * FROM range(200000)", 400, "query_limit", "audit_limits.max_rows"),
    ("other tenant's marker", "SELECT count(*) AS n FROM events WHERE payload LIKE '%Betamarker%'", 200, None, '[[0]]'),
    ("own marker", "SELECT count(*) > 0 AS found FROM events WHERE payload LIKE '%Zanzibarmarker%'", 200, None,
     "[[true]]"),
]


def env() -> dict:
    return {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}


class Server:
    """``palimpsest serve`` in a process of its own, its output (stdout and stderr) in ``output``."""

    def __init__(self, store: Path, port: int) -> None:
        self.url = f"http://127.0.0.1:{port}"
        self.output = store.parent / f"serve-{time.monotonic_ns()}.out"
        with open(self.output, "w") as out:  # a file, not a pipe: a pipe nobody reads would block its logging
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "palimpsest.cli", "--store", str(store), "serve", "--port", str(port),
                 "--embedder", "hash", "--num-shards", "2"], stdout=out, stderr=subprocess.STDOUT, text=True,
                env=env(), cwd=ROOT)

    @property
    def lines(self) -> list[str]:
        return self.output.read_text(errors="replace").splitlines()

    def ready(self, timeout: float = READY_S) -> bool:
        """Whether it printed that it serves (False: it exited first, or not within ``timeout``)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any("palimpsest serving" in line for line in self.lines):
                return True
            if self.proc.poll() is not None:
                return False
            time.sleep(0.2)
        return False

    def kill9(self) -> dict[int, int]:
        """SIGKILL; its descendants (pid → start time) as they were just before."""
        procs = descendants(self.proc.pid)
        self.proc.kill()
        self.proc.wait()
        return procs

    def stop(self, every: bool = False) -> int:
        """SIGTERM to the server (``every``: to it and to each of its descendants at once, as systemd's default
        ``KillMode=control-group`` stops a service); its exit code (SIGKILL after 120 s: -9)."""
        for pid in ([self.proc.pid, *descendants(self.proc.pid)] if every else [self.proc.pid]):
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        try:
            return self.proc.wait(120)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()


def create_store(store: Path) -> dict[str, str]:
    """A new encrypted store with :data:`LIMITS`, and a key per tenant (created before the server starts)."""
    from palimpsest.config import StoreConfig
    from palimpsest.server.keys import KeyRing
    from palimpsest.settings import StoreSettings

    settings = dataclasses.replace(StoreSettings(), audit_limits=LIMITS).to_json()
    StoreConfig.create(store, num_shards=2, embedder="hash", settings=settings)
    ring = KeyRing(store)
    return {tenant: ring.create(tenant)[0] for tenant in MARKERS}


def ingest(client: httpx.Client, keys: dict[str, str]) -> list[str]:
    """Each tenant's marked messages, and a user written in NFD; the problems met."""
    problems = []
    for tenant, (english, chinese) in MARKERS.items():
        msgs = [{"text": f"I keep my {english} notebook in the blue drawer", "occurred_at": "2024-05-01T09:00:00Z",
                 "client_message_id": f"{tenant}-1"},
                {"text": f"周末我去{chinese}附近散步", "occurred_at": "2024-05-02T09:00:00Z",
                 "client_message_id": f"{tenant}-2"}]
        # a write refused by admission (503) while the server warms up is sent again after its Retry-After
        r, _, _ = post_admitted(client, "/v1/users/alice/messages", {"messages": msgs}, auth(keys[tenant]))
        if r.status_code != 200:
            problems.append(f"ingest {tenant}: {r.status_code} {r.text[:200]}")
    r, _, _ = post_admitted(client, f"/v1/users/{quote(NFD, safe='')}/messages", {"messages": [
        {"text": "I keep bees on the roof", "occurred_at": "2024-05-03T09:00:00Z", "client_message_id": "j-1"}]},
        auth(keys["acme"]))
    if r.status_code != 200:
        problems.append(f"ingest {NFD!r}: {r.status_code} {r.text[:200]}")
    return problems


def auth(key: str) -> dict:
    return {"Authorization": f"Bearer {key}"}


def audit_probes(client: httpx.Client, key: str) -> list[dict]:
    out = []
    for name, query, status, code, phrase in AUDIT_PROBES:
        started = time.perf_counter()
        r = client.post("/v1/audit/sql", json={"query": query}, headers=auth(key))
        seconds = time.perf_counter() - started
        body = r.json()
        text = json.dumps(body.get("rows") if r.status_code == 200 else body, ensure_ascii=False)
        ok = (r.status_code == status and (code is None or body.get("error") == code) and phrase in text
              and "retry-after" not in r.headers and seconds < LIMITS.timeout_s + 10.0)  # stopped, not run out
        out.append({"name": name, "query": query, "status": r.status_code, "expected": status,
                    "error": body.get("error"), "retry_after": r.headers.get("retry-after"),
                    "seconds": round(seconds, 3), "answer": text[:300], "ok": ok})
    r = client.post("/v1/audit/sql", json={"query": "SELECT 1", "tenant": "beta"}, headers=auth(key))
    out.append({"name": "another tenant named", "status": r.status_code, "expected": 403,
                "retry_after": r.headers.get("retry-after"), "ok": r.status_code == 403})
    return out


def cli(args: list[str], key: str | None = None) -> dict:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "palimpsest.cli", *args], capture_output=True, text=True,
                          env={**env(), **({"PALIMPSEST_API_KEY": key} if key else {})}, cwd=ROOT, timeout=300)
    return {"args": args, "rc": done.returncode, "stderr": done.stderr.strip()[-400:],
            "seconds": round(time.perf_counter() - started, 3), "traceback": "Traceback" in done.stderr}


def cli_probes(base: list[str], key: str | None, runner=cli) -> list[dict]:
    """Bad, forbidden and costly queries through the CLI (``runner``: :func:`cli` or one of its shape): exit code
    2 and a message that names the problem."""
    out = []
    for query, phrase in (("SELECT * FROM nope", "nope does not exist"),
                          ("SELECT * FROM read_text('/etc/passwd')", "disabled by configuration"),
                          ("SELECT * FROM range(200000)", "audit_limits.max_rows")):
        run = runner([*base, "sql", query], key)
        run["ok"] = run["rc"] == 2 and phrase in run["stderr"] and not run["traceback"]
        out.append(run)
    return out


def unicode_probe(client: httpx.Client, key: str) -> dict:
    users = client.post("/v1/audit/sql", headers=auth(key), json={
        "query": "SELECT DISTINCT user_id FROM events ORDER BY user_id"}).json().get("rows", [])
    r = client.post(f"/v1/users/{quote(NFC, safe='')}/search", json={"query": "bees roof", "k": 3},
                    headers=auth(key))
    hits = [h["text"] for h in r.json().get("hits", [])] if r.status_code == 200 else []
    ids = [u[0] for u in users]
    return {"user_ids": ids, "nfc_search_status": r.status_code, "hits": hits,
            "ok": ids == sorted(["alice", NFC]) and hits[:1] == ["I keep bees on the roof"]}


def grep_copy(store: Path, copy: Path, snapshots_wanted: bool = True) -> dict:
    """Copy the stopped store; the files of the copy that hold any marker (UTF-8 bytes). ``snapshots_wanted``: the
    store must hold snapshots (a drained stop writes them; a stop without a drain leaves the log alone)."""
    shutil.copytree(store, copy)
    needles = [m.encode("utf-8") for pair in MARKERS.values() for m in pair]
    files = [p for p in sorted(copy.rglob("*")) if p.is_file()]
    holding = [str(p.relative_to(copy)) for p in files if any(n in p.read_bytes() for n in needles)]
    snapshots = sum(1 for p in files if p.suffix == ".snap")
    return {"files": len(files), "bytes": sum(p.stat().st_size for p in files), "snapshots": snapshots,
            "holding_a_marker": holding, "ok": not holding and (snapshots > 0 or not snapshots_wanted)}


def restart_after_kill(server: Server, store: Path, port: int, client: httpx.Client, key: str) -> tuple[dict, Server]:
    """kill -9, then at once a new server on the same port: up, every write there, nothing of the old one left."""
    old = server.kill9()
    killed_at = time.perf_counter()
    again = Server(store, port)
    up = again.ready()
    ready_s = time.perf_counter() - killed_at
    left = running(old)
    texts = []
    if up:
        r = client.post("/v1/users/alice/search", json={"query": "notebook drawer", "k": 3}, headers=auth(key))
        texts = [h["text"] for h in r.json().get("hits", [])] if r.status_code == 200 else []
    report = {"restarted": up, "ready_s": round(ready_s, 2), "old_processes": len(old),
              "old_processes_left": sorted(left), "waited_for_port": any("still in use" in x for x in again.lines),
              "writes_found": any(MARKERS["acme"][0] in t for t in texts)}
    if not up:
        report["output"] = again.lines[-15:]
    report["ok"] = up and not left and report["writes_found"]
    return report, again


def late_write(client: httpx.Client, key: str) -> bool:
    """A message pair (English, Chinese) written to the restarted server just before it is stopped: whether it was
    acknowledged (opening the store after the stop must find it, :data:`LATE`)."""
    msgs = [{"text": LATE[0], "occurred_at": "2024-05-04T09:00:00Z", "client_message_id": "late-1"},
            {"text": LATE[1], "occurred_at": "2024-05-05T09:00:00Z", "client_message_id": "late-2"}]
    r, _, _ = post_admitted(client, "/v1/users/maya/messages", {"messages": msgs}, auth(key))
    return r.status_code == 200


def run(work: Path, cli_runner=cli, stop_every: bool = False) -> dict:
    """The whole probe in ``work``; ``checks_failed`` names what did not hold. ``cli_runner`` runs the CLI probes:
    :func:`cli` (a process each, as a user runs them), or a function of the same arguments and result.
    ``stop_every``: the restarted server is stopped with SIGTERM to it and to every process it started at once
    (systemd's default ``KillMode=control-group``) instead of to the server alone; either way it must exit 0 and
    leave nothing, and ``stop_said`` is its last "stopped" line (drained, or "stopped without draining")."""
    started = time.perf_counter()
    store, port = work / "store", free_port()
    keys = create_store(store)
    report: dict = {"limits": dataclasses.asdict(LIMITS)}
    server = Server(store, port)
    try:
        if not server.ready():
            return {**report, "checks_failed": ["server did not start"], "server_output": server.lines[-20:]}
        with httpx.Client(base_url=server.url, timeout=120) as client:
            report["ingest_problems"] = ingest(client, keys)
            report["audit"] = audit_probes(client, keys["acme"])
            report["cli_remote"] = cli_probes(["--server", server.url], keys["acme"], cli_runner)
            report["unicode"] = unicode_probe(client, keys["acme"])
            report["restart"], server = restart_after_kill(server, store, port, client, keys["acme"])
            report["late_write"] = report["restart"]["restarted"] and late_write(client, keys["acme"])
        before_stop, stop_at = descendants(server.proc.pid), time.perf_counter()
        report["stop_rc"] = server.stop(every=stop_every)
        report["stop_s"] = round(time.perf_counter() - stop_at, 2)
        report["left_after_stop"] = sorted(left_after(before_stop, LEFT_WAIT_S))
        report["stop_said"] = next((x for x in reversed(server.lines) if x.startswith("stopped")), None)
    finally:
        if server.proc.poll() is None:
            server.proc.kill()
            server.proc.wait()
    report["cli_local"] = cli_probes(["--store", str(store)], None, cli_runner)
    report["grep"] = grep_copy(store, work / "copy", snapshots_wanted=not stop_every)
    failed = list(report["ingest_problems"])
    failed += [f"audit: {p['name']}" for p in report["audit"] if not p["ok"]]
    failed += [f"cli: {' '.join(p['args'][-2:])}" for p in report["cli_remote"] + report["cli_local"] if not p["ok"]]
    failed += [name for name in ("unicode", "restart", "grep") if not report[name]["ok"]]
    failed += [] if report["late_write"] else ["a write to the restarted server"]
    if report["stop_rc"] != 0 or report["left_after_stop"]:
        failed.append("clean stop")
    report["checks_failed"] = failed
    report["seconds"] = round(time.perf_counter() - started, 1)
    return report


def main(out: Path, work: Path | None = None) -> int:
    import tempfile

    own = work is None
    work = work or Path(tempfile.mkdtemp(prefix="palimpsest-probe-"))
    try:
        report = run(work)
    finally:
        if own:
            shutil.rmtree(work, ignore_errors=True)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    print(json.dumps({k: report.get(k) for k in ("checks_failed", "restart", "grep", "seconds")}, indent=2,
                     ensure_ascii=False))
    print(f"wrote {out}")
    return 0 if not report["checks_failed"] else 1
