"""The `palimpsest` command line end to end, in-process on the module's local Ray.

The sample store is ingested once per session (the first `palimpsest ingest`, tests/integration/conftest.py),
then copied for each test; tests that run several commands needing the actors hold their copy open meanwhile
(tests/integration/cli_store.py).
"""

from __future__ import annotations

import json

import duckdb
import pytest

from events.errors import StoreError
from palimpsest import Memory
from tests.integration.cli_store import SAMPLE, copy_store, held, run

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def sample_store(ray_cluster, sample_template):
    path, printed = sample_template  # the session's one `palimpsest ingest` of the sample (conftest.py)
    assert "ingested 24 messages (24 new, 0 already stored)" in printed
    return path


@pytest.fixture
def store(sample_store, tmp_path) -> str:
    return copy_store(sample_store, tmp_path / "store")


def test_ingest_is_idempotent_and_search_context_replay_work(store, capsys):
    with held(store):
        rc, out, _ = run(capsys, "--store", store, "ingest", str(SAMPLE), "--quiet")
        assert (rc, "(0 new, 24 already stored)" in out) == (0, True)

        rc, out, _ = run(capsys, "--store", store, "search", "--tenant", "demo", "--user", "maya", "周末爬山", "-k", "3",
                         "--json")
        hits = json.loads(out)
        assert rc == 0 and hits[0]["turn_id"] == "atlas-2:1"
        assert hits[0]["provenance"]["event_ids"][0] == hits[0]["memory_id"]

        rc, out, _ = run(capsys, "--store", store, "context", "--tenant", "demo", "--user", "maya", "database",
                         "--budget", "60", "--json")
        ctx = json.loads(out)
        assert rc == 0 and 0 < ctx["tokens"] <= 60
        # every line traces to its turns: a turn's own id, or the turns a note was read from
        assert all(item["provenance"].get("turn_id") or item["provenance"].get("turn_ids") for item in ctx["items"])

        rc, out, _ = run(capsys, "--store", store, "replay")
        assert rc == 0 and "digests match" in out


def test_audit_commands_read_the_logs_without_actors(store, capsys):
    rc, out, _ = run(capsys, "--store", store, "events", "--tenant", "demo", "--user", "maya", "--kind", "message_recorded", "--json")
    rows = json.loads(out)
    assert rc == 0 and len(rows) == 24
    assert [r["seq"] for r in rows] == sorted(r["seq"] for r in rows)

    rc, out, _ = run(capsys, "--store", store, "sql", "SELECT kind, count(*) AS n FROM events GROUP BY kind ORDER BY kind", "--json")
    assert rc == 0
    assert {r["kind"]: r["n"] for r in json.loads(out)} == {
        "message_classified": 24, "message_embedded": 24, "message_recorded": 24,
        # 13 notes added from Maya's turns and 2 updates that supersede one each; 12 graph memories staged.
        "note_operation": 15, "graph_memory_staged": 12,
    }


def test_sql_refuses_writes_and_file_access_and_scopes_to_a_tenant(store, capsys, tmp_path):
    rc, _, err = run(capsys, "--store", store, "sql", f"COPY (SELECT * FROM events) TO '{tmp_path}/leak.csv'")
    assert rc == 2 and "a COPY statement" in err and "read-only" in err and not (tmp_path / "leak.csv").exists()
    rc, _, err = run(capsys, "--store", store, "sql", "SELECT * FROM read_text('/etc/hostname')")
    assert rc == 2 and "disabled by configuration" in err and "remove that function" in err
    assert "Traceback" not in err
    rc, out, _ = run(capsys, "--store", store, "sql", "SELECT DISTINCT tenant FROM events", "--tenant", "nobody",
                     "--json")
    assert rc == 0 and json.loads(out) == []


def test_feedback_judge_and_list_from_the_command_line(store, capsys):
    with held(store):
        rc, out, _ = run(capsys, "--store", store, "feedback", "judge", "--tenant", "demo", "--user", "maya",
                         "--input", "No, I told you we moved to MySQL", "--reply", "You use PostgreSQL", "--json")
        verdict = json.loads(out)
        assert rc == 0 and verdict["type"] == "negative" and "invalidate" in verdict["action_hints"]
        rc, out, _ = run(capsys, "--store", store, "feedback", "list", "--tenant", "demo", "--user", "maya")
        assert rc == 0 and out.startswith("negative") and "-- 1 signals" in out
        rc, _, err = run(capsys, "--store", store, "feedback", "judge", "--tenant", "demo", "--user", "maya",
                         "--input", "wrong", "--reply", "x", "--memory-id", "no-such-id")
        assert rc == 2 and "memory_ids" in err and "no-such-id" in err


