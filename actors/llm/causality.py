"""Which related memories are causal: a language model checks the pairs the offline consolidation linked.

The offline consolidation (:func:`projections.decisions.graph_consolidate.consolidate`)
links a batch's memories to those close in time (``close_in_time``) or
sharing a topic or object (``related``), both ``reference`` edges; it infers
no causality. With a model configured, :func:`llm_causal_links` sends those
pairs, at most :data:`MAX_PAIRS` (close in time first), in one call per
batch (``purpose="graph_causality"``) and asks which are causal: one memory
caused or led to the other. Each confirmed pair becomes a
``graph_edge_linked`` event of edge type ``causality`` (relation
``causes``, from cause to effect) naming the call in ``llm_call_id``; a
malformed confirmation becomes a ``graph_proposal_rejected`` event. A failed
call confirms nothing: the reference edges stay, and the recorded call says why.

Where the call is made: inside the consolidation task (a Ray worker, see
:mod:`actors.consolidation`), after the offline step, so one user's batch
stays one task and the task stays pure apart from this call: it returns the
call record beside the edges and writes nothing; the shard appends them in
one batch. Ids are keyed by the batch and the decision (``new_id``, as
:func:`actors.consolidation.keyed_ids` makes them): a retried task names its
edges alike, so the shard's append finds them present and drops the call
record that came with them. Replay folds the recorded edges and never asks
the model.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from actors.llm.client import StructuredLlm
from actors.llm.steps import clip, llm_decider
from events.graph_events import GraphEdgeLinked, GraphMemoriesConsolidated, GraphProposalRejected
from events.model import Event
from projections.folds.graph import GraphMemory, GraphState

PURPOSE = "graph_causality"
MAX_PAIRS = 20  # a prompt has a size; the closest pairs in time come first
CANDIDATE_RELATIONS = ("close_in_time", "related")  # the offline step's reference edges, in order of preference
CAUSAL_RELATION = "causes"
CAUSAL_IMPORTANCE = 0.6
REASON_CHARS = 500
PROPOSAL_CHARS = 500

SCHEMA: dict[str, Any] = {
    "title": "CausalPairs",
    "type": "object",
    "properties": {
        "causal": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "pair": {"type": ["integer", "null"]},
                    "cause": {"type": ["string", "null"], "description": "A | B: the memory that caused the other"},
                    "reason": {"type": ["string", "null"]},
                },
            },
        }
    },
    "required": ["causal"],
}

INSTRUCTIONS = """\
You check pairs of memories from one user's memory graph. Each pair was linked because its memories are close in \
time or share a topic or an object. Decide for each pair whether one memory caused or led to the other \
("lost my job" → "moved back home"; "slept badly" → "felt tired"). Being close in time or about the same thing is \
not enough: list a pair only when the cause is plausible from what the memories say.
For each causal pair give pair (its [number]), cause ("A" or "B": the memory that caused the other) and a short \
reason in the language of the memories.
Reply with {"causal": [...]} and nothing else; an empty list when no pair is causal."""

NewId = Callable[[str], str]


def candidate_pairs(state: GraphState, offline: Sequence[tuple[str, Event]], limit: int = MAX_PAIRS
                    ) -> list[tuple[str, str]]:
    """The memory pairs (earlier, later) the offline step linked, close in time first, at most ``limit``.

    Pairs already joined by a causality edge (a ``link_memories`` call, an
    earlier check) are left out, as are pairs naming an unknown memory.
    """
    causal = {frozenset((e.source_id, e.target_id)) for e in state.edges.values() if e.edge_type == "causality"}
    links = [e for _, e in offline if isinstance(e, GraphEdgeLinked) and e.relation_type == "reference"
             and e.source_kind == e.target_kind == "memory" and e.relation in CANDIDATE_RELATIONS]
    links.sort(key=lambda e: CANDIDATE_RELATIONS.index(e.relation))  # stable: the offline order within a relation
    pairs: dict[frozenset[str], tuple[str, str]] = {}
    for e in links:
        key = frozenset((e.source_id, e.target_id))
        if key in pairs or key in causal or not {e.source_id, e.target_id} <= state.memories.keys():
            continue
        pairs[key] = (e.source_id, e.target_id)
    return list(pairs.values())[:limit]


def llm_causal_links(client: StructuredLlm, state: GraphState, offline: Sequence[tuple[str, Event]], new_id: NewId,
                     *, limit: int = MAX_PAIRS) -> list[tuple[str, Event]]:
    """(event id, event): the call record, a causality edge per confirmed pair, a rejection per malformed item.

    ``offline`` is the offline consolidation of one batch (it names the batch
    and the pairs); ``state`` the user's graph before it. Nothing (and no
    call) when the batch linked no pair. ``new_id(key)`` makes keyed ids.
    """
    batch = next((e.batch_id for _, e in offline if isinstance(e, GraphMemoriesConsolidated)), None)
    pairs = candidate_pairs(state, offline, limit)
    if batch is None or not pairs:
        return []
    call_id = new_id(f"{batch}/causality/call")
    result = client.complete_json(PURPOSE, _prompt(state, pairs), SCHEMA)
    out: list[tuple[str, Event]] = [(call_id, result.event)]
    if result.parsed is None:
        return out
    decider, confirmed = llm_decider(result.event), set()
    for position, item in enumerate(result.parsed["causal"]):
        read = _read(item, pairs, confirmed)
        if isinstance(read, str):
            shown = clip(json.dumps(item, ensure_ascii=False, sort_keys=True, default=str), PROPOSAL_CHARS)
            out.append((new_id(f"{batch}/causality/rejected/{position}"), GraphProposalRejected(
                llm_call_id=call_id, proposed="causal_link", proposal=shown, reason=read, decider=decider)))
            continue
        cause, effect, reason = read
        confirmed.add(frozenset((cause, effect)))
        a, b = state.memories[cause], state.memories[effect]
        edge = GraphEdgeLinked(
            source_id=cause, target_id=effect, relation_type="causality", relation=CAUSAL_RELATION,
            importance=CAUSAL_IMPORTANCE, occurred_at=max(a.created_at, b.created_at),
            reason=reason or f"the model judged that {_describe(a)} {CAUSAL_RELATION} {_describe(b)}",
            discovered_by=f"consolidate:{decider}", llm_call_id=call_id)
        out.append((new_id(f"{batch}/causality/{cause}/{effect}"), edge))
    return out


def _describe(m: GraphMemory) -> str:
    words = " ".join(x for x in (m.subject, m.topic, m.object) if x)
    details = ", ".join(f"{k}={v}" for k, v in m.attributes)
    return f"{words}{f' ({details})' if details else ''}"


def _shown(m: GraphMemory) -> str:
    return f"{_describe(m)} [{m.memory_type}, {m.created_at.isoformat(timespec='minutes')}]"


def _prompt(state: GraphState, pairs: Sequence[tuple[str, str]]) -> list[dict[str, str]]:
    lines = []
    for i, (a, b) in enumerate(pairs):
        first, second = (_shown(state.memories[m]) for m in (a, b))
        lines.append(f"[{i}] A: {first} | B: {second}")
    content = "Pairs of memories:\n" + "\n".join(lines)
    return [{"role": "system", "content": INSTRUCTIONS}, {"role": "user", "content": content}]


def _read(item: Any, pairs: Sequence[tuple[str, str]], confirmed: set[frozenset[str]]) -> tuple[str, str, str] | str:
    """(cause id, effect id, reason) from one confirmation, or why it cannot be applied."""
    if not isinstance(item, dict):
        return f"a confirmation must be an object {{pair, cause, reason}}, got {type(item).__name__}"
    index = item.get("pair")
    if isinstance(index, float) and index.is_integer():
        index = int(index)
    if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < len(pairs):
        return f"pair {item.get('pair')!r} names no pair shown (0 to {len(pairs) - 1})"
    side = item.get("cause").strip().upper() if isinstance(item.get("cause"), str) else None
    if side not in ("A", "B"):
        return f"cause {item.get('cause')!r} is neither 'A' nor 'B'"
    a, b = pairs[index]
    if frozenset((a, b)) in confirmed:
        return f"pair {index} was already confirmed earlier in this reply"
    reason = clip(item["reason"], REASON_CHARS) if isinstance(item.get("reason"), str) else ""
    return (a, b, reason) if side == "A" else (b, a, reason)
