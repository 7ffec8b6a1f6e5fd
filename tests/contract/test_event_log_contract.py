"""One contract every event-log backend passes (after pyeventsourcing's tests/persistence.py).

``EventLogContract`` holds the tests; each backend subclasses it and says how
to make a fresh log. Backend-specific guarantees (durability, the single-writer
lock) live in the backend's subclass.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from events.duckdb_log import DuckDBEventLog
from events.envelope import seal
from events.errors import ConcurrencyError
from events.log import CommandRecord, EventLog, InMemoryEventLog, ScanFilter
from tests.builders import T0, embedding, message, pending, touch

ALICE, BOB, GLOBEX_ALICE = ("acme", "alice"), ("acme", "bob"), ("globex", "alice")


def ids(envelopes) -> list[str]:
    return [e.event_id for e in envelopes]


def snapshot(log: EventLog) -> tuple:
    return log.count(), log.streams(), {s: log.head(*s) for s in log.streams()}, list(log.scan())


class EventLogContract:
    """Tests every backend passes. Subclasses implement ``make_log``."""

    def make_log(self, tmp_path: Path) -> EventLog:
        raise NotImplementedError

    @pytest.fixture
    def log(self, tmp_path):
        log = self.make_log(tmp_path)
        yield log
        log.close()

    @pytest.fixture
    def filled(self, log):
        """Six events over three streams, in two batches; e4 and e6 occur when recorded (now)."""
        log.append([
            pending("e1", message("tea", "c1", occurred_at=T0), *ALICE),
            pending("e2", message("coffee", "c2", occurred_at=T0 + timedelta(days=1)), *BOB),
            pending("e3", message("我喜欢在周末去爬山", "c3", occurred_at=T0 + timedelta(days=2)), *GLOBEX_ALICE),
        ])
        log.append([
            pending("e4", embedding("e1", [0.6, 0.8]), *ALICE),
            pending("e5", message("juice", "c5", occurred_at=T0 + timedelta(days=3)), *ALICE),
            pending("e6", touch("e2"), *BOB),
        ])
        return log

    # -- sequence numbers ---------------------------------------------
    def test_seq_is_assigned_one_to_n_per_stream_independently(self, log):
        stored = log.append([
            pending("a1", message("1", "a1"), *ALICE),
            pending("b1", message("1", "b1"), *BOB),
            pending("a2", message("2", "a2"), *ALICE),
        ])
        stored += log.append([pending("g1", message("1", "g1"), *GLOBEX_ALICE), pending("a3", message("3", "a3"), *ALICE)])

        assert [(e.stream, e.seq) for e in stored] == [(ALICE, 1), (BOB, 1), (ALICE, 2), (GLOBEX_ALICE, 1), (ALICE, 3)]
        assert (log.head(*ALICE), log.head(*BOB), log.head(*GLOBEX_ALICE), log.head("acme", "nobody")) == (3, 1, 1, 0)
        assert log.streams() == [ALICE, BOB, GLOBEX_ALICE]
        assert log.count() == 5

    def test_append_returns_the_stored_envelopes_of_one_batch(self, log):
        before = datetime.now(UTC)
        stored = log.append([pending("a1", message("tea", "c1"), *ALICE), pending("a2", touch("a1"), *ALICE)])

        assert ids(stored) == ["a1", "a2"]
        assert stored[0].recorded_at == stored[1].recorded_at >= before
        assert stored[0].occurred_at == T0  # a message occurs when it says it did
        assert stored[1].occurred_at == stored[1].recorded_at  # a touch occurs when it is recorded
        assert [e.kind for e in stored] == ["message_recorded", "memory_touched"]

    def test_empty_append_writes_nothing(self, filled):
        before = snapshot(filled)
        assert filled.append([]) == []
        assert snapshot(filled) == before

    # -- command records ------------------------------------------------
    def test_a_command_is_recorded_with_its_events_in_one_append(self, filled):
        record = CommandRecord("cmd-1", "RecordReply", '{"used": ["e1"]}', "acme", "alice", ("a9",))
        [stored] = filled.append([pending("a9", touch("e1"), *ALICE)], command=record)

        assert filled.command("cmd-1") == record and stored.event_id == "a9"
        assert filled.command("cmd-2") is None

    def test_a_command_without_events_is_recorded_too(self, filled):
        before = snapshot(filled)
        assert filled.append([], command=CommandRecord("dry-1", "SweepArchive", "[]")) == []
        assert filled.command("dry-1") == CommandRecord("dry-1", "SweepArchive", "[]")
        assert snapshot(filled) == before

    def test_a_command_id_recorded_twice_rejects_the_second_batch_whole(self, filled):
        filled.append([pending("a9", touch("e1"), *ALICE)], command=CommandRecord("cmd-1", "RecordReply", "1"))
        before = snapshot(filled)
        with pytest.raises(ConcurrencyError):
            filled.append([pending("a10", touch("e1"), *ALICE)], command=CommandRecord("cmd-1", "RecordReply", "2"))
        assert snapshot(filled) == before and filled.command("cmd-1").outcome == "1"

    def test_a_rejected_batch_records_no_command(self, filled):
        with pytest.raises(ConcurrencyError):
            filled.append([pending("e1", touch("e1"), *ALICE)], command=CommandRecord("cmd-x", "RecordReply", "1"))
        assert filled.command("cmd-x") is None

    # -- reading ------------------------------------------------------
    def test_scan_returns_every_event_in_tenant_user_seq_order(self, filled):
        assert [(e.stream, e.seq, e.event_id) for e in filled.scan()] == [
            (ALICE, 1, "e1"), (ALICE, 2, "e4"), (ALICE, 3, "e5"), (BOB, 1, "e2"), (BOB, 2, "e6"), (GLOBEX_ALICE, 1, "e3"),
        ]

    def test_scan_tails_returns_each_streams_events_after_its_head(self, filled):
        tails = list(filled.scan_tails({ALICE: 2, BOB: 2}))  # globex/alice not given: all of it
        assert [(e.stream, e.seq, e.event_id) for e in tails] == [(ALICE, 3, "e5"), (GLOBEX_ALICE, 1, "e3")]
        assert [e.event_id for e in filled.scan_tails({})] == [e.event_id for e in filled.scan()]
        assert [e.event_id for e in filled.scan_tails({("nobody", "x"): 5})] == [e.event_id for e in filled.scan()]

    def test_checksums_cover_each_streams_events_up_to_the_given_head(self, filled):
        sums = filled.checksums({ALICE: 2, BOB: 2})
        assert set(sums) == {ALICE, BOB}
        assert sums == filled.checksums({ALICE: 2, BOB: 2})  # stable
        assert filled.checksums({ALICE: 3})[ALICE] != sums[ALICE]  # one more event
        assert filled.checksums({}) == {} and filled.checksums({("nobody", "x"): 4}) == {}

    def test_scan_orders_stream_ids_by_code_point(self, log):
        # Backends must agree on the order of non-ASCII and mixed-case ids (no locale collation).
        tenants = ["租户", "é", "a", "Z", "_", "B"]
        log.append([pending(f"e-{t}", message("x", "c"), t, "u") for t in tenants])
        assert [e.tenant for e in log.scan()] == sorted(tenants) == ["B", "Z", "_", "a", "é", "租户"]
        assert log.streams() == [(t, "u") for t in sorted(tenants)]

    def test_scan_returns_the_events_as_appended(self, log):
        stored = log.append([
            pending("m", message("我喜欢在周末去爬山 and hiking", "c1", speaker="李雷", turn_id="D1:1"), *ALICE),
            pending("v", embedding("m", [0.25, -1.5, 3.0]), *ALICE),
            pending("t", touch("m", reason="context", query="爬山"), *ALICE),
        ])
        assert list(log.scan()) == stored

    @pytest.mark.parametrize(
        ("flt", "expected"),
        [
            (ScanFilter(), ["e1", "e4", "e5", "e2", "e6", "e3"]),
            (ScanFilter(tenant="acme"), ["e1", "e4", "e5", "e2", "e6"]),
            (ScanFilter(user_id="alice"), ["e1", "e4", "e5", "e3"]),
            (ScanFilter(tenant="acme", user_id="bob"), ["e2", "e6"]),
            (ScanFilter(tenant="initech"), []),
            (ScanFilter(from_seq=2), ["e4", "e5", "e6"]),
            (ScanFilter(to_seq=1), ["e1", "e2", "e3"]),
            (ScanFilter(from_seq=2, to_seq=2), ["e4", "e6"]),
            (ScanFilter(since=T0 + timedelta(days=1), until=T0 + timedelta(days=2)), ["e2", "e3"]),
            (ScanFilter(until=T0), ["e1"]),
            (ScanFilter(since=T0 + timedelta(days=3)), ["e4", "e5", "e6"]),
            # the same instant as T0 + 1 day, written in UTC+2
            (ScanFilter(since=datetime(2024, 5, 2, 11, 0, tzinfo=timezone(timedelta(hours=2))),
                        until=datetime(2024, 5, 2, 11, 0, tzinfo=timezone(timedelta(hours=2)))), ["e2"]),
            (ScanFilter(kinds=("message_recorded",)), ["e1", "e5", "e2", "e3"]),
            (ScanFilter(kinds=("message_embedded", "memory_touched")), ["e4", "e6"]),
            (ScanFilter(tenant="acme", user_id="alice", from_seq=2, kinds=("message_recorded",)), ["e5"]),
        ],
        ids=["all", "tenant", "user", "stream", "unknown-tenant", "from-seq", "to-seq", "seq-range", "time-range",
             "until", "since", "since-offset", "kind", "kinds", "combined"],
    )
    def test_scan_filter(self, filled, flt, expected):
        assert ids(filled.scan(flt)) == expected

    def test_scan_filter_with_an_empty_kinds_tuple_matches_nothing(self, filled):
        assert ids(filled.scan(ScanFilter(kinds=()))) == []

    # -- all-or-nothing batches ---------------------------------------
    def test_batch_repeating_an_event_id_is_rejected_whole(self, filled):
        before = snapshot(filled)
        with pytest.raises(ConcurrencyError):
            filled.append([pending("n1", message("new", "n1"), *ALICE), pending("n1", message("again", "n2"), *BOB)])
        assert snapshot(filled) == before

    def test_batch_reusing_a_stored_event_id_is_rejected_whole(self, filled):
        before = snapshot(filled)
        with pytest.raises(ConcurrencyError):
            filled.append([
                pending("n1", message("new", "n1"), *ALICE),
                pending("n2", message("new", "n2"), "initech", "carol"),
                pending("e3", message("clash", "n3"), *BOB),
            ])
        assert snapshot(filled) == before
        assert filled.head("initech", "carol") == 0

    def test_after_a_rejected_batch_seq_continues_without_a_gap(self, filled):
        with pytest.raises(ConcurrencyError):
            filled.append([pending("n1", message("new", "n1"), *ALICE), pending("e1", message("clash", "n2"), *ALICE)])
        [stored] = filled.append([pending("n3", message("next", "n3"), *ALICE)])
        assert stored.seq == 4

    def test_stale_expected_head_rejects_the_batch(self, filled):
        before = snapshot(filled)
        with pytest.raises(ConcurrencyError, match="is at seq 3, expected 2"):
            filled.append(
                [pending("n1", message("new", "n1"), *ALICE), pending("n2", message("new", "n2"), *BOB)],
                expected={BOB: 2, ALICE: 2},  # bob's head is current, alice's is stale
            )
        assert snapshot(filled) == before

    def test_current_expected_heads_accept_the_batch(self, filled):
        stored = filled.append([pending("n1", message("new", "n1"), *ALICE)], expected={ALICE: 3, BOB: 2})
        assert stored[0].seq == 4

    def test_duplicate_seq_is_rejected_via_expected_heads(self, log):
        # Two writers both decided on an empty stream: the second must not reuse seq 1.
        log.append([pending("w1", message("first writer", "w1"), *ALICE)], expected={ALICE: 0})
        with pytest.raises(ConcurrencyError, match="is at seq 1, expected 0"):
            log.append([pending("w2", message("second writer", "w2"), *ALICE)], expected={ALICE: 0})
        assert [(e.event_id, e.seq) for e in log.scan()] == [("w1", 1)]

    def test_backend_refuses_a_seq_already_taken(self, filled):
        # Below the head check: the storage itself must not hold two events with one (stream, seq).
        before = snapshot(filled)
        taken = seal(pending("n1", message("dup seq", "n1"), *ALICE), seq=2, recorded_at=datetime.now(UTC))
        with pytest.raises(ConcurrencyError):
            filled._write([taken], None)
        assert snapshot(filled) == before


class TestInMemoryEventLog(EventLogContract):
    def make_log(self, tmp_path: Path) -> EventLog:
        return InMemoryEventLog()


DUCKDB_SCRIPT_PRELUDE = "import sys; from events.duckdb_log import DuckDBEventLog; from events.errors import StoreError\n"


def run_python(code: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", DUCKDB_SCRIPT_PRELUDE + textwrap.dedent(code)],
        capture_output=True, text=True, timeout=timeout, cwd=Path(__file__).resolve().parents[2],
    )


class TestDuckDBEventLog(EventLogContract):
    def make_log(self, tmp_path: Path) -> EventLog:
        return DuckDBEventLog(tmp_path / "log" / "shard-000.duckdb")

    def test_an_edited_payload_changes_the_checksum(self, filled):
        before = filled.checksums({ALICE: 3, BOB: 2})
        filled._con.execute("UPDATE events SET payload = replace(payload, 'juice', 'juicy') WHERE event_id = 'e5'")
        after = filled.checksums({ALICE: 3, BOB: 2})
        assert after[ALICE] != before[ALICE] and after[BOB] == before[BOB]

    def test_reopening_the_file_gives_the_same_events_heads_and_commands(self, filled):
        filled.append([], command=CommandRecord("cmd-1", "SweepArchive", '[{"reason": "x"}]', "acme", "alice"))
        before = snapshot(filled)
        filled.close()

        reopened = DuckDBEventLog(filled.path)
        try:
            assert snapshot(reopened) == before
            assert reopened.command("cmd-1") == CommandRecord("cmd-1", "SweepArchive", '[{"reason": "x"}]', "acme", "alice")
            [stored] = reopened.append([pending("n1", message("after reopen", "n1"), *BOB)])
            assert stored.seq == 3
        finally:
            reopened.close()

    def test_an_acknowledged_append_survives_a_killed_writer(self, tmp_path):
        path = tmp_path / "killed.duckdb"
        result = run_python(f"""
            import os, signal
            from tests.builders import message, pending
            log = DuckDBEventLog({str(path)!r})
            for i in range(5):
                log.append([pending(f"k{{i}}", message(f"msg {{i}}", f"k{{i}}"))])
                print(f"ack k{{i}}", flush=True)
            os.kill(os.getpid(), signal.SIGKILL)  # no close, no checkpoint
        """)
        assert result.returncode == -signal.SIGKILL, result.stderr
        acknowledged = [line.split()[1] for line in result.stdout.splitlines() if line.startswith("ack ")]
        assert acknowledged == [f"k{i}" for i in range(5)]

        log = DuckDBEventLog(path)
        try:
            assert ids(log.scan()) == acknowledged
            assert log.head("acme", "alice") == 5
        finally:
            log.close()

    def test_a_second_process_cannot_open_the_file_for_writing(self, filled):
        probe = f"""
            try:
                DuckDBEventLog({str(filled.path)!r}).close()
            except StoreError as exc:
                print("StoreError:", exc)
                sys.exit(3)
            print("opened")
        """
        locked = run_python(probe)
        assert locked.returncode == 3, locked.stdout + locked.stderr
        assert "another process holds it" in locked.stdout and "damaged" not in locked.stdout

        filled.close()  # once the writer is gone, the same probe succeeds
        assert run_python(probe).stdout.strip() == "opened"
