"""What the learning loop changes at query time: the dispatcher's adjustments and the Molt policy.

Retrieval calls these when its config's ``feedback`` switch is on (the
``palimpsest_no_feedback`` ablation turns it off): an invalidated memory or
note leaves default retrieval, a penalised one has its score scaled by its
factor, and the Molt controller's policy overrides the fusion weights it
changed. Everything is read at the query's ``now``.
"""

from __future__ import annotations

from dataclasses import fields, replace
from datetime import datetime
from typing import TypeVar

from projections.folds.state import UserMemory

Config = TypeVar("Config")


def learned_fusion(memory: UserMemory | None, fusion: Config, now: datetime | None) -> Config:
    """``fusion`` with the Molt policy of the user applied (unchanged when the loop is off or nothing changed)."""
    if memory is None or not getattr(fusion, "feedback", False) or not memory.molt.records:
        return fusion
    known = {f.name for f in fields(fusion)}
    overrides = {k: v for k, v in memory.molt.parameters(now).items() if k in known}
    return replace(fusion, **overrides) if overrides else fusion


def hidden(memory: UserMemory, item_id: str, now: datetime | None) -> bool:
    """Whether an adjustment keeps a memory or note out of default retrieval at ``now``."""
    return bool(memory.adjustments.by_target) and memory.adjustments.invalidated(item_id, now) is not None


def penalise(memory: UserMemory, scored: list[list], now: datetime | None, *, hide: bool = True) -> None:
    """Scale the scores of rows ``[score, -seq, id, breakdown]`` by their penalty factors; re-sorts when any moved.

    With ``hide``, rows an invalidation keeps out are dropped (the later stages may have added neighbours).
    """
    if not memory.adjustments.by_target:
        return
    if hide:
        scored[:] = [row for row in scored if not hidden(memory, row[2], now)]
    moved = False
    for row in scored:
        factor = memory.adjustments.factor(row[2], now)
        if factor != 1.0:
            row[0] *= factor
            row[3]["feedback_factor"] = round(factor, 6)
            moved = True
    if moved:
        scored.sort(key=lambda s: (-s[0], s[1]))