def test_a_bad_file_is_rejected_whole_with_the_line_named(store, capsys, tmp_path):
    bad = tmp_path / "bad.jsonl"
    good = json.dumps({"text": "fine", "occurred_at": "2024-01-01T00:00:00+00:00", "tenant": "demo", "user_id": "maya"})
    bad.write_text(good + "\n" + json.dumps({"text": "no zone", "occurred_at": "2024-01-01T10:00:00"}) + "\n")

    rc, out, _ = run(capsys, "--store", store, "sql", "SELECT count(*) AS n FROM events", "--json")
    before = json.loads(out)
    rc, _, err = run(capsys, "--store", store, "ingest", str(bad), "--tenant", "demo", "--user", "maya", "--quiet")

    assert rc == 2
    assert "messages[1].occurred_at" in err and "timezone" in err
    rc, out, _ = run(capsys, "--store", store, "sql", "SELECT count(*) AS n FROM events", "--json")
    assert json.loads(out) == before == [{"n": 99}]


def test_locomo_files_ingest_one_user_per_sample(ray_cluster, tmp_path, capsys):
    sample = {
        "sample_id": "conv-x",
        "conversation": {
            "speaker_a": "Ann", "speaker_b": "Ben",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Ann", "dia_id": "D1:1", "text": "I started pottery classes"},
                {"speaker": "Ben", "dia_id": "D1:2", "text": "Show me!", "blip_caption": "a photo of a clay bowl"},
            ],
            "session_2_date_time": "10:00 am on 9 June, 2023",
            "session_2": [{"speaker": "Ann", "dia_id": "D2:1", "text": "My bowl came out of the kiln"}],
            "session_3_date_time": "11:00 am on 10 June, 2023",
        },
        "qa": [],
    }
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps([sample]))
    store = str(tmp_path / "store")

    rc, out, _ = run(capsys, "--store", store, "ingest", str(path), "--embedder", "hash", "--quiet")
    assert rc == 0 and "[locomo]" in out and "3 new" in out

    rc, out, _ = run(capsys, "--store", store, "events", "--tenant", "locomo", "--user", "conv-x", "--kind", "message_recorded", "--json")
    payloads = [json.loads(r["payload"]) for r in json.loads(out)]
    assert [p["turn_id"] for p in payloads] == ["D1:1", "D1:2", "D2:1"]
    assert payloads[1]["text"] == "Show me! [image: a photo of a clay bowl]"
    assert payloads[0]["occurred_at"].startswith("2023-05-08T13:56:00")


@pytest.mark.parametrize("encrypted, reason", [
    (False, "memory_touched v1 payload does not decode"),  # a plaintext store reads the edited payload
    (True, "does not open under its user's key: it was altered or moved"),  # a sealed one refuses the edited row
])
def test_a_log_that_does_not_decode_stops_the_store_with_the_reason(ray_cluster, tmp_path, capsys, encrypted, reason):
    path = tmp_path / "store"
    with Memory.open(path, num_shards=1, embedder="hash", encrypted=encrypted) as mem:
        mem.add_messages([{"text": "hello", "occurred_at": "2024-01-01T00:00:00+00:00"}], tenant="t", user_id="u")
    con = duckdb.connect(str(path / "log" / "shard-000.duckdb"))
    con.execute("UPDATE events SET payload = '{\"reason\": \"search_hit\"}', kind = 'memory_touched' "
                "WHERE kind = 'message_embedded'")  # a v1 row: its payload no longer fits its kind
    con.close()

    with pytest.raises(StoreError, match=reason):
        Memory.open(path)


