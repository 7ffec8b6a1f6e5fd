"""Ray actors that own shards of the memory, and the plain services they wrap.

``actors.service`` (with its mixins), ``actors.deciders``, ``actors.followups``
and ``actors.llm`` do not import Ray; ``actors.shard``, ``actors.directory``,
``actors.runtime`` and ``actors.consolidation`` (the parallel consolidation
tasks) do.
"""
