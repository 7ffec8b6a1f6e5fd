"""Issue 41 on real components: the adversarial probe of a served store (``benchmarks.chaos --probe``: audit SQL
over HTTP and the CLI, Unicode ids, ``kill -9`` of ``palimpsest serve`` and a restart at once, a grep of the
copied store), a copied store's files hold no message text, and an older store's NFD user id is found with the
audit SQL and forgotten together with its NFC form.

The probe's restarted server is stopped as systemd stops a service by default (``KillMode=control-group``):
SIGTERM to the server and to every process it started at once, Ray's own included. Ray's agents and raylet end on
that signal, so nothing is left to drain through: the server must stop once its raylet is gone, without a drain,
with exit code 0, say why, leave no process behind (its guard, which ignores the signal, ends what Ray left), and
the write it acknowledged just before must be in the store when it is opened again. (A stop that drains, Ctrl-C
and SIGTERM to the process group, is ``tests/integration/test_serve_cli.py``.)"""

from __future__ import annotations

import json
import shutil
import time
import unicodedata
from datetime import UTC, datetime

import pytest

from benchmarks import chaos_probe
from benchmarks.fuzz_cases import run_cli
from events.commands import RecordMessage
from palimpsest import Memory
from palimpsest.cli import main
from palimpsest.ingest import send_batches

pytestmark = pytest.mark.integration
NFC, NFD = unicodedata.normalize("NFC", "josé"), unicodedata.normalize("NFD", "josé")
MARKERS = ("Quokkamarker", "鼓楼标记")
FIND_NFD = ("SELECT DISTINCT tenant, user_id FROM events "
            "WHERE user_id <> nfc_normalize(user_id) OR tenant <> nfc_normalize(tenant)")


def test_the_adversarial_probe_of_a_served_store_finds_nothing(ray_cluster, tmp_path, monkeypatch):
    def cli_here(args: list[str], key: str | None = None) -> dict:
        """The probe's CLI runs in this process (``benchmarks.chaos --probe`` starts a process for each): the same
        exit code and stderr; a traceback would be an exception raised here."""
        if key:
            monkeypatch.setenv("PALIMPSEST_API_KEY", key)
        else:
            monkeypatch.delenv("PALIMPSEST_API_KEY", raising=False)
        started = time.perf_counter()
        rc, err = run_cli(args)
        return {"args": args, "rc": rc, "stderr": err.strip()[-400:], "traceback": "Traceback" in err,
                "seconds": round(time.perf_counter() - started, 3)}

    report = chaos_probe.run(tmp_path, cli_here, stop_every=True)
    assert report["checks_failed"] == [], json.dumps(report, indent=1, ensure_ascii=False)[:4000]
    statuses = {p["name"]: p["status"] for p in report["audit"]}
    assert statuses["unknown table"] == statuses["getenv"] == 400 and statuses["file read"] == 403
    assert statuses["cross join 1e8 x 1e8"] == statuses["long aggregate"] == 400
    assert all(p["retry_after"] is None for p in report["audit"])  # nothing a client should retry
    restart = report["restart"]
    assert restart["restarted"] and restart["writes_found"] and restart["old_processes"] > 5
    assert restart["old_processes_left"] == []  # the killed server's Ray (agents included) is gone
    assert report["stop_rc"] == 0 and report["left_after_stop"] == [], report["stop_said"]
    assert report["late_write"] and report["stop_said"].startswith("stopped without draining: Ray's own processes (")
    # stopped without a drain, the store holds no snapshot: the next test greps a store's sealed snapshots
    assert report["grep"]["files"] > 0 and report["grep"]["holding_a_marker"] == []
    assert report["unicode"]["user_ids"] == ["alice", NFC]
    with Memory.open(tmp_path / "store") as mem:  # nothing acknowledged before the stop was lost
        assert chaos_probe.LATE[0] in {h.text for h in mem.search("acme", "maya", "Lisbon", k=5)}
        assert chaos_probe.LATE[1] in {h.text for h in mem.search("acme", "maya", "里斯本", k=5)}


def test_no_file_of_a_copied_encrypted_store_holds_a_message_text(ray_cluster, tmp_path):
    store = tmp_path / "store"
    with Memory.open(store, num_shards=2, embedder="hash") as mem:
        for user in ("alice", "bob", NFD):
            mem.add_messages([{"text": f"My {MARKERS[0]} lives in the garden", "occurred_at": "2024-05-01T09:00:00Z"},
                              {"text": f"我周末去{MARKERS[1]}附近喝茶", "occurred_at": "2024-05-02T09:00:00Z"}],
                             tenant="acme", user_id=user)
        assert MARKERS[1] in mem.search("acme", NFC, "喝茶", k=1)[0].text
    copy = tmp_path / "copy"
    shutil.copytree(store, copy)
    files = [p for p in copy.rglob("*") if p.is_file()]
    assert sum(p.suffix == ".snap" for p in files) == 3  # one per user: NFD and NFC "josé" are one
    needles = [m.encode("utf-8") for m in MARKERS]
    assert [str(p.relative_to(copy)) for p in files if any(n in p.read_bytes() for n in needles)] == []


def test_an_older_stores_nfd_user_is_found_by_the_audit_sql_and_forgotten_with_its_nfc_form(ray_cluster, tmp_path,
                                                                                            capsys):
    store = tmp_path / "store"
    with Memory.open(store, num_shards=2, embedder="hash") as mem:
        mem.add_messages([{"text": "I keep bees on the roof", "occurred_at": "2024-05-01T09:00:00Z"}],
                         tenant="acme", user_id=NFD)  # normalised: recorded under NFC
        # What a release before normalisation wrote: the same person under the NFD spelling, routed as given.
        legacy = RecordMessage.model_construct(tenant="acme", user_id=NFD, text="我以前住在杭州",
                                               occurred_at=datetime(2023, 1, 1, tzinfo=UTC), client_message_id="old")
        send_batches(mem.shards, mem.embedder, [legacy], None, 10, False)
        assert None not in mem.shards.cluster.lookup([("acme", NFC), ("acme", NFD)])  # two streams, one person
        assert [h.text for h in mem.search("acme", NFD, "bees 杭州", k=5)] == ["I keep bees on the roof"]

        assert main(["--store", str(store), "sql", "--json", FIND_NFD]) == 2  # the store is open: said, no trace
        assert "running store" in capsys.readouterr().err
        outcome = mem.forget("acme", NFC)  # the spelling the caller has today finds the old one too
    assert outcome["forgotten"] and outcome["user_id"] == NFC
    [other] = outcome["other_forms"]
    assert other["forgotten"] and other["user_id"] == NFD

    assert main(["--store", str(store), "sql", "--json", FIND_NFD]) == 0
    assert json.loads(capsys.readouterr().out) == [{"tenant": "acme", "user_id": NFD}]  # its events stay, sealed
    query = "SELECT user_id, kind FROM events WHERE kind IN ('user_forgotten', 'message_recorded') ORDER BY seq"
    assert main(["--store", str(store), "sql", "--json", query]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert sorted((r["user_id"], r["kind"]) for r in rows) == sorted(
        [(NFC, "message_recorded"), (NFC, "user_forgotten"), (NFD, "message_recorded"), (NFD, "user_forgotten")])
    assert main(["--store", str(store), "sql", "--json", "SELECT payload FROM events WHERE kind = "
                 "'message_recorded'"]) == 0
    assert "杭州" not in capsys.readouterr().out  # both forms erased: their payloads no longer open
