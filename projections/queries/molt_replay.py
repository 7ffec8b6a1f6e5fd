"""Counterfactual replay of recorded queries (seed 003 §10): how well would another fusion policy have ranked
what the replies actually used?

Pure: the user's folded memory, the recorded queries (text, vector, time,
the memories judged relevant: those a reply drew on, notes standing for
their source turns) and a fusion config in; the mean recall@k of the
relevant memories out. Dense neighbours come from the folded vectors (an
exact cosine search, as the shard runs for a user of this size), so the
replay reads no index and writes nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import numpy as np

from projections.folds.policy import RetentionPolicy
from projections.folds.state import UserMemory
from projections.queries.language_calibration import calibrate
from projections.queries.rerank import chinese_flags
from projections.queries.retrieval import fuse

RecordedQuery = tuple[str, np.ndarray, datetime, frozenset[str]]


def dense_neighbours(memory: UserMemory, vector: np.ndarray, k: int,
                     calibrated: bool = False) -> list[tuple[str, float]]:
    rows = memory.vectors.rows
    if not rows:
        return []
    ids = list(rows)
    matrix = np.stack([np.asarray(rows[i].vector, dtype=np.float32) for i in ids])
    norms = np.linalg.norm(matrix, axis=1)
    q = np.asarray(vector, dtype=np.float32).ravel()
    sims = matrix @ q / np.maximum(norms * (np.linalg.norm(q) or 1.0), 1e-12)
    if calibrated:  # as the shard's dense index ranks them (actors.dense)
        sims = calibrate(sims, np.array(chinese_flags(memory, ids), dtype=np.int8))
    order = np.lexsort((np.arange(len(ids)), -sims))[:k]
    return [(ids[i], float(sims[i])) for i in order]


def relevant_turns(memory: UserMemory, ids: Sequence[str]) -> frozenset[str]:
    """Memory ids a recorded judgement names, notes replaced by their source turns."""
    out: set[str] = set()
    for m in ids:
        note = memory.notes.notes.get(m)
        out |= set(note.source_message_ids) if note is not None else {m}
    return frozenset(x for x in out if x in memory.messages.by_id)


def replayed_recall(memory: UserMemory, queries: Sequence[RecordedQuery], fusion, policy: RetentionPolicy,
                    k: int) -> float:
    """Mean over ``queries`` of the share of each query's relevant memories in the top ``k`` under ``fusion``."""
    scores = []
    for text, vector, at, relevant in queries:
        if not relevant:
            continue
        dense = dense_neighbours(memory, vector, max(k, fusion.candidates), fusion.cross_lingual)
        hits = fuse(memory, text, dense, k, fusion, vector, now=at, policy=policy)
        scores.append(len({h.memory_id for h in hits} & relevant) / min(len(relevant), k))
    return float(np.mean(scores)) if scores else 0.0
