"""The deciders and the read of a re-embedding (``palimpsest reembed``): another encoder's vectors recorded ahead,
then one switch per user.

A re-embedding never changes a recorded vector: the new model's are new
``message_embedded`` events (and ``graph_labels_embedded`` ones marked
``ahead``) beside the old, and a user is searched by them from its
``embedder_switched`` event on. A shard switches all its selected users or
none: while any of them has a message without a vector of the new model (one
that arrived after the backfill read its list), the outcome says how many,
and the driver encodes them and asks again.
"""

from __future__ import annotations

import numpy as np

from actors.commands import MissingEmbeddings, RecordEmbeddings, SwitchEmbedder
from actors.decide_archive import selected
from actors.decision import Answer, Decision, Deps, new_event_id
from events.envelope import PendingEvent
from events.errors import InvalidInputError
from events.graph_events import GraphLabelsEmbedded
from events.model import EmbedderSwitched, MessageEmbedded
from projections.folds.graph_models import LABELLED
from projections.folds.graph_records import node_id
from projections.folds.state import ShardState, UserMemory


def user_model(memory: UserMemory | None, deps: Deps) -> str:
    """The model a user's new vectors must be of: the one it is searched by, or the store's for a new user."""
    active = memory.vectors.active if memory is not None else ""
    return active or deps.model_id


def missing_messages(memory: UserMemory, model_id: str) -> list[tuple[str, str]]:
    """``(message id, its embedded text)`` of the user's messages with no vector of ``model_id``, in log order."""
    have = memory.vectors.of_model(model_id)
    return [(mid, memory.messages.by_id[mid].index_text) for mid in memory.messages.order if mid not in have]


def missing_labels(memory: UserMemory, model_id: str) -> list[str]:
    """The labels of the user's topic/object nodes with no vector of ``model_id`` (held or on the node)."""
    graph = memory.graph
    if (graph.vector_model or memory.vectors.first) == model_id:
        return []  # the nodes' own vectors are of that model: the ordinary label pass fills what is missing
    held = graph.held.get(model_id, {})
    nodes = sorted((n for n in graph.nodes.values() if n.node_type in LABELLED), key=lambda n: n.seq)
    return list(dict.fromkeys(n.label for n in nodes if n.node_id not in held))


def missing_embeddings(core, q: MissingEmbeddings) -> Answer:
    out = []
    for tenant, user_id, memory in selected(core.state, q.tenant, q.user_id):
        if not memory.messages.order:
            continue
        messages = missing_messages(memory, q.model_id)
        labels = missing_labels(memory, q.model_id)
        out.append({"tenant": tenant, "user_id": user_id, "active": memory.vectors.active,
                    "messages": messages, "labels": labels})
    return Answer(out)


def decide_record_embeddings(state: ShardState, cmd: RecordEmbeddings, deps: Deps) -> Decision:
    """A ``message_embedded`` event per message that has no vector of the model yet and one ``graph_labels_embedded``
    (ahead) for the labels still lacking one; a retried or overlapping call records only what is new. The
    outcome is ``{"messages": n, "labels": m}`` recorded."""
    memory = state.user(cmd.tenant, cmd.user_id)
    problems = _shape_problems(cmd)
    if memory is None and cmd.message_ids:
        problems.append(("user_id", f"{cmd.user_id!r} has no memories in tenant {cmd.tenant!r}"))
    if memory is not None:
        unknown = [m for m in cmd.message_ids if m not in memory.messages.by_id]
        if unknown:
            problems.append(("message_ids", f"{unknown[:3]} are no messages of this user"))
    if problems:
        raise InvalidInputError(problems, what="record embeddings")
    if memory is None:
        return Decision([], {"messages": 0, "labels": 0}, react=False)
    have = memory.vectors.of_model(cmd.model_id)
    pending, seen = [], set()
    vectors = np.asarray(cmd.vectors) if cmd.vectors is not None else np.zeros((0, 1), np.float32)
    for mid, text, vec in zip(cmd.message_ids, cmd.input_texts, vectors):
        if mid in have or mid in seen:
            continue
        seen.add(mid)
        event = MessageEmbedded(message_event_id=mid, model_id=cmd.model_id, dim=int(vectors.shape[1]),
                                vector=np.asarray(vec, dtype="<f4").tobytes(), input_text=text)
        pending.append(PendingEvent(cmd.tenant, cmd.user_id, new_event_id(), event, causation_id=mid,
                                    correlation_id=mid))
    wanted = set(missing_labels(memory, cmd.model_id))
    labels = {}
    if cmd.labels and cmd.label_vectors is not None:
        label_vectors = np.asarray(cmd.label_vectors)
        labels = {label: np.asarray(v, dtype="<f4").tobytes() for label, v in zip(cmd.labels, label_vectors)
                  if label in wanted}
        if labels:
            event = GraphLabelsEmbedded(dim=int(label_vectors.shape[1]), vectors=labels, model_id=cmd.model_id,
                                        ahead=True)
            pending.append(PendingEvent(cmd.tenant, cmd.user_id, new_event_id(), event))
    return Decision(pending, {"messages": len(seen), "labels": len(labels)}, react=False)


