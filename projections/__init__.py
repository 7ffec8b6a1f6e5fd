"""Projections: pure folds over the event log, plus the query-side readers over them."""
