"""Fuzz every entry point with hypothesis and count the examples: ``python -m benchmarks.fuzz --examples 500``.

Entry points (the checks are in :mod:`benchmarks.fuzz_cases`): ``api.validate`` (the messages of
``add_messages``), ``api.record`` (the same through a real shard: DuckDB log, LanceDB table, read back),
``api.reads`` (the arguments of the read and operator calls), ``file.jsonl`` and ``file.locomo`` (the
ingest readers), ``cli.audit`` (``events``/``sql``/``export``), ``cli.ingest`` (malformed files given to
``palimpsest ingest``), ``store.json`` (edited by hand) and ``log.damaged`` (a shard log or its WAL
truncated or overwritten). Runs without Ray; writes a JSON report (examples tried, outcomes and
failures per entry point). The unit suite runs the same entry points with a few examples each.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from collections import Counter
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmarks import fuzz_cases as fc
from events.commands import MAX_MESSAGES_PER_CALL
from palimpsest.formats import read_jsonl, read_locomo

ENTRY_POINTS = ("api.validate", "api.record", "api.reads", "file.jsonl", "file.locomo", "cli.audit", "cli.ingest",
                "store.json", "log.damaged")


def _shard(work: Path, index: int = 0, store: Path | None = None):
    from actors.core import ShardCore
    from actors.spec import ShardSpec
    from projections.adapters.embedding import HashEmbedder

    from palimpsest import config as store_config

    embed = HashEmbedder()
    base = store or work
    if not (base / "store.json").exists():  # a bare shard: encrypted, as every new store is by default
        store_config.StoreConfig.create(base, index + 1, "hash")
    cfg = store_config.StoreConfig.load(base)
    spec = ShardSpec(index=index, log_path=base / "log" / f"shard-{index:03d}.duckdb", lance_dir=base / "vectors",
                     model_id=embed.model_id, dim=embed.dim,
                     key_store=store_config.key_store(base, index) if cfg.encrypted else None,
                     master_key=store_config.master_key(base, cfg))
    return ShardCore(spec), embed, spec


def _seeded_store(work: Path) -> Path:
    """A two-shard store (hash embedder) with a few English and Chinese messages, its shards closed."""
    from palimpsest import config as store_config

    store = work / "store"
    store_config.StoreConfig.create(store, 2, "hash")  # encrypted, the default: its shards seal every payload
    for i in range(2):
        core, embed, _ = _shard(work, i, store)
        fc.check_record(core, embed, [{**fc.VALID, "user_id": f"u{i}", "text": t} for t in ("tea at nine", "我喜欢爬山")])
        core.close()
    return store


def run_entry(name: str, examples: int, work: Path, counts: Counter | None = None) -> Counter:
    """Run one entry point's property for ``examples`` examples; returns the outcomes counted. A failing
    example raises (hypothesis shrinks it first)."""
    counts = counts if counts is not None else Counter()
    work.mkdir(parents=True, exist_ok=True)
    config = settings(max_examples=examples, deadline=None, database=None,
                      suppress_health_check=list(HealthCheck))

    def tally(outcome: str) -> None:
        counts["examples"] += 1
        counts[outcome] += 1

    if name == "api.validate":
        @config
        @given(fc.MESSAGES)
        def prop(items):
            tally("accepted" if fc.check_messages(items) is not None else "refused")
        prop()
        tally("accepted" if fc.check_messages([dict(fc.VALID)] * (MAX_MESSAGES_PER_CALL + 1)) else "refused")
    elif name == "api.record":
        core, embed, _ = _shard(work / "record")
        try:
            @config
            @given(st.one_of(fc.NEAR_VALID, fc.MESSAGES))
            def prop(items):
                tally(fc.check_record(core, embed, items))
            prop()
            assert core.replay().equal, "replay after the fuzzed writes differs from the live projections"
        finally:
            core.close()
    elif name == "api.reads":
        loose = st.one_of(st.integers(), st.floats(), st.booleans(), st.none(), fc.ANY_TEXT)

        @config
        @given(fc.ID, fc.ID, loose, st.one_of(fc.TIME, st.datetimes(timezones=fc.TZS)),
               st.one_of(st.none(), fc.ANY_TEXT, st.lists(st.one_of(fc.ANY_TEXT, st.integers()), max_size=3)),
               loose, st.one_of(st.none(), fc.TIME, st.datetimes(timezones=fc.TZS)))
        def prop(tenant, user_id, k, since, kinds, limit, now):
            fc.check_reads(tenant, user_id, k, since, kinds, limit, now)
            tally("checked")
        prop()
    elif name in ("file.jsonl", "file.locomo"):
        reader, path = (read_jsonl, work / "m.jsonl") if name == "file.jsonl" else (read_locomo, work / "l.json")
        content = fc.JSONL_BYTES if name == "file.jsonl" else st.one_of(
            fc.LOCOMO_OBJ.map(lambda o: json.dumps(o, ensure_ascii=False).encode("utf-8", "surrogatepass")),
            st.binary(max_size=100))

        @config
        @given(content)
        def prop(data):
            path.write_bytes(data)
            fc.check_file(path, reader)
            tally("checked")
        prop()
    elif name == "cli.audit":
        store = _seeded_store(work / "audit")
        out_dir = work / "exports"
        out_dir.mkdir(exist_ok=True)

        @config
        @given(st.data())
        def prop(data):
            tally(f"exit {fc.check_cli(fc.cli_argv(data.draw, store, out_dir), store)}")
        prop()
    elif name == "cli.ingest":
        path, target = work / "in.jsonl", work / "never-created"

        @config
        @given(fc.JSONL_BYTES)
        def prop(data):
            path.write_bytes(data)
            try:
                fc.assume_invalid(read_jsonl(path))
            except fc.InvalidInputError:
                pass
            rc, err = fc.run_cli(["--store", str(target), "ingest", str(path), "--embedder", "hash"])
            assert rc == 2 and err.startswith("error:") and "Traceback" not in err, err[-1000:]
            assert not target.exists(), "a refused ingest created the store"
            tally("refused")
        prop()
    elif name == "store.json":
        store = _seeded_store(work / "edited")
        valid = json.loads((store / "store.json").read_text())

        @config
        @given(fc.store_json_edits(valid))
        def prop(content):
            fc.check_store_json(store, content)
            tally("checked")
        prop()
    elif name == "log.damaged":
        pristine, spec = _pristine_log(work / "damaged")

        @config
        @given(fc.damages(sorted(pristine)))
        def prop(damage):
            tally(fc.check_damaged_log(spec, pristine, damage))
        prop()
    else:
        raise ValueError(f"unknown entry point {name!r}; choose from {', '.join(ENTRY_POINTS)}")
    return counts


def _pristine_log(work: Path) -> tuple[dict[str, bytes], object]:
    """The bytes of a shard log with a few events: the checkpointed file, and a WAL of later commits."""
    core, embed, spec = _shard(work)
    fc.check_record(core, embed, [{**fc.VALID, "text": "tea at nine"}])
    core.log._con.execute("CHECKPOINT")
    fc.check_record(core, embed, [{**fc.VALID, "text": f"later {i} 我喜欢爬山"} for i in range(3)])
    files = {p.name: p.read_bytes() for p in spec.log_path.parent.iterdir()}  # while open: file + WAL
    core.close()
    return files, spec


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="fuzz every entry point; count examples and unexplained errors")
    p.add_argument("--examples", type=int, default=300, help="examples per entry point (default 300)")
    p.add_argument("--only", help="comma-separated entry points (default: all)")
    p.add_argument("--out", default="bench/fuzz.json")
    args = p.parse_args(argv)
    names = args.only.split(",") if args.only else list(ENTRY_POINTS)
    work = Path(tempfile.mkdtemp(prefix="palimpsest-fuzz-"))
    report = {"examples_per_entry_point": args.examples, "entry_points": {}}
    try:
        for name in names:
            counts, started = Counter(), time.perf_counter()
            try:
                run_entry(name, args.examples, work / name.replace(".", "_"), counts)
                failure = None
            except Exception as exc:  # noqa: BLE001 - reported: an unexplained error is the finding
                failure = f"{type(exc).__name__}: {str(exc)[:1500]}"
            report["entry_points"][name] = {"seconds": round(time.perf_counter() - started, 1),
                                            "failure": failure, **dict(counts)}
            print(f"{name:<13} {counts['examples']:>6} examples  {dict(counts)}  "
                  f"{'FAILED: ' + failure[:200] if failure else 'ok'}", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    report["examples_total"] = sum(e.get("examples", 0) for e in report["entry_points"].values())
    report["failures"] = sum(1 for e in report["entry_points"].values() if e["failure"])
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    print(f"{report['examples_total']} examples, {report['failures']} entry points failed; wrote {out}")
    return 1 if report["failures"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
