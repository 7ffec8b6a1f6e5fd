"""Decisions: pure functions from folded state (and a new message or turn) to the events that would change
it (note operations, note reviews, graph staging, consolidation, conflicts). Nothing here appends: the deciders in
``actors/`` call these and the shard appends what they return; deciding again on a state that already holds the
events returns nothing. Imports: ``events``, ``projections.rules`` and ``projections.folds``; never queries or
adapters."""
