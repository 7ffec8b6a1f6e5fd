"""Queries: read-side functions of folded state and query parameters (hybrid retrieval and fusion, context
assembly, graph search and expansion, episode search, summaries, views, exports, the counterfactual). Pure given
their inputs: no log access, no clock ("now" is a parameter), no writes; the shard passes in what adapters
returned (dense neighbours). Imports: ``events``, ``projections.rules`` and ``projections.folds``; never decisions
or adapters."""
