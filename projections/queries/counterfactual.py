"""Counterfactual re-projection: what would the agent remember under another retention policy?

Pure: given the log's envelopes, the live policy and another one, fold
retention under both and report, per user, which memories each would archive
at ``now`` and how much their retention moves; and, for a set of queries,
how the ranking changes (the retention term and what each policy archives).
The log is only read.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from datetime import datetime

from events.envelope import Envelope
from projections.folds import retention
from projections.folds.archive import ArchiveEntry, ArchiveState
from projections.folds.policy import RetentionPolicy
from projections.folds.state import UserMemory
from projections.queries.retrieval import Hit

Stream = tuple[str, str]


def fold_per_user(envelopes: Iterable[Envelope], policy: RetentionPolicy) -> dict[Stream, retention.RetentionState]:
    states: dict[Stream, retention.RetentionState] = {}
    for env in envelopes:
        state = states.get(env.stream)
        if state is None:
            state = states[env.stream] = retention.RetentionState()
        retention.evolve(state, env, policy)
    return states


def compare(
    envelopes: list[Envelope], current: RetentionPolicy, other: RetentionPolicy, now: datetime, top: int = 10
) -> list[dict]:
    """Per user: memories archived only under ``other``, only under ``current``, and the largest R changes."""
    live = fold_per_user(envelopes, current)
    alt = fold_per_user(envelopes, other)
    report = []
    for stream in sorted(live):
        a = {r.memory_id: r for r in retention.retention_table(live[stream], now, current)}
        b = {r.memory_id: r for r in retention.retention_table(alt[stream], now, other)}
        archived_a = {m for m, r in a.items() if r.archive}
        archived_b = {m for m, r in b.items() if r.archive}
        moves = sorted(
            ((m, a[m].retention, b[m].retention) for m in a),
            key=lambda t: (-abs(t[2] - t[1]), t[0]),
        )[:top]
        report.append(
            {
                "tenant": stream[0],
                "user_id": stream[1],
                "memories": len(a),
                "archived_current": len(archived_a),
                "archived_other": len(archived_b),
                "archived_only_under_other": sorted(archived_b - archived_a),
                "kept_only_under_other": sorted(archived_a - archived_b),
                "largest_changes": [
                    {"memory_id": m, "current": round(ra, 6), "other": round(rb, 6)} for m, ra, rb in moves
                ],
            }
        )
    return report


def as_policy_would_archive(memory: UserMemory, state: retention.RetentionState, policy: RetentionPolicy,
                            now: datetime) -> UserMemory:
    """A view of ``memory`` whose retention is ``state`` and whose archive is what ``policy`` archives at ``now``.

    Both sides of a rank comparison are built this way, so the only difference
    between them is the policy. The live memory is not modified.
    """
    archived = ArchiveState()
    for row in retention.archival_candidates(state, now, policy):
        archived.archived[row.memory_id] = ArchiveEntry(
            row.memory_id, row.archive_reason or "retention_floor", now, policy.name, row.retention, "counterfactual"
        )
    return replace(memory, retention=state, archive=archived)


def rank_changes(current: list[Hit], other: list[Hit]) -> list[dict]:
    """Every memory in either top list with its rank under each policy (None: not in that top list)."""
    a = {h.memory_id: h for h in current}
    b = {h.memory_id: h for h in other}
    rows = []
    for memory_id in dict.fromkeys([*a, *b]):
        hit = a.get(memory_id) or b[memory_id]
        rows.append({
            "memory_id": memory_id,
            "turn_id": hit.turn_id,
            "text": hit.text,
            "rank_current": a[memory_id].rank if memory_id in a else None,
            "rank_other": b[memory_id].rank if memory_id in b else None,
        })
    return rows
