"""``explain``: why a memory or note is what it is at a time — its whole chain, read from the log and the folds.

Pure given its inputs: the user's folded memory, the user's envelopes (the
reader scans them; explanation is an audit of the log), the memory or note
id, the time ``at`` and the retention policy. Everything after ``at`` is left
out, so ``at`` in the past shows the memory as it stood then. Sections:

- ``subject``: what the id is (a conversation memory, a note version, a graph memory) and its text;
- ``source_events``: the events that recorded it and what was derived from it in the same breath
  (message, classification, embedding, note operations, graph staging), with the model calls they cite;
- ``notes`` (versions, supersession, decider and reason) and ``graph_memories`` derived from it;
- ``touches`` (every access with its reason and query) and ``feedback`` (signals naming it, with cues);
- ``retention``: R at ``at`` with why, the reinforcements, the curve ahead and the expected archival date;
- ``archive``: archival and restore events; ``adjustments``: the dispatcher's, whether each applies at ``at``;
- ``status``: one line per reason the memory is where it is (kept, archived, invalidated, superseded, penalised).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta

from events.envelope import Envelope
from projections.folds import retention as ret
from projections.folds.policy import RetentionPolicy
from projections.folds.state import UserMemory

CURVE_DAYS = (0, 7, 30, 90, 365)
HORIZON_DAYS = 3650.0


class UnknownMemory(LookupError):
    """The id is no memory, note or graph memory of the user."""


def _summary(env: Envelope) -> str:
    e = env.event
    kind = env.kind
    if kind == "message_recorded":
        return f"{e.role} {e.speaker or ''}: {e.text[:120]}".strip()
    if kind == "message_classified":
        return f"type {e.memory_type}" + (f", category {e.category}" if getattr(e, "category", None) else "")
    if kind == "message_embedded":
        return f"embedded by {e.model_id} (dim {e.dim}) from {e.input_text[:60]!r}"
    if kind == "note_operation":
        text = f" {e.note.text[:80]!r}" if e.note is not None else ""
        return f"{e.op}{text} by {e.decider}: {e.reason}"
    if kind == "graph_memory_staged":
        return f"{e.subject} —{e.topic}→ {e.object or ''} ({e.memory_type}) by {e.extractor}"
    if kind == "llm_call_recorded":
        return f"{e.purpose} via {e.model}" + (f", failed: {e.error}" if getattr(e, "error", None) else "")
    if kind == "memory_touched":
        return f"{e.reason}: {e.query[:80]!r}"
    if kind == "feedback_detected":
        return f"{e.type} {e.confidence:.2f} ({'; '.join(e.cues) or 'no cue'})"
    if kind in ("memory_archived", "memory_restored"):
        return f"{e.reason}" + (f" ({e.detail})" if getattr(e, "detail", "") else "")
    if kind == "memory_adjusted":
        return f"{e.layer} {e.action}: {e.reason}"
    if kind == "adjustment_reverted":
        return f"revert {e.adjustment_id}: {e.reason}"
    return kind


def _row(env: Envelope, **extra) -> dict:
    return {"seq": env.seq, "event_id": env.event_id, "kind": env.kind, "at": env.occurred_at.isoformat(),
            "summary": _summary(env), **extra}


def _note_view(note, at: datetime) -> dict:
    return {"note_id": note.note_id, "version": note.version, "category": note.category, "text": note.text,
            "status": note.status if note.valid_to is None or note.valid_to <= at else "active",
            "valid_at": note.valid_at(at), "valid_from": note.valid_from.isoformat(),
            "valid_to": note.valid_to.isoformat() if note.valid_to else None, "supersedes": note.supersedes,
            "superseded_by": note.superseded_by, "decider": note.decider, "reason": note.reason,
            "boosts": note.boosts, "uses": note.uses, "source_message_ids": list(note.source_message_ids)}


def _retention(memory: UserMemory, memory_id: str, at: datetime, policy: RetentionPolicy) -> dict | None:
    item = memory.retention.items.get(memory_id)
    if item is None or (item := ret.as_of(item, at, policy)) is None:
        return None
    pinned = memory.notes.constraint_sources(at)  # a constraint in force now is assumed to hold on the curve
    row = ret.assess(item, at, policy, pinned)
    curve = [{"day": d, "at": (at + timedelta(days=d)).isoformat(),
              "retention": round(ret.assess(item, at + timedelta(days=d), policy, pinned).retention, 6)}
             for d in CURVE_DAYS]
    archival = None
    start = item.reference_time  # R only falls from the last access on: bisect the first archival time
    end = at + timedelta(days=HORIZON_DAYS)
    if not row.exempt and ret.assess(item, end, policy).archive:
        low, high = 0.0, (end - start).total_seconds() / 86_400
        while high - low > 1 / 24:
            mid = (low + high) / 2
            low, high = (low, mid) if ret.assess(item, start + timedelta(days=mid), policy).archive else (mid, high)
        archival = (start + timedelta(days=high)).isoformat(timespec="minutes")
    return {"retention": row.retention, "memory_type": row.memory_type, "stability_days": row.stability,
            "access_count": row.access_count, "exempt": row.exempt, "archive_now": row.archive, "why": row.why,
            "reinforced_at": [a.isoformat() for a in item.accesses], "curve": curve,
            "expected_archival": archival, "archival_due": archival is not None and archival <= at.isoformat(),
            "policy": policy.name}


def explain(memory: UserMemory, envelopes: Iterable[Envelope], memory_id: str, at: datetime,
            policy: RetentionPolicy, score: dict | None = None) -> dict:
    """The chain of ``memory_id`` (a memory, note or graph memory id of this user) as of ``at``."""
    envelopes = list(envelopes)
    kept: set[str] = set()
    for env in envelopes:  # what happened by ``at``, and what was derived from it in the same breath
        if env.occurred_at <= at or env.causation_id in kept or env.correlation_id in kept:
            kept.add(env.event_id)
    envelopes = [e for e in envelopes if e.event_id in kept]
    notes, messages, graph = memory.notes.notes, memory.messages.by_id, memory.graph.memories
    if memory_id in messages:
        kind, message_ids = "memory", (memory_id,)
        msg = messages[memory_id]
        subject = {"text": msg.text, "speaker": msg.speaker, "role": msg.role, "turn_id": msg.turn_id,
                   "conversation_id": msg.conversation_id, "occurred_at": msg.occurred_at.isoformat()}
        note_ids = [n.note_id for n in memory.notes.by_source(memory_id)]
    elif memory_id in notes:
        kind, note = "note", notes[memory_id]
        message_ids = tuple(m for m in note.source_message_ids if m in messages)
        subject = {"text": note.text, "category": note.category, "version": note.version}
        note_ids = [n.note_id for n in memory.notes.history(memory_id)]
    elif memory_id in graph:
        kind, g = "graph_memory", graph[memory_id]
        message_ids = tuple(m for m in g.source_message_ids if m in messages)
        subject = {"text": f"{g.subject} —{g.topic}→ {g.object or ''}".strip(), "memory_type": g.memory_type,
                   "status": g.status, "extractor": g.extractor}
        note_ids = []
    else:
        raise UnknownMemory(memory_id)
    related = {memory_id, *message_ids, *note_ids}
    sources, touches, signals, archive = [], [], [], []
    cited_calls: set[str] = set()
    for env in envelopes:
        e = env.event
        if env.kind == "memory_touched":
            hits = [(m, r, s) for m, r, s in zip(e.memory_ids, e.ranks, e.scores) if m in related]
            touches += [_row(env, memory_id=m, rank=r, score=s, reason=e.reason, query=e.query) for m, r, s in hits]
        elif env.kind == "feedback_detected":
            if related & set(e.memory_ids):
                signals.append(_row(env, type=e.type, confidence=e.confidence, cues=list(e.cues),
                                    action_hints=list(e.action_hints), judge=e.judge, user_input=e.user_input))
        elif env.kind in ("memory_archived", "memory_restored"):
            if related & set(e.memory_ids):
                archive.append(_row(env, action=env.kind.removeprefix("memory_"), reason=e.reason,
                                    memory_ids=sorted(related & set(e.memory_ids))))
        elif (env.event_id in related or env.correlation_id in related or env.causation_id in related
              or (env.kind == "note_operation" and (e.target_note_id in related
                                                    or related & set(e.source_message_ids)))
              or (env.kind == "graph_memory_staged" and related & set(e.source_message_ids))):
            if env.kind in ("memory_adjusted", "adjustment_reverted"):
                continue
            sources.append(_row(env))
            if getattr(e, "llm_call_id", None):
                cited_calls.add(e.llm_call_id)
    sources += [_row(env) for env in envelopes if env.event_id in cited_calls]
    sources.sort(key=lambda r: r["seq"])
    adjustments = []
    for target in sorted(related):
        for a in memory.adjustments.about(target):
            if a.at <= at and all(x["adjustment_id"] != a.adjustment_id for x in adjustments):
                adjustments.append({**a.to_dict(), "applies": a.applies(at)})
    derived_notes = [_note_view(notes[n], at) for n in note_ids if notes[n].valid_from <= at]
    graph_memories = [{"memory_id": g.memory_id, "subject": g.subject, "topic": g.topic, "object": g.object,
                       "memory_type": g.memory_type, "status": g.status, "superseded_by": g.superseded_by,
                       "consolidated": g.consolidated, "extractor": g.extractor, "created_at": g.created_at.isoformat()}
                      for g in graph.values() if set(g.source_message_ids) & ({memory_id} | set(message_ids))
                      and g.created_at <= at]
    retention = {m: r for m in message_ids if (r := _retention(memory, m, at, policy)) is not None}
    out = {"memory_id": memory_id, "kind": kind, "at": at.isoformat(), "subject": subject,
           "source_message_ids": list(message_ids), "source_events": sources, "notes": derived_notes,
           "graph_memories": graph_memories, "touches": touches, "feedback": signals, "retention": retention,
           "archive": archive, "adjustments": adjustments, "score": score}
    out["status"] = _status(memory, memory_id, kind, message_ids, at, out)
    return out


def _status(memory: UserMemory, memory_id: str, kind: str, message_ids: tuple[str, ...], at: datetime,
            out: dict) -> list[str]:
    lines = []
    for a in out["adjustments"]:
        if a["applies"] and a["action"] == "invalidate":
            lines.append(f"invalidated at {a['at'][:16]} by adjustment {a['adjustment_id'][:12]} "
                         f"({len(a['signal_ids'])} signals): {a['reason']} — out of default retrieval")
        elif a["applies"] and a["action"] == "penalty":
            lines.append(f"penalised ×{a['factor']} ({a['layer']} layer"
                         + (f", until {a['until'][:16]}" if a["until"] else "")
                         + (f", for questions like {a['scope']!r}" if a.get("scope") else "") + f"): {a['reason']}")
        elif a["reverted_at"] and a["reverted_at"] <= at.isoformat():
            lines.append(f"adjustment {a['adjustment_id'][:12]} ({a['action']}) reverted at {a['reverted_at'][:16]}: "
                         f"{a['revert_reason']}")
    if kind == "note":
        note = memory.notes.notes[memory_id]
        if note.valid_at(at):
            lines.append(f"note version {note.version} valid since {note.valid_from.date()} ({note.reason})")
        elif note.superseded_by and note.valid_to and note.valid_to <= at:
            lines.append(f"superseded at {note.valid_to.date()} by {note.superseded_by[:12]}")
        elif note.valid_to and note.valid_to <= at:
            lines.append(f"{note.status} at {note.valid_to.date()}")
    for m in message_ids:
        moves = [r for r in out["archive"] if m in r["memory_ids"] and r["reason"] != "lfu_eviction"]
        if moves and moves[-1]["action"] == "archived":
            lines.append(f"{m[:12]} archived at {moves[-1]['at'][:10]} ({moves[-1]['reason']})")
        elif m in out["retention"]:
            lines.append(f"{m[:12]} {out['retention'][m]['why']}")
    return lines
