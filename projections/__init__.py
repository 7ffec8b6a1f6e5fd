"""Projections, split by role: ``folds`` (pure ``evolve``/``fold`` over events), ``rules`` (EN/ZH text
rules whose results are recorded as events), ``decisions`` (state in, events out), ``queries`` (read-side
functions of folded state) and ``adapters`` (LanceDB, encoders, tokenizer). Direction of imports:
rules <- folds <- decisions, queries; adapters at the edge; each subpackage's docstring says what belongs there."""
