"""What the fuzzer feeds each entry point, and what every answer must satisfy.

Each ``check_*`` takes one generated input and raises ``AssertionError`` on an unexplained outcome: any
exception other than the project's own errors, an error that names neither the field nor the file, or a
log changed by a rejected call. ``tests/unit/test_fuzz.py`` runs them with a few examples each;
``python -m benchmarks.fuzz`` with many, counting the examples per entry point.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import shutil
from datetime import UTC, timedelta, timezone
from pathlib import Path

from hypothesis import assume
from hypothesis import strategies as st

from events.commands import MAX_TEXT_CHARS, check_stream, validate_messages
from events.errors import InvalidInputError, PalimpsestError, StoreError
from events.log import ScanFilter
from palimpsest import config as store_config
from palimpsest.remote import aware, positive, scan_filter
from palimpsest.settings import StoreSettings

NASTY = ["", " ", ".", "..", "../..", "a/b", "a\\b", "'", '"', "'; DROP TABLE events; --", "\x00", "a\x00b",
         "\ud800", "x\udfff", "\u202e", "\ufeff", "李雷", "🙂", " lead", "trail ", "t" * 201, "\n", "%s", "{}"]
ANY_TEXT = st.one_of(st.text(max_size=40), st.text(st.characters(codec=None, exclude_categories=()), max_size=12),
                     st.sampled_from(NASTY))
ID = st.one_of(st.sampled_from(["acme", "alice", "用户一"]), ANY_TEXT)
TZS = st.sampled_from([None, UTC, timezone(timedelta(hours=14)), timezone(timedelta(hours=-12, minutes=-30))])
TIME = st.one_of(
    st.datetimes(timezones=TZS).map(lambda d: d.isoformat()),
    st.sampled_from(["0001-01-01T00:00:00+05:00", "9999-12-31T23:59:59-05:00", "2024-02-30T00:00:00+00:00",
                     "garbage", "", "2024-05-01", "2024-05-01T09:00:00", "2024-05-01T09:00:00+25:00"]),
    st.integers(), st.none(), st.floats(),
)
JSON_SCALAR = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), ANY_TEXT)
DEEP = st.recursive(JSON_SCALAR, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                         st.dictionaries(ANY_TEXT, inner, max_size=4)), max_leaves=25)
TEXT = st.one_of(ANY_TEXT, st.sampled_from(["walked 12 steps", "我喜欢爬山", "x" * (MAX_TEXT_CHARS + 1)]))
FIELDS = {"text": TEXT, "occurred_at": TIME, "tenant": ID, "user_id": ID, "conversation_id": ID,
          "role": st.one_of(st.sampled_from(["user", "assistant", "system", "tool"]), ANY_TEXT),
          "speaker": st.one_of(st.none(), ANY_TEXT), "client_message_id": st.one_of(st.none(), ANY_TEXT),
          "turn_id": st.one_of(st.none(), ANY_TEXT), "metadata": st.one_of(DEEP, st.dictionaries(ANY_TEXT, JSON_SCALAR)),
          "surprise": DEEP}
VALID = {"text": "walked 12 steps", "occurred_at": "2024-05-01T09:00:00+00:00", "tenant": "acme", "user_id": "alice"}


@st.composite
def message(draw) -> dict:
    """A message whose every field may be valid, missing, or hostile."""
    out = {}
    for name, strategy in FIELDS.items():
        # mostly valid, so that hostile values in one field at a time reach the shard, not only the validator
        choice = draw(st.sampled_from(["valid"] * 5 + ["fuzzed"] * 2 + ["missing"] if name in VALID
                                      else ["fuzzed", "missing", "missing"]))
        if choice == "valid":
            out[name] = VALID[name]
        elif choice == "fuzzed" and (name != "surprise" or draw(st.booleans())):
            out[name] = draw(strategy)
    return out


@st.composite
def one_field_message(draw) -> dict:
    """A valid message with one field (perhaps an optional one) hostile: what reaches a shard."""
    name = draw(st.sampled_from(sorted(FIELDS)))
    return {**VALID, name: draw(FIELDS[name])}


MESSAGES = st.lists(st.one_of(message(), one_field_message(), JSON_SCALAR), min_size=0, max_size=5)
NEAR_VALID = st.lists(one_field_message(), min_size=1, max_size=3)


def _names_a_field(exc: InvalidInputError, prefix: str) -> None:
    assert exc.problems, f"an InvalidInputError without problems: {exc}"
    for where, why in exc.problems:
        assert where.startswith(prefix), f"problem at {where!r} does not name a field under {prefix!r}"
        assert why.strip(), f"problem at {where!r} says nothing"


# -- the API: validation at the boundary, and what a shard stores ------------------------------------------
def check_messages(items: list) -> list | None:
    """``validate_messages`` (the first step of ``add_messages``): commands, or a refusal naming fields."""
    try:
        return validate_messages(items)
    except InvalidInputError as exc:
        _names_a_field(exc, "messages")
        return None


def check_record(core, embed, items: list) -> str:
    """Through a real shard (DuckDB log, LanceDB table): a refusal writes nothing; what is accepted comes back
    from the log field for field."""
    from actors.commands import RecordMessages

    before = [e.event_id for e in core.log.scan()]
    commands = check_messages(items)
    if not commands:
        assert [e.event_id for e in core.log.scan()] == before, "a refused batch changed the log"
        return "refused" if commands is None else "empty"
    [outcomes] = core.handle([RecordMessages(messages=tuple(commands), model_id=embed.model_id,
                                             vectors=embed.encode([m.index_text() for m in commands]))])
    stored = {e.event_id: e.event for e in core.log.scan(ScanFilter(kinds=("message_recorded",)))}
    fields = ("text", "speaker", "role", "conversation_id", "turn_id", "metadata", "occurred_at")
    for m, outcome in zip(commands, outcomes):
        if outcome["created"]:
            event = stored[outcome["memory_id"]]
            for name in fields:
                assert getattr(event, name) == getattr(m, name), f"{name} came back changed from the log"
            assert event.client_message_id == m.message_key()
    return "stored"


def check_reads(tenant, user_id, k, since, kinds, limit, now) -> None:
    """The argument checks of the read and operator calls: a value or an error naming the argument."""
    for call, prefix in ((lambda: check_stream(tenant, user_id, what="search"), ("tenant", "user_id")),
                         (lambda: positive(k, "k", "search", "give an integer"), ("k",)),
                         (lambda: scan_filter(tenant, None, None, None, since, None, kinds, limit),
                          ("since", "kinds", "limit")),
                         (lambda: aware(now, "search"), ("now",))):
        try:
            call()
        except InvalidInputError as exc:
            _names_a_field(exc, prefix)


# -- files ------------------------------------------------------------------------------------------------
def check_file(path: Path, reader) -> None:
    """A JSONL or LoCoMo file: its messages, or a refusal naming the file (or the messages' fields)."""
    try:
        items = reader(path)
    except InvalidInputError as exc:
        assert any(path.name in where or str(path) in exc.what or path.name in why for where, why in exc.problems), \
            f"a refusal of {path.name} that does not name it: {exc}"
        return
    check_messages(items)


JSONL_BYTES = st.one_of(
    st.binary(max_size=200),
    st.lists(st.one_of(message().map(lambda m: json.dumps(m, ensure_ascii=False, allow_nan=True)),
                       st.text(max_size=30), DEEP.map(json.dumps)), max_size=5)
    .map(lambda lines: "\n".join(lines).encode("utf-8", "surrogatepass")),
)
TURNS = st.lists(st.dictionaries(st.sampled_from(["speaker", "text", "dia_id", "img_url", "blip_caption"]),
                                 JSON_SCALAR), max_size=3)
CONVERSATION = st.one_of(DEEP, st.dictionaries(
    st.sampled_from(["speaker_a", "speaker_b", "session_1", "session_1_date_time", "session_2"]),
    st.one_of(DEEP, TURNS)))
LOCOMO_OBJ = st.one_of(DEEP, st.lists(st.fixed_dictionaries({"sample_id": ID, "conversation": CONVERSATION}),
                                      max_size=3))


# -- the CLI (commands that run without Ray: audit, and every refusal before a store opens) ------------------
# Ray's driver forwards worker log lines to sys.stderr on its own thread, whenever they arrive: a line
# from an actor of an earlier store may land while the CLI's stderr is redirected. It is not the CLI's.
RAY_FORWARDED = re.compile(r"^(\x1b\[\d+m)?\(\w+( pid=\d+(, ip=[\d.]+)?|, ip=[\d.]+)\).*\n?", re.MULTILINE)


def run_cli(argv: list[str]) -> tuple[int, str]:
    """Run the CLI in-process: its exit code and what it printed to stderr (Ray's forwarded lines left out)."""
    from palimpsest.cli import main

    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            rc = main(argv)
        except SystemExit as exc:  # argparse's own usage errors
            rc = exc.code if isinstance(exc.code, int) else 2
    return rc, RAY_FORWARDED.sub("", err.getvalue())


def check_cli(argv: list[str], store: Path) -> int:
    """Exit 0, or 2 with ``error:``/``usage:`` first: never a traceback; the store's logs unchanged."""
    before = {f.name: f.read_bytes() for f in store_config.log_files(store)}
    rc, err = run_cli(argv)
    assert "Traceback" not in err, f"{argv!r} printed a traceback:\n{err[-2000:]}"
    assert rc in (0, 2), f"{argv!r} exited {rc}: {err[-500:]}"
    if rc == 2:
        assert err.lstrip().startswith(("error:", "usage:")), f"{argv!r} failed without saying why: {err[:300]}"
    assert {f.name: f.read_bytes() for f in store_config.log_files(store)} == before, f"{argv!r} changed a log"
    return rc


CLI_VALUE = st.one_of(ANY_TEXT.filter(lambda s: "\x00" not in s and not s.startswith("-")),
                      st.sampled_from(["2024-05-01T09:00:00+00:00", "5", "-1", "0", "message_recorded"]))
SQL = st.one_of(ANY_TEXT, st.sampled_from([
    "SELECT count(*) FROM events", "COPY events TO '/tmp/palimpsest-fuzz.csv'", "ATTACH '/tmp/x.db' AS x",
    "SELECT * FROM read_text('/etc/hostname')", "INSTALL httpfs", "LOAD httpfs", "CREATE TABLE t (a INT)",
    "DELETE FROM events", "SELECT 1; DELETE FROM events", "PRAGMA version", "SET threads = 1",
    "SELECT * FROM events WHERE tenant = '\u2019 OR 1=1 --'", "DETACH shard_000",
    "SELECT * FROM glob('/etc/*')", "CALL pragma_database_list()"]))


def cli_argv(draw, store: Path, out_dir: Path) -> list[str]:
    cmd = draw(st.sampled_from(["events", "sql", "export"]))
    argv = ["--store", str(store), cmd]
    if cmd == "sql":
        return argv + [draw(SQL)] + (["--tenant", draw(CLI_VALUE)] if draw(st.booleans()) else [])
    if cmd == "export":  # one path component, quotes and all: nothing is written outside out_dir
        name = draw(ANY_TEXT.filter(lambda s: s and "/" not in s and "\x00" not in s and s not in (".", "..")
                                    and not s.startswith("-") and _utf8(s)))
        return argv + ["--out", str(out_dir / name)] + (["--tenant", draw(CLI_VALUE)] if draw(st.booleans()) else [])
    for flag in ("--tenant", "--user", "--kind", "--since", "--until", "--from-seq", "--limit"):
        if draw(st.booleans()):
            argv += [flag, draw(CLI_VALUE)]
    return argv


def _utf8(s: str) -> bool:
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


# -- store files ------------------------------------------------------------------------------------------
def check_store_json(store: Path, content: bytes) -> None:
    """``store.json`` edited by hand: what ``Memory.open`` checks before Ray starts accepts it or names it."""
    (store / "store.json").write_bytes(content)
    try:
        cfg = store_config.StoreConfig.load(store)
        StoreSettings.from_json(cfg.settings, str(store / "store.json"))
        store_config.check_layout(store, cfg)
    except PalimpsestError as exc:
        assert "store.json" in str(exc) or str(store) in str(exc), f"a refusal that names no file: {exc}"


def store_json_edits(valid: dict):
    """A valid ``store.json`` with one entry replaced, removed or added, or no JSON at all."""
    key = st.sampled_from([*valid, "surprise"])
    edited = st.tuples(key, st.one_of(DEEP, st.just("__remove__"))).map(
        lambda kv: {k: v for k, v in {**valid, kv[0]: kv[1]}.items() if v != "__remove__"})
    return st.one_of(edited.map(lambda d: json.dumps(d, ensure_ascii=False, allow_nan=True).encode(
        "utf-8", "surrogatepass")), st.binary(max_size=64))


def check_damaged_log(spec, pristine: dict[str, bytes], damage) -> str:
    """A shard whose log file (or WAL) was truncated or overwritten: it starts (and replays equal), or its
    error names the file, says it is damaged and how to restore it."""
    from actors.core import ShardCore

    name, how, at, junk = damage
    for fname, data in pristine.items():
        (spec.log_path.parent / fname).write_bytes(data)
    shutil.rmtree(spec.lance_dir, ignore_errors=True)
    target = spec.log_path.parent / name
    data = pristine[name]
    at = at % max(1, len(data))
    target.write_bytes(data[:at] if how == "truncate" else data[:at] + junk + data[at + len(junk):])
    try:
        core = ShardCore(spec)
    except StoreError as exc:
        text = str(exc)
        assert str(spec.log_path) in text and ("damaged" in text or "another process" in text), text
        return "refused"
    try:
        assert core.replay().equal
    finally:
        core.close()
    return "opened"


def damages(names: list[str]):
    return st.tuples(st.sampled_from(names), st.sampled_from(["truncate", "overwrite"]),
                     st.integers(min_value=0, max_value=2**22), st.binary(min_size=1, max_size=64))


def assume_invalid(items) -> None:
    """Keep only inputs ``add_messages`` refuses (a valid one would need a store)."""
    assume(check_messages(items) is None)
