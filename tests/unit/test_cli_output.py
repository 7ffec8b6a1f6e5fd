"""What a person reads from the CLI: search hits with rank, date, speaker and a "why" in words; machine output
(``--json``) from every read command, found by walking the parser; no colour escapes off a terminal or under
NO_COLOR; long output paged on a terminal; lists cut by ``-k``/``--limit`` say how many more there are; the
renamed retention preset and its old name.

The commands run as ``palimpsest`` runs them (``palimpsest.cli.main``) against a real store of the packaged
sample dialogue, answered in this process (``tests/cli_inprocess.py``: the shard's own code, no Ray).
"""

from __future__ import annotations

import argparse
import fcntl
import io
import json
import os
import pty
import re
import select
import shutil
import struct
import termios

import pytest

from palimpsest import cli_style
from palimpsest.cli import build_parser, main
from palimpsest.operation import READ, WRITE
from palimpsest.operations import OPERATIONS
from projections.queries.score_terms import TERMS
from tests.cli_inprocess import make_sample_store, use_in_process

USER = ("--tenant", "demo", "--user", "maya")
QUESTION = "what does Maya drink in the morning"
ESCAPE = "\x1b["
# Names of the score's insides that a person should not have to read (without --verbose).
INTERNAL = re.compile(r"\b(?:%s)\b|_rank|_term|_bm25|_similarity|rrf|ranker_probability|=" % "|".join(
    t for t in TERMS if t not in ("episode", "note", "graph", "retention", "time", "session", "context", "speaker",
                                  "conversation")))
ISO_WITH_SPACE = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d")  # str(datetime): not ISO-8601


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    return make_sample_store(tmp_path_factory.mktemp("sample") / "store")


@pytest.fixture
def store(template, tmp_path, monkeypatch):
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("COLUMNS", raising=False)
    use_in_process(monkeypatch)
    return str(shutil.copytree(template, tmp_path / "store"))


def run(capsys, store: str, *argv: str) -> str:
    rc = main(["--store", store, *argv])
    out = capsys.readouterr()
    assert rc == 0, out.err
    return out.out


# -- search as a person reads it ----------------------------------------------------------------------------
def test_search_prints_rank_date_speaker_text_and_a_why_in_words(store, capsys):
    out = run(capsys, store, "search", *USER, QUESTION, "-k", "4")
    lines = out.splitlines()
    hits = [line for line in lines if re.match(r"^ ?\d+\. \d{4}-\d\d-\d\d  \S", line)]
    whys = [line for line in lines if line.startswith("    why: ")]
    assert [h.split(".")[0].strip() for h in hits] == ["1", "2", "3", "4"] and len(whys) == 4
    assert all("  Maya  " in h for h in hits)
    assert "I prefer green tea in the morning" in out
    assert any("matched 'morning'" in w or "close in meaning" in w for w in whys)
    assert all(1 <= len(w.removeprefix("    why: ").split("; ")) <= 2 for w in whys)  # the two strongest, at most
    assert INTERNAL.findall(out) == []
    assert ESCAPE not in out  # not a terminal: no colours


def test_search_verbose_adds_the_ids_the_events_and_the_whole_breakdown(store, capsys):
    out = run(capsys, store, "search", *USER, QUESTION, "-k", "2", "--verbose")
    assert out.count("    why: ") == 2 and out.count("    score ") == 2 and out.count("    terms ") == 2
    assert "dense_rank=" in out and "rrf=" in out and "· memory " in out and "· events " in out


def test_why_names_the_other_hit_it_shares_an_episode_or_a_conversation_with(store, capsys):
    out = run(capsys, store, "search", *USER, "coffee", "-k", "6")
    rank_of = {int(m.group(1)): m.group(2) for m in re.finditer(r"^ ?(\d+)\. .*\n    why: (.*)$", out, re.M)}
    for rank, why in rank_of.items():
        for other in map(int, re.findall(r"(?:episode|conversation) as #(\d+)", why)):
            assert other < rank  # an earlier hit, which the reader has just seen


def test_a_hit_text_is_cut_to_the_terminal_width_with_an_ellipsis(store, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "60")
    out = run(capsys, store, "search", *USER, QUESTION, "-k", "5")
    assert all(cli_style.display_width(line) <= 60 for line in out.splitlines())
    assert any(line.endswith("…") for line in out.splitlines())


