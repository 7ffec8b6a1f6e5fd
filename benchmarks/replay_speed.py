"""Replay speed of one shard, in process (no Ray): read the log, decode, fold every projection, digest.

    python -m benchmarks.locomo --data FILE --out X.json --store /tmp/pal/store_x   # once: builds a store
    python -m benchmarks.replay_speed --store /tmp/pal/store_x [--shard 0] [--repeat 3] [--profile 25] [--out R.json]

Opens a copy-free read of the shard's DuckDB log (``--log FILE`` names one
directly) and measures, each ``--repeat`` times (the best is reported, in CPU
seconds of this process, ``time.process_time``, so a busy shared machine
does not skew it; wall seconds are reported beside):

- ``read``: the scan query into Arrow batches (DuckDB only);
- ``decode``: Arrow batches into what a fold takes (:func:`events.touch_block.fold_items`: envelopes, and
  runs of touch rows as columns when the log has its clear ``touch`` column);
- ``fold``: :func:`projections.folds.state.fold` of the decoded envelopes;
- ``replay``: scan + decode + fold together, as ``ShardCore.replay`` does
  before LanceDB (``events_per_s`` is events / these CPU seconds);
- ``digest``: :func:`projections.folds.state.digest` of the folded state;
- ``per_projection``: each projection's own fold CPU over the events it reads.

``--profile N`` adds the top ``N`` functions by own CPU time (cProfile) of
one scan + decode + fold. The digest of every run is compared with the first:
the figures are of a fold that rebuilt the same state. Read-only.

``--memory`` (with ``--store``) measures instead what ``benchmarks.locomo``
reports: a copy of the store opened through the public API (Ray, every
shard) and ``Memory.replay()`` run ``--repeat`` times; ``replay_events_per_s``
is the store's events over the slowest shard's wall seconds, as there; each run also gives each shard's
events over its own wall seconds and over its replay thread's CPU seconds (``ReplayReport.cpu_seconds``).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import pstats
import sys
import time
from pathlib import Path

import duckdb

from events.crypto import PayloadCipher
from events.duckdb_log import SCAN_BATCH, arrow_batches, fold_select
from events.envelope import ENVELOPE_SCHEMA
from events.model import MemoryTouched
from events.touch_block import TouchBlock, fold_items
from events.keystore import KeyStore
from events.log import ScanFilter
from palimpsest import config as store_config
from projections.folds import state as shard_state

class ReadOnlyLog:
    """The scan of a shard's DuckDB file opened read-only (a running store's file is not locked against it).

    An encrypted store's log is read with its ``cipher`` (:func:`store_cipher`): decoding then includes opening
    each sealed payload, as a shard's replay does.
    """

    def __init__(self, path: Path, cipher: PayloadCipher | None = None) -> None:
        self.con = duckdb.connect(str(path), read_only=True)
        self.con.execute("SET TimeZone = 'UTC'")
        self.cipher = cipher
        columns = ENVELOPE_SCHEMA.names + (["sealed"] if cipher is not None else [])
        has_touch = bool(self.con.execute("SELECT count(*) FROM duckdb_columns() WHERE table_name = 'events' AND "
                                          "column_name = 'touch'").fetchall()[0][0])
        select = fold_select(columns) if has_touch else ", ".join(columns)  # as DuckDBEventLog.fold_scan reads it
        self.sql = f"SELECT {select} FROM events ORDER BY tenant, user_id, seq"

    def batches(self) -> list:
        return list(arrow_batches(self.con.cursor().sql(self.sql), SCAN_BATCH))

    def decode(self, batch) -> list:
        import pyarrow as pa

        return fold_items(pa.Table.from_batches([batch]), self.cipher)

    def scan(self, flt: ScanFilter | None = None):
        for batch in self.batches():
            yield from self.decode(batch)


def store_cipher(store: Path, shard: int) -> PayloadCipher | None:
    """The payload cipher of ``store``'s shard when the store is encrypted (``store.json``), else None."""
    config = store_config.StoreConfig.load(store)
    if not config.encrypted:
        return None
    return PayloadCipher(KeyStore(store_config.key_store(store, shard), store_config.master_key(store, config)))


def timed(fn, repeat: int) -> tuple[dict, object]:
    best, result = None, None
    for _ in range(repeat):
        cpu, wall = time.process_time(), time.perf_counter()
        result = fn()
        run = {"cpu_s": time.process_time() - cpu, "wall_s": time.perf_counter() - wall}
        if best is None or run["cpu_s"] < best["cpu_s"]:
            best = run
    return {k: round(v, 4) for k, v in best.items()}, result


def fold_all(envelopes: list) -> shard_state.ShardState:
    return shard_state.fold(shard_state.ShardState(), envelopes)


def per_projection(envelopes: list, repeat: int) -> dict[str, float]:
    """CPU seconds of each projection alone over the events it reads (its runs, as ``fold`` hands them over)."""
    out = {}
    names = [*shard_state.PROJECTIONS, *shard_state.CONFIGURED_PROJECTIONS]
    for name in names:
        handled = shard_state.HANDLED[name]
        reads_touches = issubclass(MemoryTouched, handled)  # a block stands for touch events
        mine = [e for e in envelopes if (reads_touches if type(e) is TouchBlock else isinstance(e.event, handled))]

        def run(mine=mine, name=name):
            state = shard_state.ShardState()
            shard_state.fold_projection(state, name, mine)

        out[name] = timed(run, repeat)[0]["cpu_s"]
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def profile(log: ReadOnlyLog, top: int) -> list[str]:
    prof = cProfile.Profile(time.process_time)  # CPU time: the machine may be shared
    prof.enable()
    shard_state.fold(shard_state.ShardState(), log.scan())
    prof.disable()
    out = io.StringIO()
    pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(top)
    lines = out.getvalue().splitlines()
    start = next(i for i, line in enumerate(lines) if line.lstrip().startswith("ncalls"))
    return [line.rstrip() for line in lines[start - 3: start + 1 + top] if line.strip()]


