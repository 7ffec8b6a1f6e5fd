"""The deciders of :class:`~actors.commands.RecordMessages` (messages, their embeddings and classes, the
graph memories and note operations read from them, all in one append) and of
:class:`~actors.commands.RecordTurns` (those, and the usage of the replies among them).

A message whose client id the user already has yields no new events (the
outcome names the stored memory id); see :mod:`actors.decision` for what a
decider may do.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from actors.commands import RecordMessages, RecordReplies, RecordTurns
from actors.decide_notes import decide_replies
from actors.decision import Decision, Deps, new_event_id
from actors.decide_reembed import user_model
from actors.llm.graph_ops import Embed, llm_graph_memories
from actors.llm.memory_ops import llm_note_operations
from events.commands import RecordMessage
from events.envelope import PendingEvent
from events.errors import InvalidInputError
from events.graph_events import GraphMemoryStaged
from events.model import MessageEmbedded, MessageRecorded, MessageSuperseded
from projections.decisions.graph_staging import STAGED_ROLES
from projections.decisions.note_ops import decide_note_operations
from projections.decisions.turn_supersession import decide_turn_supersessions
from projections.folds.state import ShardState
from projections.queries.items import is_item
from projections.rules.classify import classification_event
from projections.rules.graph_extract import CandidateGraphMemory


def decide_record_messages(state: ShardState, cmd: RecordMessages, deps: Deps) -> Decision:
    """The events of a batch of messages; the outcome is, per message, its memory id and whether it is new."""
    for message in cmd.messages:
        expected = user_model(state.user(message.tenant, message.user_id), deps)
        if cmd.model_id != expected:
            raise InvalidInputError(
                [("model_id", f"{cmd.model_id!r} differs from {expected!r}, the model {message.tenant}/"
                              f"{message.user_id} is searched by; embed with the store's model (after an "
                              "interrupted re-embedding, run `palimpsest reembed` again to finish it)")],
                what="record batch",
            )
    pending, outcomes = decide_record(state, list(cmd.messages), cmd.vectors, cmd.model_id, deps.dim, deps.llm,
                                      [tuple(g) for g in cmd.graph] if cmd.graph is not None else None,
                                      readings=cmd.readings)
    return Decision(pending, outcomes)


def decide_record_turns(state: ShardState, cmd: RecordTurns, deps: Deps) -> Decision:
    """The messages' events, then the replies' usage, both decided against ``state``: a reply names memories
    recorded before the batch, whose texts the batch's own messages do not change (a note they supersede keeps its
    text), so deciding it after their fold would decide the same."""
    messages = decide_record_messages(state, cmd.messages, deps)
    replies = decide_replies(state, RecordReplies(replies=cmd.replies), deps) if cmd.replies else Decision()
    return Decision(messages.pending + replies.pending,
                    {"messages": messages.outcome, "replies": replies.outcome or []})


def decide_record(
    state: ShardState, commands: list[RecordMessage], vectors: np.ndarray, model_id: str, dim: int, llm=None,
    graph: list[tuple[GraphMemoryStaged, ...]] | None = None, embed: Embed | None = None,
    readings: Sequence[Sequence[CandidateGraphMemory]] | None = None,
) -> tuple[list[PendingEvent], list[dict]]:
    """Events for new messages (recorded, classified, embedded); known client ids are acknowledged as duplicates.

    The embedding and the memory type are recorded here, once, so replay never recomputes them.
    ``graph`` holds, per command, the graph memories the offline rules read
    from it (label vectors included); they are staged with the message as
    their source, unless a language model is configured (``llm``): then the
    model proposes each user's memories (see :func:`decide_graph`), and
    ``embed`` (label → vector, the store's encoder) embeds the labels it
    wrote. Without ``graph`` no graph memory is staged and the model is not asked. ``readings`` (per
    command, the offline graph rules' reading ``graph`` came from) spares the note rules a second reading.
    """
    if vectors.shape != (len(commands), dim):
        raise InvalidInputError(
            [("vectors", f"shape {vectors.shape}, expected ({len(commands)}, {dim}); embed with the store's model")],
            what="record batch",
        )
    # Per new message: recorded, classified, embedded (the tier fold takes the page's key terms from the
    # classification, then places the page when its embedding comes).
    blocks: list[list[PendingEvent]] = []
    fresh: list[tuple[PendingEvent, tuple[GraphMemoryStaged, ...]]] = []  # per new message: recorded, offline graph
    outcomes: list[dict] = []
    seen_in_batch: dict[tuple[str, str, str], str] = {}
    reading_of: dict[str, Sequence[CandidateGraphMemory]] = {}  # new message id → its graph rules' reading
    for position, (cmd, vec) in enumerate(zip(commands, vectors)):
        key = cmd.message_key()
        memory = state.user(cmd.tenant, cmd.user_id)
        known = memory.messages.client_ids.get(key) if memory else None
        known = known or seen_in_batch.get((cmd.tenant, cmd.user_id, key))
        if known:
            outcomes.append({"memory_id": known, "created": False})
            continue
        message_id = new_event_id()
        seen_in_batch[(cmd.tenant, cmd.user_id, key)] = message_id
        recorded = MessageRecorded(
            conversation_id=cmd.conversation_id,
            role=cmd.role,
            speaker=cmd.speaker,
            text=cmd.text,
            occurred_at=cmd.occurred_at,
            client_message_id=key,
            turn_id=cmd.turn_id,
            metadata=cmd.metadata,
        )
        input_text = cmd.index_text()
        embedded = MessageEmbedded(
            message_event_id=message_id,
            model_id=model_id,
            dim=dim,
            vector=np.asarray(vec, dtype="<f4").tobytes(),
            input_text=input_text,
        )
        classified = classification_event(message_id, cmd.text)
        message = PendingEvent(cmd.tenant, cmd.user_id, message_id, recorded, correlation_id=message_id)
        blocks.append([message] + [
            PendingEvent(cmd.tenant, cmd.user_id, new_event_id(), derived,
                         causation_id=message_id, correlation_id=message_id)
            for derived in (classified, embedded)
        ])
        fresh.append((message, tuple(graph[position]) if graph else ()))
        if readings is not None:
            reading_of[message_id] = readings[position]
        outcomes.append({"memory_id": message_id, "created": True})
    staged, calls = decide_graph(fresh, llm if graph is not None else None, embed)
    pending: list[PendingEvent] = []
    for block, (message, _), memories, before in zip(blocks, fresh, staged, calls, strict=True):
        pending += block + before
        message_id, turn_id = message.event_id, message.event.turn_id
        sources = {"source_message_ids": (message_id,), "source_turn_ids": (turn_id,) if turn_id else ()}
        pending += [
            PendingEvent(message.tenant, message.user_id, new_event_id(), m.model_copy(update=sources),
                         causation_id=message_id, correlation_id=message_id)
            for m in memories
        ]
    pending += decide_notes(state, [message for message, _ in fresh], llm, reading_of)
    return pending, outcomes


def decide_graph(
    fresh: list[tuple[PendingEvent, tuple[GraphMemoryStaged, ...]]], llm=None, embed: Embed | None = None,
) -> tuple[list[tuple[GraphMemoryStaged, ...]], list[list[PendingEvent]]]:
    """Per new message: the graph memories to stage, and the events to append before them.

    ``fresh`` pairs each new ``message_recorded`` with the memories the
    offline rules read from it. Without ``llm`` those are staged. With it,
    one call per user asks the model for the memories of that user's new
    user turns (:func:`actors.llm.graph_ops.llm_graph_memories`; the offline
    memories are its fallback); the call record and any rejected proposals
    go before the first of those turns' memories, in the same append.
    """
    staged = [memories for _, memories in fresh]
    before: list[list[PendingEvent]] = [[] for _ in fresh]
    if llm is None:
        return staged, before
    by_stream: dict[tuple[str, str], list[int]] = {}
    for i, (message, _) in enumerate(fresh):
        if message.event.role in STAGED_ROLES:
            by_stream.setdefault((message.tenant, message.user_id), []).append(i)
    for (tenant, user_id), positions in by_stream.items():
        messages = [(fresh[i][0].event_id, fresh[i][0].event) for i in positions]
        records, memories = llm_graph_memories(llm, messages, [staged[i] for i in positions], new_event_id, embed=embed)
        before[positions[0]] = [PendingEvent(tenant, user_id, event_id, event) for event_id, event in records]
        for i, group in zip(positions, memories, strict=True):
            staged[i] = group
    return staged, before


LLM_ACTIVE_NOTES = 40  # the active notes shown to the model: the most recent ones (a prompt has a size)


def decide_notes(state: ShardState, recorded: list[PendingEvent], llm=None,
                 readings: Mapping[str, Sequence[CandidateGraphMemory]] | None = None) -> list[PendingEvent]:
    """Note operations (add / update / boost / delete / skip) for newly recorded messages, per user.

    Decided against the user's active notes, in message order, so a note
    added earlier in the batch can be superseded later in it: by the language
    model when one is configured (``llm``, an LlmClient; its call is recorded
    as an ``llm_call_recorded`` event and the operations name it), otherwise by
    the offline rules. Appended in the same batch as the messages: a message
    and the notes read from it are durable together, and replay folds the
    recorded operations without asking the model again. Then, by the offline
    rules either way, the earlier turns each new turn leaves behind
    (``message_superseded``, :mod:`projections.decisions.turn_supersession`).
    """
    out: list[PendingEvent] = []
    by_stream: dict[tuple[str, str], list[PendingEvent]] = {}
    for p in recorded:
        by_stream.setdefault((p.tenant, p.user_id), []).append(p)
    for (tenant, user_id), items in by_stream.items():
        memory = state.user(tenant, user_id)
        # Items (projections.queries.items) change only by a put or a delete of their key: no message touches them.
        active = [n for n in memory.notes.active() if not is_item(n)] if memory else []
        previous = memory.messages.by_id[memory.messages.order[-1]].text if memory and memory.messages.order else None
        messages = [(p.event_id, p.event) for p in items]
        if llm is not None:
            calls, ops = llm_note_operations(llm, active[-LLM_ACTIVE_NOTES:], messages, new_event_id,
                                             previous_text=previous)
            out += [PendingEvent(tenant, user_id, event_id, call) for event_id, call in calls]
        else:
            ops = decide_note_operations(active, messages, new_event_id, previous_text=previous, readings=readings,
                                         kept_for=memory.notes if memory else None)
        for event_id, op in ops:
            source = op.source_message_ids[0] if op.source_message_ids else None
            out.append(PendingEvent(tenant, user_id, event_id, op, causation_id=source, correlation_id=source))
        for event_id, event in decide_turn_supersessions(memory, messages, new_event_id):
            source = event.by_message_event_id if isinstance(event, MessageSuperseded) else event.source_message_ids[0]
            out.append(PendingEvent(tenant, user_id, event_id, event, causation_id=source, correlation_id=source))
    return out