def test_a_search_cut_at_k_says_how_many_more_memories_rank_below(store, capsys):
    out = run(capsys, store, "search", *USER, QUESTION, "-k", "3")
    assert out.splitlines()[-1] == "… and 21 more (use -k)"  # the sample's 24 messages, 3 shown
    out = run(capsys, store, "search", *USER, QUESTION, "-k", "30")
    assert "more (use -k)" not in out


def test_lists_cut_by_a_limit_say_how_many_more(store, capsys):
    everything = json.loads(run(capsys, store, "events", "--json"))
    out = run(capsys, store, "events", "--limit", "5")
    assert out.splitlines()[-1] == f"… and {len(everything) - 5} more (use --limit)"
    episodes = json.loads(run(capsys, store, "episodes", *USER, "--json"))
    out = run(capsys, store, "episodes", *USER, "coffee", "-k", "2")
    assert out.splitlines()[-1] == f"… and {len(episodes) - 2} more (use -k)"
    assert "more (use" not in run(capsys, store, "episodes", *USER)  # no query: every episode, nothing cut


# -- machine output from every read command -----------------------------------------------------------------
def _leaves(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> dict[str, argparse.ArgumentParser]:
    """Every runnable subcommand, by its words (``"notes list"``)."""
    found = {}
    for action in parser._actions:  # argparse keeps no public list of subparsers
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found.update(_leaves(sub, (*path, name)) or {" ".join((*path, name)): sub})
    return found


# Hand-written commands that change the store or its files, or run a service: they print an acknowledgement.
NOT_READS = {"ingest", "archive sweep", "archive restore", "archive archive", "notes review", "reply",
             "feedback judge", "adjustments revert", "consolidate", "unmerge", "tools", "serve", "keys create",
             "keys revoke", "mcp", "forget", "encrypt", "backup", "restore", "export", "reembed", "demo"}
DECLARED = {op.cli.command: op for op in OPERATIONS.values() if op.cli is not None}


def _declared_argv(op, ids: dict) -> list[str]:
    """A declared read's subcommand with its required parameters (ids of the sample where they name one)."""
    argv = op.cli.command.split() + (list(USER) if op.user == "required" else ["--tenant", "demo"])
    for p in op.params:
        if p.required:
            value = ids.get(p.name, "coffee")
            flag = p.flag or "--" + p.name.replace("_", "-")
            argv += [value] if not flag.startswith("-") else [flag, value]
    return argv


def _reads(ids: dict, tmp) -> dict[str, list[str]]:
    """Each read command and the arguments it is run with here: the hand-written ones, then every declared read
    (a new declared read is run here as soon as it is declared)."""
    hand_written = {
        "search": ["search", *USER, QUESTION],
        "context": ["context", *USER, QUESTION],
        "explain": ["explain", *USER, ids["memory_id"]],
        "stats": ["stats"],
        "policies": ["policies"],
        "replay": ["replay", "--policy", "category-decay"],
        "notes review": None,
        "merges": ["merges", *USER],
        "tool": ["tool", *USER, "search_memories", '{"query": "coffee"}'],
        "graph": ["graph", *USER, "--out", str(tmp / "graph.html")],
        "molt": ["molt", "history", *USER],
        "events": ["events", "--tenant", "demo"],
        "sql": ["sql", "SELECT kind, count(*) AS n FROM events GROUP BY kind"],
        "keys list": ["keys", "list"],
    }
    del hand_written["notes review"]  # reviewing writes its decisions: not a read
    declared = {name: _declared_argv(op, ids) for name, op in DECLARED.items() if op.kind == READ}
    return hand_written | declared


SAMPLE_IDS = {"memory_id": "m", "note_id": "n", "conversation_id": "atlas-1"}


def test_every_command_is_a_read_or_a_write_and_every_read_takes_json_and_no_pager(tmp_path):
    leaves = _leaves(build_parser())
    reads = set(_reads(SAMPLE_IDS, tmp_path))
    writes = NOT_READS | {name for name, op in DECLARED.items() if op.kind == WRITE}  # an admin read: listed above
    assert set(leaves) - writes == reads, "a new command: add it to _reads (with --json) or to NOT_READS"
    assert writes <= set(leaves) and not reads & writes
    for name in reads:
        options = {o for a in leaves[name]._actions for o in a.option_strings}
        assert {"--json", "--no-pager"} <= options, name


def test_every_read_command_prints_one_json_document_with_iso_times(store, capsys, tmp_path):
    hit = json.loads(run(capsys, store, "search", *USER, QUESTION, "-k", "1", "--json"))[0]
    notes = json.loads(run(capsys, store, "notes", "list", *USER, "--json"))
    ids = {**SAMPLE_IDS, "memory_id": hit["memory_id"], "note_id": notes[0]["note_id"]}
    printed = {}
    for name, argv in _reads(ids, tmp_path).items():
        out = run(capsys, store, *argv, "--json")
        printed[name] = json.loads(out)  # one document, or json.loads raises
        assert ESCAPE not in out and not ISO_WITH_SPACE.search(out), name
    assert printed["search"][0]["occurred_at"].startswith("2024-")
    assert printed["user-stats"]["messages"] == 24
    assert printed["policies"]["aliases"] == {"seed-002": "category-decay"}


def test_the_json_of_a_command_keeps_its_keys_from_run_to_run(store, capsys):
    first = json.loads(run(capsys, store, "episodes", *USER, "--json"))
    again = json.loads(run(capsys, store, "episodes", *USER, "--json"))
    assert [list(e) for e in first] == [list(e) for e in again]


# -- colours and the pager ----------------------------------------------------------------------------------
@pytest.fixture
def terminal():
    """A pseudo-terminal of 80 columns and 10 rows: (the stream a command writes to, what the terminal shows)."""
    main_fd, child_fd = pty.openpty()
    fcntl.ioctl(child_fd, termios.TIOCSWINSZ, struct.pack("HHHH", 10, 80, 0, 0))
    stream = os.fdopen(child_fd, "w", encoding="utf-8")

    def shown() -> str:
        stream.flush()
        chunks = []
        while True:
            ready, _, _ = select.select([main_fd], [], [], 0.2)
            if not ready:
                return b"".join(chunks).decode("utf-8", "replace")
            chunks.append(os.read(main_fd, 65536))

    yield stream, shown
    stream.close()
    os.close(main_fd)


def test_colours_only_on_a_terminal_and_never_under_no_color_or_json(terminal, monkeypatch):
    stream, _ = terminal
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    with cli_style.session(stream=stream, pager=False):
        assert cli_style.paint("1.", "rank").startswith(ESCAPE)
    with cli_style.session(stream=stream, pager=False, json=True):
        assert cli_style.paint("1.", "rank") == "1."
    monkeypatch.setenv("NO_COLOR", "1")
    with cli_style.session(stream=stream, pager=False):
        assert cli_style.paint("1.", "rank") == "1."
    monkeypatch.delenv("NO_COLOR")
    with cli_style.session(stream=io.StringIO(), pager=False):  # a pipe or a file
        assert cli_style.paint("1.", "rank") == "1."
    assert cli_style.paint("1.", "rank") == "1."  # and off again once the command ended


def test_no_color_gives_plain_search_output(store, capsys, monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    assert ESCAPE not in run(capsys, store, "search", *USER, QUESTION, "-k", "3", "--verbose")


def test_output_longer_than_the_screen_goes_through_the_pager_on_a_terminal(terminal, tmp_path, monkeypatch):
    stream, shown = terminal
    paged = tmp_path / "paged.txt"
    monkeypatch.setenv("PAGER", f"cat > {paged}")
    cli_style.page("short\n", stream)
    assert not paged.exists() and "short" in shown()
    long = "".join(f"line {i}\n" for i in range(30))
    cli_style.page(long, stream)
    assert paged.read_text() == long and "line 29" not in shown()
    paged.unlink()
    monkeypatch.setenv("PAGER", "no-such-pager-here")
    cli_style.page(long, stream)  # no such program: printed directly
    assert "line 29" in shown()


def test_a_read_command_pages_only_on_a_terminal_and_not_with_no_pager(terminal, tmp_path, monkeypatch, capsys):
    stream, shown = terminal
    paged = tmp_path / "paged.txt"
    monkeypatch.setenv("PAGER", f"cat > {paged}")
    long = "".join(f"hit {i}\n" for i in range(30))
    with cli_style.session(stream=stream, pager=True):
        print(long, end="")
    assert paged.read_text() == long
    paged.unlink()
    with cli_style.session(stream=stream, pager=False):  # --no-pager: printed as it comes
        print(long, end="")
    assert not paged.exists() and capsys.readouterr().out == long
    with cli_style.session(pager=True):  # stdout is not a terminal here: everything is printed
        print(long, end="")
    assert capsys.readouterr().out == long and not paged.exists()


def test_no_pager_is_a_read_option_and_a_pipe_gets_everything(store, capsys, monkeypatch, tmp_path):
    paged = tmp_path / "paged.txt"
    monkeypatch.setenv("PAGER", f"cat > {paged}")
    out = run(capsys, store, "retention", *USER, "--no-pager")
    assert out.count("\n") > 24 and not paged.exists()


# -- the retention presets ----------------------------------------------------------------------------------
def test_the_category_decay_preset_is_listed_by_its_new_name_and_its_old_name_still_works(store, capsys):
    from projections.folds.policy import CATEGORY_DECAY_POLICY, PRESETS, PolicyError, listing, preset

    assert preset("seed-002") is preset("category-decay") is CATEGORY_DECAY_POLICY
    assert [p["name"] for p in listing(CATEGORY_DECAY_POLICY)["presets"]] == list(PRESETS) == ["default",
                                                                                          "category-decay"]
    assert "deprecated" in CATEGORY_DECAY_POLICY.description
    with pytest.raises(PolicyError, match="no preset named 'seed-003'; use one of default, category-decay"):
        preset("seed-003")
    out = run(capsys, store, "policies")
    assert re.search(r"^  category-decay +A decay table per category", out, re.M)
    assert re.search(r"^  seed-002 +old name of category-decay, still accepted$", out, re.M)
    old = run(capsys, store, "replay", "--policy", "seed-002")
    assert "under policy 'category-decay'" in old
    assert old == run(capsys, store, "replay", "--policy", "category-decay")


def test_the_policies_route_lists_the_new_name_and_the_counterfactual_route_takes_the_old_one():
    pytest.importorskip("fastapi")
    from types import SimpleNamespace

    from fastapi.testclient import TestClient

    from palimpsest.server import access
    from palimpsest.server.app import build_app
    from projections.folds.policy import CATEGORY_DECAY_POLICY, DEFAULT_POLICY

    asked = []

    class Store:  # the route's side only: which policy it hands to Memory.counterfactual
        settings = SimpleNamespace(retention_policy=DEFAULT_POLICY)

        def counterfactual(self, policy, now, **_):
            asked.append(policy)
            return []

    app = build_app(4 << 20)
    state = SimpleNamespace(memory=Store(), streams={("acme", "alice")})
    app.dependency_overrides[access.caller] = lambda: access.Caller("k1", "acme", False, state)
    client = TestClient(app)
    listed = client.get("/v1/policies").json()
    assert [p["name"] for p in listed["presets"]] == ["default", "category-decay"]
    assert listed["live"]["name"] == "default" and listed["aliases"] == {"seed-002": "category-decay"}
    assert client.post("/v1/counterfactual", json={"preset": "seed-002"}).status_code == 200
    assert client.post("/v1/counterfactual", json={"preset": "category-decay", "policy": {"archive_floor": 0.1}}
                       ).status_code == 200
    assert asked == [CATEGORY_DECAY_POLICY, CATEGORY_DECAY_POLICY.replace(archive_floor=0.1)]
    refused = client.post("/v1/counterfactual", json={"preset": "seed-003"})
    assert refused.status_code == 400 and "category-decay" in refused.text


def test_adjustments_revert_the_declared_operation_undoes_once_and_says_so(store, capsys):
    hits = json.loads(run(capsys, store, "search", *USER, QUESTION, "--json"))
    ids = [x for h in hits[:3] for x in ("--memory-id", h["memory_id"])]
    verdict = json.loads(run(capsys, store, "feedback", "judge", *USER, "--input", "No, that's wrong. I stopped "
                             "drinking coffee.", "--reply", "You drink coffee every morning.", *ids, "--json"))
    assert verdict["type"] == "negative" and verdict["adjustments"]
    [adjustment] = json.loads(run(capsys, store, "adjustments", "list", *USER, "--active", "--json"))
    first = run(capsys, store, "adjustments", "revert", *USER, adjustment["adjustment_id"], "--reason", "she is back")
    assert first.startswith(f"reverted {adjustment['adjustment_id']} (event ")
    again = json.loads(run(capsys, store, "adjustments", "revert", *USER, adjustment["adjustment_id"], "--json"))
    assert again["reverted"] is False and again["already_reverted_at"]
    assert json.loads(run(capsys, store, "adjustments", "list", *USER, "--active", "--json")) == []
    [listed] = json.loads(run(capsys, store, "adjustments", "list", *USER, "--json"))
    assert listed["revert_reason"] == "she is back"


def test_a_path_with_no_store_or_a_store_open_elsewhere_is_named_before_ray_is_imported(tmp_path, monkeypatch):
    """A mistyped ``--store`` (or a damaged ``store.json``) is said at once, with the error ``Memory.open`` gives;
    so is a store another process has open (on Linux): the checks come before the seconds of importing Ray and the
    store's modules, and of starting shards that could not open their logs."""
    import subprocess
    import sys

    damaged = tmp_path / "damaged"
    damaged.mkdir()
    (damaged / "store.json").write_text("{")
    script = ("import sys\nfrom palimpsest.cli import main\n"
              "rc = main(sys.argv[1:])\nprint(rc, 'ray' in sys.modules, 'palimpsest.memory' in sys.modules)\n")
    cases = [(tmp_path / "none", ["stats"], "is not a palimpsest store (no store.json)"),
             (tmp_path / "none", ["search", *USER, "tea"], "is not a palimpsest store (no store.json)"),
             (damaged, ["notes", "list", *USER], "store.json is not valid JSON")]
    for store, command, said in cases:
        out = subprocess.run([sys.executable, "-c", script, "--store", str(store), *command], capture_output=True,
                             text=True, timeout=120, env={**os.environ, "PALIMPSEST_URL": ""})
        assert out.stdout.split() == ["2", "False", "False"], (command, out.stdout, out.stderr[-500:])
        assert said in out.stderr and "Traceback" not in out.stderr
    assert not (tmp_path / "none").exists()  # nothing created by a read

    # a store another process has open (a server's shard holds its log): named at once, with the way in
    from palimpsest.config import StoreConfig, log_path

    held = tmp_path / "held"
    StoreConfig.create(held, 1, "hash", encrypted=False)
    log_path(held, 0).parent.mkdir()
    holder = subprocess.Popen([sys.executable, "-c", "import duckdb, sys, time\ncon = duckdb.connect(sys.argv[1])\n"
                               "print('held', flush=True)\ntime.sleep(120)\n", str(log_path(held, 0))],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        out = subprocess.run([sys.executable, "-c", script, "--store", str(held), "stats"], capture_output=True,
                             text=True, timeout=120, env={**os.environ, "PALIMPSEST_URL": ""})
        dialogue = tmp_path / "d.jsonl"  # a write into an existing store is refused the same way
        dialogue.write_text(json.dumps({"text": "hi", "occurred_at": "2024-05-01T09:00:00Z"}) + "\n")
        wrote = subprocess.run([sys.executable, "-c", script, "--store", str(held), "ingest", str(dialogue),
                                "--tenant", "t", "--user", "u"], capture_output=True, text=True, timeout=120,
                               env={**os.environ, "PALIMPSEST_URL": ""})
        from palimpsest.cli_common import _refuse_unopenable

        monkeypatch.setenv("RAY_ADDRESS", "127.0.0.1:1")  # a running Ray, whose actors may hold the logs: attached to,
        _refuse_unopenable(held)  # not refused here
    finally:
        holder.kill()
        holder.wait()
    assert out.stdout.split() == ["2", "False", "False"], (out.stdout, out.stderr[-500:])
    assert f"is open in another process (PID {holder.pid} holds shard-000.duckdb)" in out.stderr
    assert "palimpsest --server URL" in out.stderr and "Traceback" not in out.stderr
    assert wrote.stdout.split() == ["2", "False", "False"], (wrote.stdout, wrote.stderr[-500:])
    assert f"(PID {holder.pid} holds shard-000.duckdb)" in wrote.stderr
