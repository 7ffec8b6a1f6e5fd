"""The retention term: ``retention_weight · min(R, 2) / (rrf_k + 1)``, R being a candidate's retention at the
query time under the shard's policy: among equally relevant memories the reinforced and recent one wins. A message
stating a constraint in force keeps R = base (it never fades)."""

from __future__ import annotations

from projections.folds.retention import retention_scores
from projections.queries.scoring import ListStage, Scoring


def gather(s: Scoring) -> None:
    if s.config.retention_weight > 0 and s.now is not None and s.policy is not None:
        pinned = s.memory.notes.constraint_sources(s.now)
        s.recall = retention_scores(s.memory.retention, s.now, s.policy, s.parts, pinned)


STAGE = ListStage("retention", gather, off={"retention_weight": 0.0}, after_scope=True)