def test_retention_shows_types_and_that_only_counted_touches_reinforce(store, capsys):
    with held(store):  # closed before the retention reads: the touches are written, as at the end of a command
        rc, out, _ = run(capsys, "--store", store, "search", "--tenant", "demo", "--user", "maya", "green tea", "--json")
        hits = json.loads(out)
        searched = {h["memory_id"] for h in hits}
        stale = {h["memory_id"] for h in hits if "superseded" in h["breakdown"]}  # "I prefer green tea", superseded
        rc, out, _ = run(capsys, "--store", store, "context", "--tenant", "demo", "--user", "maya", "database",
                         "--budget", "40", "--json")
        used = {i["memory_id"] for i in json.loads(out)["items"]}

    with held(store):
        rc, out, _ = run(capsys, "--store", store, "retention", "--tenant", "demo", "--user", "maya", "--json")
        rows = {r["memory_id"]: r for r in json.loads(out)}
        rc_early, out_early, _ = run(capsys, "--store", store, "retention", "--tenant", "demo", "--user", "maya",
                                     "--at", "2024-03-04T10:00:00+00:00", "--json")

    assert rc == 0 and len(rows) == 24
    # a context counts as an access of the turns it holds (a note it holds, such as the club's constraint, is no
    # turn: its source turn is exempt from decay)
    used &= set(rows)
    assert used and {m for m, r in rows.items() if r["access_count"]} == used
    assert all(rows[m]["ignored_touches"] >= 1 for m in searched - used - stale)  # a plain search hit is recorded only
    assert stale and all(rows[m]["ignored_touches"] == rows[m]["access_count"] == 0 for m in stale)  # a stale read: none
    by_turn = {r["turn_id"]: r for r in rows.values()}
    assert by_turn["atlas-1:4"]["memory_type"] == "decision"  # "We decided to use PostgreSQL ..."
    # Now, years after the 2024 conversations, what was never used has faded below the floor; what was just used has not.
    assert all(r["archive"] for m, r in rows.items() if m not in used and not r["exempt"])
    assert not any(rows[m]["archive"] for m in used)

    early = {r["turn_id"]: r for r in json.loads(out_early)}
    assert rc_early == 0
    assert early["atlas-1:4"]["retention"] > 0.99 and not early["atlas-1:4"]["archive"]  # minutes after it was said


def test_episodes_follow_the_conversations_with_summaries_in_their_language(store, capsys):
    rc, out, _ = run(capsys, "--store", store, "episodes", "--tenant", "demo", "--user", "maya", "--json")
    episodes = json.loads(out)

    assert rc == 0
    starts = {ep["turn_ids"][0]: ep["reason"] for ep in episodes}
    # Every conversation opens an episode (the hash encoder of this store may also split inside one on topic).
    assert [starts.get(f"atlas-{i}:1") for i in range(1, 7)] == ["start"] + ["conversation_change"] * 5
    assert all(len({t.split(":")[0] for t in ep["turn_ids"]}) == 1 for ep in episodes)  # never across conversations
    assert sum(len(ep["turn_ids"]) for ep in episodes) == 24
    chinese = next(ep for ep in episodes if ep["turn_ids"][0] == "atlas-2:1")
    assert any("\u4e00" <= ch <= "\u9fff" for ch in chinese["title"])  # the Chinese conversation keeps Chinese
    switch = next(ep for ep in episodes if ep["turn_ids"][0] == "atlas-4:1")
    assert "mysql" in [k.lower() for k in switch["keywords"]]


def test_replay_with_another_policy_reports_what_would_change_and_writes_nothing(store, capsys, tmp_path):
    patient = tmp_path / "patient.json"
    patient.write_text(json.dumps({"stability_days": {t: 100_000 for t in ("question", "chitchat", "unknown", "fact")}}))
    rc, out, _ = run(capsys, "--store", store, "sql", "SELECT count(*) AS n FROM events", "--json")
    events_before = json.loads(out)

    rc, out, _ = run(capsys, "--store", store, "replay", "--policy", str(patient), "--json")
    [user] = json.loads(out)

    assert rc == 0 and (user["tenant"], user["user_id"], user["memories"]) == ("demo", "maya", 24)
    # Years after 2024, the default policy has archived nearly everything; the patient one keeps the slow types.
    assert user["archived_other"] < user["archived_current"]
    kept = {item["turn_id"] for item in user["kept_only_under_other"]}
    assert kept and "atlas-1:2" in kept  # "Sounds fun. What stack are you thinking about?" is a question
    assert user["archived_only_under_other"] == []
    rc, out, _ = run(capsys, "--store", store, "sql", "SELECT count(*) AS n FROM events", "--json")
    assert json.loads(out) == events_before  # the log was only read

    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"reinforcement_factor": "fast"}))
    rc, _, err = run(capsys, "--store", store, "replay", "--policy", str(bad))
    assert rc == 2 and "reinforcement_factor" in err
