"""The Molt controller on a shard (seed 003 §10): ``Molt`` and ``RevertPolicy`` deciders, the replay inputs.

``Molt`` measures the user's memory (:func:`projections.decisions.molt.effectiveness`);
when a recall-side figure crossed its threshold (or ``force``) it proposes
fusion changes, replays the recorded queries under the current policy and
under each proposal (:mod:`projections.queries.molt_replay`, read only), and
appends a ``policy_changed`` if the best proposal improves the replayed
metric, else a ``policy_proposal_rejected`` with the figures (``dry_run``:
nothing). ``RevertPolicy`` appends the change that restores what a change
replaced. Both are idempotent by command id; reverting twice appends nothing.
"""

from __future__ import annotations

from dataclasses import replace

from actors.commands import Molt, MoltInputs, RevertPolicy
from actors.decision import Answer, Decision, Deps, new_event_id
from events.envelope import PendingEvent
from events.errors import InvalidInputError
from events.learning_events import PolicyChanged
from events.log import ScanFilter
from projections.decisions.molt import DEFAULT_MOLT, effectiveness, findings, proposals, triggers, verdict
from projections.folds.state import ShardState
from projections.queries.learned import learned_fusion
from projections.queries.molt_replay import relevant_turns, replayed_recall


def _memory(state: ShardState, tenant: str, user_id: str, what: str):
    memory = state.user(tenant, user_id)
    if memory is None:
        raise InvalidInputError([("user_id", f"{tenant}/{user_id} has no memories")], what=what)
    return memory


def decide_molt(state: ShardState, cmd: Molt, deps: Deps) -> Decision:
    memory = _memory(state, cmd.tenant, cmd.user_id, "molt")
    config = DEFAULT_MOLT
    figures = effectiveness(memory)
    crossed = triggers(figures, config)
    current = learned_fusion(memory, cmd.fusion, cmd.now)
    queries = [(text, vector, at, relevant_turns(memory, ids)) for text, vector, at, ids in cmd.queries]
    queries = [q for q in queries if q[3]]
    outcome: dict = {"tenant": cmd.tenant, "user_id": cmd.user_id, "figures": figures, "triggers": crossed,
                     "findings": findings(figures, config), "queries": len(queries), "dry_run": cmd.dry_run,
                     "proposals": [], "decision": "nothing crossed its threshold", "event_id": None}
    if not crossed and not cmd.force:
        return Decision([], outcome, react=False)
    before = replayed_recall(memory, queries, current, state.policy, config.k)
    values = {name: getattr(current, name) for name, _ in config.steps}
    evaluated = [(p, replayed_recall(memory, queries, replace(current, **p), state.policy, config.k))
                 for p in proposals(values, config)] if queries else []
    outcome["before"] = round(before, 6)
    outcome["proposals"] = [{"parameters": p, "after": round(a, 6)} for p, a in evaluated]
    event = verdict(before, evaluated, values, len(queries), "; ".join(crossed) or "forced", cmd.now, config)
    if event is None:
        outcome["decision"] = "no recorded queries to replay"
        return Decision([], outcome, react=False)
    applied = isinstance(event, PolicyChanged)
    outcome.update(decision=("would apply " if cmd.dry_run else "applied ") + repr(event.parameters) if applied
                   else "rejected: " + event.reason, after=event.after, parameters=event.parameters)
    if cmd.dry_run:
        return Decision([], outcome, react=False)
    event_id = new_event_id()
    outcome["event_id"] = event_id
    return Decision([PendingEvent(cmd.tenant, cmd.user_id, event_id, event)], outcome, react=False)


def decide_revert_policy(state: ShardState, cmd: RevertPolicy, deps: Deps) -> Decision:
    memory = _memory(state, cmd.tenant, cmd.user_id, "revert")
    record = memory.molt.get(cmd.change_id)
    if record is None or not record.applied:
        raise InvalidInputError([("change_id", f"{cmd.change_id!r} is no applied policy change of {cmd.tenant}/"
                                               f"{cmd.user_id}; see `palimpsest molt history`")], what="revert")
    if cmd.change_id in memory.molt.reverted():
        return Decision([], {"change_id": cmd.change_id, "reverted": False, "already_reverted": True}, react=False)
    event = PolicyChanged(parameters=dict(record.previous), previous=dict(record.parameters), metric=record.metric,
                          before=record.after, after=record.before, queries=record.queries, trigger="revert",
                          reverts=cmd.change_id, at=cmd.now, reason=cmd.reason, controller="operator")
    event_id = new_event_id()
    return Decision([PendingEvent(cmd.tenant, cmd.user_id, event_id, event, causation_id=cmd.change_id)],
                    {"change_id": cmd.change_id, "reverted": True, "event_id": event_id}, react=False)


def molt_inputs(core, q: MoltInputs) -> Answer:
    """Each query a reply answered (a ``used`` touch), oldest first: text, time, the memories the reply used."""
    by_query: dict[str, dict] = {}
    for env in core.log.scan(ScanFilter(tenant=q.tenant, user_id=q.user_id, kinds=("memory_touched",))):
        e = env.event
        if e.reason != "used":
            continue
        row = by_query.setdefault(e.query, {"query": e.query, "at": env.occurred_at.isoformat(), "memory_ids": []})
        row["memory_ids"] += [m for m in e.memory_ids if m not in row["memory_ids"]]
    return Answer(list(by_query.values()))
