"""The notes list: the active notes ranked by BM25 against the query lift their source turns by
``note_weight / (rrf_k + note rank)`` (notes as retrieval keys); notes the learning loop hid are left out."""

from __future__ import annotations

from projections.queries.learned import hidden
from projections.queries.scoring import ListStage, Scoring, Term


def gather(s: Scoring) -> None:
    config, memory = s.config, s.memory
    if config.note_weight > 0:
        ranked = memory.notes.search(s.query, config.note_candidates, config.bm25)
        if s.learn:
            ranked = [(n, b) for n, b in ranked if not hidden(memory, n, s.now)]
        notes, parts = memory.notes.notes, s.parts
        for rank, (note_id, bm25) in enumerate(ranked, 1):
            for memory_id in notes[note_id].source_message_ids:
                parts.setdefault(memory_id, {}).setdefault("note", (rank, bm25, note_id))
    s.terms.append(Term("note", config.note_weight, "note_rank", "note_bm25", "note_id"))


STAGE = ListStage("notes", gather, off={"note_weight": 0.0})
