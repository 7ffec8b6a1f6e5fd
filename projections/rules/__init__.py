"""Rules: the deterministic EN/ZH text rules and their tables (note extraction, classification,
contradiction, time normalisation, lemmas, graph extraction, tool-call argument validation, the usage judge).
Pure functions of their inputs, versioned by an id (``rules-v1``, ``graph-rules-v2``, ``timenorm-v1``); their
results are recorded as events, so replay never runs them again. Imports: ``events`` and other rules only, never
folds, decisions, queries or adapters."""
