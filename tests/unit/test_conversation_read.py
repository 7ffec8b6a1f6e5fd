"""``conversation``: one conversation's messages in order with their metadata; those archived by hand (withdrawn)
are left out unless asked for, those archived by their retention stay (they were said)."""

from __future__ import annotations

from datetime import UTC, datetime

from actors import commands as c
from actors.core import ShardCore
from actors.spec import ShardSpec
from events.log import InMemoryEventLog
from projections.adapters.embedding import HashEmbedder
from tests.builders import command
from tests.shard_helpers import record
from tests.unit.test_items import Driver


def test_a_conversation_reads_back_in_order_with_metadata_and_without_its_withdrawn_messages(tmp_path):
    core = ShardCore(ShardSpec(index=0, log_path=tmp_path / "shard-000.duckdb", lance_dir=tmp_path / "vectors",
                               model_id=HashEmbedder.model_id, dim=384), log=InMemoryEventLog())
    try:
        mem = Driver(core)
        ids = [o["memory_id"] for o in record(core, [
            {**command("Where is my order?", 0, conversation_id="s1"), "metadata": {"item": '{"role": "user"}'}},
            command("It ships tomorrow", 1, conversation_id="s1", role="assistant"),
            command("Something else", 2, conversation_id="s2"),
            command("Thanks!", 3, conversation_id="s1")])]
        now = datetime(2024, 6, 1, tzinfo=UTC)
        core.handle([c.ArchiveMemories(tenant="acme", user_id="alice", memory_ids=(ids[3],), now=now,
                                       reason="popped")])

        read = mem.conversation("acme", "alice", "s1")
        assert [(m["memory_id"], m["role"], m["text"]) for m in read] == [
            (ids[0], "user", "Where is my order?"), (ids[1], "assistant", "It ships tomorrow")]
        assert read[0]["metadata"] == {"item": '{"role": "user"}'} and read[1]["metadata"] == {}
        assert [m["text"] for m in mem.conversation("acme", "alice", "s1", limit=1)] == ["It ships tomorrow"]
        every = mem.conversation("acme", "alice", "s1", withdrawn=True)
        assert every[-1]["archived"] == {"reason": "manual", "detail": "popped", "at": now.isoformat()}
        assert mem.conversation("acme", "bob", "s1") == [] and mem.conversation("acme", "alice", "none") == []
    finally:
        core.close()
