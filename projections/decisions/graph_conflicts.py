"""The consolidation's conflict check (seed 001 §12.4 step 5, §9.2 "记忆冲突"): graph memories against the notes.

Contradictions are decided once, by the notes: a note operation supersedes
"Atlas prefers green tea in the morning" with "Atlas switched to coffee", or
deletes a note. :func:`note_conflicts` carries those decisions over to the
graph: an active graph memory that rests on a closed note (``superseded`` or
``retracted``) gets a ``graph_memory_status_changed`` event, status
``superseded``, whose reason names the notes. Nothing is erased: the memory
keeps its record in the log and in the export; graph search walks only
active memories, so it is no longer a seed or a hop.

A memory rests on a closed note when either holds:

1. **Same source message.** The memory was drawn from a message among the
   note's sources, and its terms (of topic, object and attribute values)
   overlap the note's key terms (all such notes of the message closed). A
   memory sharing no term with the message's notes rests on none of them:
   "I do my best work early. I prefer green tea" gives a note on tea, and
   superseding it withdraws the tea memory, not the early-work one.
2. **Same claim** (only for ``superseded`` notes and for states: ``fact``,
   ``relation``, ``opinion``; an ``event`` that happened stays true). The
   memory has the note's subject, the terms of its object (or of its topic,
   without an object) all appear among the note's key terms, and it was
   created before the note was closed. This catches memories with no source
   message (``create_memory`` tool calls) or from another message.

Either way, a memory whose claim an active positive note still states is
left alone: a note refined by an update ("prefers green tea" → "prefers green
tea, sencha") does not withdraw it.

Pure and idempotent: only active memories are considered, so once the events
are applied the same check returns nothing.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from events.graph_events import GraphMemoryStatusChanged
from projections.folds.graph import GraphMemory, GraphState, normalise_label
from projections.folds.notes import Note, NoteState
from projections.rules.text import text_memo

STATE_TYPES = ("fact", "relation", "opinion")  # what can stop being true; events are history


@text_memo(50_000)
def _terms(label: str) -> frozenset[str]:
    # Imported on first use: the extractor's tables load jieba's dictionary (~60 MB), which a graph process with
    # no note to check (a consolidation worker, the graph benchmark) never needs.
    from projections.rules.extraction import key_terms

    return frozenset(key_terms(label))


def _memory_terms(m: GraphMemory) -> frozenset[str]:
    labels = [m.topic, *([m.object] if m.object else []), *(value for _, value in m.attributes)]
    return frozenset().union(*map(_terms, labels))


def _core_terms(m: GraphMemory) -> frozenset[str]:
    return _terms(m.object) if m.object else _terms(m.topic)


def _closure(note: Note) -> str:
    if note.status == "superseded":
        return f"superseded by note {note.superseded_by}"
    return "retracted"


def note_evidence(notes: NoteState) -> NoteState:
    """The part of the notes :func:`note_conflicts` reads, without the BM25 index (cheap to ship to a task).

    The closed notes and the active positive ones (which may still state a
    memory's claim); empty when no note was ever closed, as nothing can conflict.
    """
    if all(n.status == "active" for n in notes.notes.values()):
        return NoteState()
    keep = {nid: n for nid, n in notes.notes.items() if n.status != "active" or n.polarity == "positive"}
    return NoteState(notes=keep)


# "switch to MySQL and drop PostgreSQL": a note names what it gives up; those terms support nothing.
_DROP_EN = re.compile(r"\b(?:drop(?:s|ped|ping)?|quit(?:s|ting)?|stop(?:s|ped|ping)? using|no longer(?: use)?|"
                      r"instead of|rather than|replac(?:e|es|ed|ing)|remov(?:e|es|ed|ing)|ditch(?:es|ed|ing)?)\s+"
                      r"([^,.;!?]+)", re.IGNORECASE)
_DROP_ZH = re.compile(r"(?:不再用|不再|放弃|换掉|取消|去掉)([^，。；！？,.;!?]+)")


def _dropped(text: str) -> frozenset[str]:
    fragments = [m.group(1) for rx in (_DROP_EN, _DROP_ZH) for m in rx.finditer(text)]
    return frozenset().union(*map(_terms, fragments)) if fragments else frozenset()


def _stated(claim: frozenset[str], support: list[frozenset[str]]) -> bool:
    return bool(claim) and any(claim <= terms for terms in support)


def _by_message(notes: Iterable[Note]) -> dict[str, list[Note]]:
    out: dict[str, list[Note]] = {}
    for n in sorted(notes, key=lambda n: (n.seq, n.note_id)):
        for message_id in n.source_message_ids:
            out.setdefault(message_id, []).append(n)
    return out


def _same_source(m: GraphMemory, by_message: dict[str, list[Note]]) -> tuple[list[Note], frozenset[str]]:
    """The closed notes ``m`` rests on through its source messages, and the claim they share with it."""
    terms = _memory_terms(m)
    found: dict[str, Note] = {}
    claim: frozenset[str] = frozenset()
    for message_id in m.source_message_ids:
        siblings = by_message.get(message_id, [])
        # Only the notes about what the memory says: "I do my best work early. I prefer green tea" gives a note
        # on tea, and superseding it says nothing about the early work.
        matched = [n for n in siblings if terms & set(n.key_terms)]
        if matched and all(n.status != "active" for n in matched):
            found.update((n.note_id, n) for n in matched)
            claim |= terms & {t for n in matched for t in n.key_terms}
    return sorted(found.values(), key=lambda n: (n.seq, n.note_id)), claim


def _same_claim(m: GraphMemory, superseded: list[Note]) -> list[Note]:
    """The superseded notes of ``m``'s subject that state its core terms and closed after it was created."""
    if m.memory_type not in STATE_TYPES:
        return []
    core, subject = _core_terms(m), normalise_label(m.subject)
    return [n for n in superseded if core and normalise_label(n.subject) == subject and core <= set(n.key_terms)
            and n.valid_to is not None and m.created_at <= n.valid_to]


def note_conflicts(graph: GraphState, notes: NoteState) -> list[GraphMemoryStatusChanged]:
    """``superseded`` status changes for the active graph memories that rest on closed notes, oldest memory first."""
    closed = [n for n in notes.notes.values() if n.status != "active"]
    if not closed:
        return []
    by_message = _by_message(notes.notes.values())
    superseded = sorted((n for n in closed if n.status == "superseded"), key=lambda n: (n.seq, n.note_id))
    support = [frozenset(n.key_terms) - _dropped(n.text) for n in notes.notes.values()
               if n.status == "active" and n.polarity == "positive"]
    out = []
    for m in sorted(graph.memories.values(), key=lambda m: (m.created_at, m.seq, m.memory_id)):
        if m.status != "active":
            continue
        rests_on, claim = _same_source(m, by_message)
        how = "drawn from the same message as"
        if not rests_on:
            rests_on, claim, how = _same_claim(m, superseded), _core_terms(m), "states the claim of"
        if not rests_on or _stated(claim, support):
            continue
        named = "; ".join(f"note {n.note_id} ({n.text!r}), {_closure(n)}" for n in rests_on)
        successor = next((n.superseded_by for n in rests_on if n.superseded_by), None)
        out.append(GraphMemoryStatusChanged(memory_id=m.memory_id, status="superseded", superseded_by=successor,
                                            reason=f"{how} {named}"))
    return out
