"""Folds: one projection per module, a state type with ``evolve(state, envelope)`` and ``fold``, plus the
frozen config object that parameterises it (``policy.py`` for retention, ``TierConfig``, ...); ``state.py`` folds
them all. Pure: no I/O, no clock, no randomness; "now" is a parameter of the queries. A fold reads events only:
whatever a rule derives from text is recorded as an event at ingest and read back, never recomputed on replay.
Imports: ``events`` and other folds, never decisions, queries or adapters. Not ``projections.rules`` either: the
BM25 index tokenising in ``lexical`` is the accepted exception (tokens are that index's projection); ``tiers`` (key
terms of a page) and ``profile`` (offline distillation, a decision) still call rules and are to be fixed."""
