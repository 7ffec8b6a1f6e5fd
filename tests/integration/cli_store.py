"""The CLI tests' sample store: ingested once per session through the CLI, copied for each test, held open.

Each CLI command that needs the actors opens the store, and starting a store's actors (two shards and a
directory, each a Ray worker that recovers from the log) is the slow part of a command. A test that runs
several such commands holds the store open meanwhile (:func:`held`): each command then re-attaches to the
running actors, as a second driver of a store does, and lets go of them when it ends. What a command prints
and writes is the same either way; the audit commands (``sql``, ``events``) read the log files, which a running
store holds, so they run while the store is closed.

Touches a query records wait in the shard for their group commit (at the next command, at a query that reads
the log, on close): a test whose later command must see an earlier query's touches closes the store in between,
as the end of each command does when it owns the store.
"""

from __future__ import annotations

import contextlib
import io
import shutil
from collections.abc import Iterator
from importlib import resources
from pathlib import Path

from actors import commands as c
from palimpsest import Memory
from palimpsest.cli import main

SAMPLE = Path(str(resources.files("palimpsest") / "data" / "sample_dialogue.jsonl"))


def run(capsys, *argv: str) -> tuple[int, str, str]:
    """``palimpsest *argv`` in this process: its exit code, stdout and stderr."""
    rc = main(list(argv))
    out = capsys.readouterr()
    return rc, out.out, out.err


def ingest_sample(path: Path) -> str:
    """A two-shard hash-embedder store of the packaged sample, made by ``palimpsest ingest``; what it printed."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(["--store", str(path), "ingest", str(SAMPLE), "--embedder", "hash", "--num-shards", "2", "--quiet"])
    assert rc == 0, err.getvalue()
    return out.getvalue()


def copy_store(template: Path, path: Path) -> str:
    """A closed store copied to ``path`` (its actors are named after their path: the copy has its own)."""
    shutil.copytree(template, path)
    return str(path)


@contextlib.contextmanager
def held(store: str) -> Iterator[Memory]:
    """The store open in this process while the CLI commands run: they re-attach to its actors."""
    mem = Memory.open(store, create=False)
    try:
        assert mem.cluster.owner  # nothing else had it open: the commands re-attach to these actors
        yield mem
    finally:
        mem.close()


def logged_events(mem: Memory) -> int:
    """Events in the logs of an open store (pending touches written first), as ``SELECT count(*) FROM events``."""
    return sum(table.num_rows for table in mem.shards.ask_each(c.AuditRows()))