def measure(path: Path, repeat: int, top: int, cipher: PayloadCipher | None = None) -> dict:
    log = ReadOnlyLog(path, cipher)
    read, batches = timed(log.batches, repeat)
    decode_t, envelopes = timed(lambda: [e for b in batches for e in log.decode(b)], repeat)
    fold_t, state = timed(lambda: fold_all(envelopes), repeat)
    digest_t, digest = timed(lambda: shard_state.digest(state), repeat)
    replay_t, rebuilt = timed(lambda: shard_state.fold(shard_state.ShardState(), log.scan()), repeat)
    if shard_state.digest(rebuilt) != digest:
        raise SystemExit("replay_speed: two folds of the same log gave different digests")
    blocks = [e for e in envelopes if type(e) is TouchBlock]
    events = len(envelopes) - len(blocks) + sum(b.events for b in blocks)
    report = {
        "log": str(path),
        "encrypted": cipher is not None,
        "events": events,
        "streams": len(state.users),
        "touch_blocks": len(blocks),
        "touch_events_in_blocks": sum(b.events for b in blocks),
        "repeat": repeat,
        "replay_events_per_s": round(events / max(1e-9, replay_t["cpu_s"])),
        "phases": {"read": read, "decode": decode_t, "fold": fold_t, "replay": replay_t, "digest": digest_t},
        "decode_events_per_s": round(events / max(1e-9, decode_t["cpu_s"])),
        "fold_events_per_s": round(events / max(1e-9, fold_t["cpu_s"])),
        "per_projection_cpu_s": per_projection(envelopes, repeat),
        "digest": digest["combined"],
    }
    if top:
        report["profile"] = profile(log, top)
    return report


def memory_replay(store: Path, repeat: int) -> dict:
    """``Memory.replay()`` of a copy of ``store``: the figure ``benchmarks.locomo`` reports, without the ingest."""
    import os
    import shutil
    import tempfile

    from actors.ray_init import shutdown_ray
    from palimpsest import Memory

    runs = []
    with tempfile.TemporaryDirectory(prefix="palimpsest-replay-") as tmp:
        copy = Path(tmp) / "store"
        shutil.copytree(store, copy)
        mem = Memory.open(copy)
        try:
            for _ in range(repeat):
                load = os.getloadavg()[0]
                replays = mem.replay()
                if not all(r.equal for r in replays):
                    raise SystemExit("replay_speed: a shard's rebuilt digests differ from its live ones")
                events = sum(r.events for r in replays)
                runs.append({"replay_events_per_s": round(events / max(1e-9, max(r.seconds for r in replays))),
                             "seconds_per_shard": [round(r.seconds, 3) for r in replays],
                             "cpu_seconds_per_shard": [round(r.cpu_seconds, 3) for r in replays],
                             "events_per_s_per_shard": [round(r.events / max(1e-9, r.seconds)) for r in replays],
                             "events_per_cpu_s_per_shard": [round(r.events / max(1e-9, r.cpu_seconds))
                                                            for r in replays],
                             "events_per_shard": [r.events for r in replays], "load_1min": load})
        finally:
            mem.close()
            shutdown_ray()
    return {"store": str(store), "runs": runs,
            "replay_events_per_s": max(r["replay_events_per_s"] for r in runs)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.replay_speed", description=__doc__.split("\n\n")[0])
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--store", type=Path, help="a store directory (its log/shard-NNN.duckdb)")
    where.add_argument("--log", type=Path, help="one shard's DuckDB log file")
    p.add_argument("--shard", type=int, default=0)
    p.add_argument("--repeat", type=int, default=3, help="runs per phase; the least CPU time is reported")
    p.add_argument("--profile", type=int, default=0, metavar="N", help="also the top N functions by own CPU time")
    p.add_argument("--memory", action="store_true",
                   help="Memory.replay() of a copy of --store through Ray (the locomo benchmark's figure)")
    p.add_argument("--out", type=Path, help="write the JSON here too")
    args = p.parse_args(argv)
    if args.memory:
        if args.store is None:
            p.error("--memory needs --store")
        report = memory_replay(args.store, max(1, args.repeat))
        text = json.dumps(report, indent=2)
        if args.out:
            args.out.write_text(text + "\n")
        sys.stdout.write(text + "\n")
        return 0
    path = args.log or args.store / "log" / f"shard-{args.shard:03d}.duckdb"
    if not path.is_file():
        p.error(f"{path}: no such log file (build a store with benchmarks.locomo --store DIR first)")
    cipher = store_cipher(args.store, args.shard) if args.store else None
    report = measure(path, max(1, args.repeat), args.profile, cipher)
    text = json.dumps(report, indent=2)
    if args.out:
        args.out.write_text(text + "\n")
    sys.stdout.write(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
