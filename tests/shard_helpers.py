"""Driving a :class:`ShardCore` in tests without Ray: record, search and context through its two entry points."""

from __future__ import annotations

from actors import commands as c
from actors.core import ShardCore
from events.commands import validate_messages
from projections.adapters.embedding import HashEmbedder

EMBED = HashEmbedder()


def record_command(items: list, embed=EMBED, **kw) -> c.RecordMessages:
    commands = validate_messages(items)
    return c.RecordMessages(messages=tuple(commands), vectors=embed.encode([m.index_text() for m in commands]),
                            model_id=embed.model_id, **kw)


def record(core: ShardCore, items: list, embed=EMBED, **kw) -> list[dict]:
    """Record messages; per message ``{"memory_id", "created"}``."""
    [outcomes] = core.handle([record_command(items, embed, **kw)])
    return outcomes


def search(core: ShardCore, query: str, tenant: str = "acme", user_id: str = "alice", k: int = 3, embed=EMBED, **kw):
    return core.query(c.Search(tenant=tenant, user_id=user_id, query=query, query_vector=embed.encode([query])[0],
                               k=k, **kw))


def context(core: ShardCore, query: str, token_budget: int, tenant: str = "acme", user_id: str = "alice",
            embed=EMBED, **kw):
    return core.query(c.BuildContext(tenant=tenant, user_id=user_id, query=query,
                                     query_vector=embed.encode([query])[0], token_budget=token_budget, **kw))


def kinds(core: ShardCore) -> list[str]:
    return [e.kind for e in core.log.scan()]
