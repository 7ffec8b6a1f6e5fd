"""The shard's write path: a command's durable append lets queries through, and a batch of turns (messages and the
replies' usage) is one transaction.

The actor's class runs here without Ray (its ``__init__`` needs no Ray context), on a real DuckDB log.
"""

from __future__ import annotations

import threading

import pytest

from actors import commands as c
from actors.shard import ShardActor
from events.errors import InvalidInputError
from tests.builders import command
from tests.shard_helpers import EMBED, record_command
from tests.unit.test_command_retries import TURNS, USER, spec_for

NEW = [command("We moved the book club to Thursdays", 10, user_id="mel", client_message_id="n1"),
       command("读书会改到周四了", 11, user_id="mel", role="assistant", client_message_id="n2")]


def _search(actor, query: str) -> list[str]:
    hits = actor.query([c.Search(**USER, query=query, query_vector=EMBED.encode([query])[0], k=5,
                                 touch_reason=None)])[0]
    return [h.text for h in hits]


@pytest.fixture
def actor(tmp_path):
    actor = ShardActor.__ray_metadata__.modified_class(spec_for(tmp_path))
    actor.handle([record_command(TURNS)])
    yield actor
    actor.close()


@pytest.mark.parametrize("write", ["log append", "vector rows"])
def test_a_query_is_answered_during_a_commands_durable_writes(actor, monkeypatch, write):
    owner, name = (actor._core.log, "append") if write == "log append" else (actor._core.vectors, "add")
    original = getattr(owner, name)
    seen: list = []

    def write_while_a_query_runs(*args, **kwargs):
        reader = threading.Thread(target=lambda: seen.append(_search(actor, "book club Thursdays")))
        reader.start()
        reader.join(10)  # it would wait for the whole command if the write held the projections
        assert not reader.is_alive(), f"a query waited for a command's {write}"
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, name, write_while_a_query_runs)
    [outcome] = actor.handle([record_command(NEW)])
    monkeypatch.undo()

    assert [o["created"] for o in outcome] == [True, True]
    # during the append the state is as before it (nothing acknowledged yet); the rows are added after the fold
    assert seen and any("book club" in t for t in seen[0]) == (write == "vector rows")
    assert any("book club" in t for t in _search(actor, "book club Thursdays"))  # folded before the answer
    assert actor.admin([c.Replay()])[0].equal


def test_a_failed_append_writes_and_folds_nothing_and_the_shard_goes_on(actor, monkeypatch):
    events = actor._core.log.count()

    def broken(*args, **kwargs):
        raise OSError("disk full (injected)")

    monkeypatch.setattr(actor._core.log, "append", broken)
    with pytest.raises(OSError, match="disk full"):
        actor.handle([record_command(NEW)])
    monkeypatch.undo()

    assert actor._core.log.count() == events and not any("book club" in t for t in _search(actor, "book club"))
    [outcome] = actor.handle([record_command(NEW)])  # the locks were given back: the next write lands
    assert [o["created"] for o in outcome] == [True, True]
    assert actor.admin([c.Replay()])[0].equal


def test_turns_and_their_replies_usage_are_one_transaction_and_a_refused_reply_writes_nothing(actor):
    core = actor._core
    [sister_id] = [i for i, m in core.state.user("acme", "mel").messages.by_id.items() if "nurse" in m.text]
    reply = c.RecordReply(**USER, reply="Your sister is a nurse in Boston", memory_ids=(sister_id,))
    events = core.log.count()

    refused = c.RecordTurns(messages=record_command(NEW), replies=(
        reply, c.RecordReply(**USER, reply="x", memory_ids=("no-such-id",))))
    with pytest.raises(InvalidInputError, match="no-such-id"):
        actor.handle([refused])
    assert core.log.count() == events and core.log.command(refused.command_id) is None  # not even the messages

    turns = c.RecordTurns(messages=record_command(NEW), replies=(reply,))
    [outcome] = actor.handle([turns])
    assert [o["created"] for o in outcome["messages"]] == [True, True]
    assert [u["memory_id"] for u in outcome["replies"][0]] == [sister_id]
    kinds = [e.kind for e in core.log.scan() if e.event_id in set(core.log.command(turns.command_id).event_ids)]
    assert kinds.count("message_recorded") == 2 and kinds.count("memory_touched") == 1  # one record, one commit
    assert core.log.count() - events == len(core.log.command(turns.command_id).event_ids)
    assert actor.handle([turns]) == [outcome]  # a retry: the recorded outcome, nothing appended
    assert actor.admin([c.Replay()])[0].equal
