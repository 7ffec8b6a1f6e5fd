"""The shard core and the Ray actors around it.

Ray-free (tested without Ray): ``actors.commands`` (the command, query and
admin command models), ``actors.core`` (:class:`ShardCore`: ``handle`` for
commands, ``query`` for reads, ``admin`` for a replay or a backup, the runner,
touch group-commit), the deciders (``actors.deciders``, ``decide_archive``,
``decide_notes``, ``decide_graph``), the readers (``actors.reads``,
``reads_notes``, ``reads_graph``), ``actors.followups`` (what a commit calls
for), ``actors.reactor`` (the follow-ups that need a language model, asked with
no lock held), ``actors.answers_first`` (a decider's model calls, asked first
with no lock held), ``actors.consolidation_jobs`` and ``actors.llm``.
Ray: ``actors.shard``, ``actors.directory``, ``actors.runtime``,
``actors.ray_init`` and ``actors.consolidation`` (the parallel consolidation tasks).

Reads read: a query appends nothing of its own; its touches are appended later
by a group commit. A graph read embeds nothing: labels staged but not embedded
yet are named by its reader and encoded by the driver for that read alone
(``actors.reads_graph``); the driver's labels' reactor records them after the
ingest (``palimpsest.label_reactor``). A replay folds the recorded vectors and
answers: a shard has no encoder, and a replay asks no model. No query waits
for a language model: the follow-ups' calls (titles, distillation) run on the
reactor's thread with no lock held; a command whose decider asks the model
(note operations, graph memories, usage, review, the feedback judge, with a
model configured) is decided with the answers already given, its other asks
made with no lock held and the command decided again
(``actors.answers_first``), so deciders stay pure functions of the state, the
command and the recorded answers.
"""
