"""Counterfactual re-projection: what would the agent remember under another retention policy?

Pure: given the log's envelopes, the live policy and another one, fold
retention under both and report, per user, which memories each would archive
at ``now`` and how much their retention moves. The log is only read.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from events.envelope import Envelope
from projections import retention
from projections.policy import RetentionPolicy

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
