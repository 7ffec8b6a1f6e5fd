"""The shard core and the Ray actors around it.

Ray-free (tested without Ray): ``actors.commands`` (the command, query and
admin command models), ``actors.core`` (:class:`ShardCore`: ``handle`` for
commands, ``query`` for reads, ``admin`` for a replay or a backup, the runner,
touch group-commit), the deciders (``actors.deciders``, ``decide_archive``,
``decide_notes``, ``decide_graph``), the readers (``actors.reads``,
``reads_notes``, ``reads_graph``), ``actors.followups`` (what a commit calls
for), ``actors.reactor`` (the follow-ups that need a language model, asked with
no lock held), ``actors.consolidation_jobs`` and ``actors.llm``.
Ray: ``actors.shard``, ``actors.directory``, ``actors.runtime``,
``actors.ray_init`` and ``actors.consolidation`` (the parallel consolidation tasks).

Reads read: a query appends nothing of its own; its touches are appended
later by a group commit. No query waits for a language model: the
follow-ups' calls (titles, distillation) run on the reactor's thread with no
lock held. A command whose decider calls the model (note operations, graph
memories, usage, review, the feedback judge, with a model configured) still
holds the shard while it does, and queries to that shard wait for it.
"""
