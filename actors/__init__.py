"""The shard core and the Ray actors around it.

Ray-free (tested without Ray): ``actors.commands`` (the command and query
models), ``actors.core`` (:class:`ShardCore`: one ``handle`` for commands,
one ``query`` for reads, the runner, touch group-commit), the deciders
(``actors.deciders``, ``decide_archive``, ``decide_notes``, ``decide_graph``),
the readers (``actors.reads``, ``reads_notes``, ``reads_graph``),
``actors.followups``, ``actors.consolidation_jobs`` and ``actors.llm``.
Ray: ``actors.shard``, ``actors.directory``, ``actors.runtime``,
``actors.ray_init`` and ``actors.consolidation`` (the parallel consolidation tasks).
"""