def _shape_problems(cmd: RecordEmbeddings) -> list[tuple[str, str]]:
    problems = []
    n = len(cmd.message_ids)
    vectors = None if cmd.vectors is None else np.asarray(cmd.vectors)
    if len(cmd.input_texts) != n:
        problems.append(("input_texts", f"{len(cmd.input_texts)} texts for {n} message ids: give one per id"))
    if n and (vectors is None or vectors.ndim != 2 or vectors.shape[0] != n or vectors.shape[1] < 1):
        problems.append(("vectors", f"shape {None if vectors is None else vectors.shape}, expected ({n}, dim)"))
    if cmd.labels:
        lv = None if cmd.label_vectors is None else np.asarray(cmd.label_vectors)
        if lv is None or lv.ndim != 2 or lv.shape[0] != len(cmd.labels):
            problems.append(("label_vectors", f"shape {None if lv is None else lv.shape}, expected "
                                              f"({len(cmd.labels)}, dim)"))
        elif vectors is not None and n and lv.shape[1] != vectors.shape[1]:
            problems.append(("label_vectors", f"{lv.shape[1]} numbers per vector, the messages' have {vectors.shape[1]}"))
    for name, arr in (("vectors", vectors), ("label_vectors", cmd.label_vectors)):
        if arr is not None and np.asarray(arr).size and not np.isfinite(np.asarray(arr, dtype=np.float64)).all():
            problems.append((name, "holds non-finite numbers"))
    return problems


def decide_switch(state: ShardState, cmd: SwitchEmbedder, deps: Deps) -> Decision:
    """One ``embedder_switched`` per selected user not yet searched by ``model_id``, if every such user has a
    vector of it for each message; else none. Outcome ``{"switched": n, "missing": {"tenant/user": count}}``."""
    pending, missing = [], {}
    for tenant, user_id, memory in selected(state, cmd.tenant, cmd.user_id):
        if not memory.messages.order or memory.vectors.active == cmd.model_id:
            continue
        have = memory.vectors.of_model(cmd.model_id)
        lacking = sum(1 for mid in memory.messages.order if mid not in have)
        if lacking:
            missing[f"{tenant}/{user_id}"] = lacking
            continue
        sizes = {r.vector.shape[0] for r in have.values()}
        if sizes != {cmd.dim}:
            raise InvalidInputError([("dim", f"{cmd.dim}, but {tenant}/{user_id}'s vectors of {cmd.model_id!r} have "
                                             f"{sorted(sizes)} numbers")], what="switch embedder")
        event = EmbedderSwitched(embedder=cmd.embedder, model_id=cmd.model_id, dim=cmd.dim,
                                 previous_model_id=memory.vectors.active)
        pending.append(PendingEvent(tenant, user_id, new_event_id(), event))
    if missing:
        return Decision([], {"switched": 0, "missing": missing}, react=False)
    return Decision(pending, {"switched": len(pending), "missing": {}}, react=False)
