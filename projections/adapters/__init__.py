"""Adapters: the I/O at the edge of the projections: the LanceDB vector table, the text encoders and the
tokenizer. The only modules here that load models or touch disk; their outputs enter the log as events (embeddings)
or stay derived views (LanceDB, rebuilt from the log). Imports: ``events``, ``projections.rules`` and the row
types of ``projections.folds``; nothing else under ``projections`` imports an adapter (actors and the public
package wire them in)."""
