"""The graph's label vectors across encoders: what a re-embedding records ahead, and the switch.

Node vectors are those of the user's active encoder. A re-embedding records
the labels' vectors of the next encoder ahead of the switch
(``graph_labels_embedded`` with ``ahead``): they are held apart, by model, and
the nodes keep theirs. At the user's ``embedder_switched`` event the nodes'
vectors are held under the previous model and each node takes the new
model's vector of its label (none yet: the driver's next label pass embeds it
with the new encoder). Switching back takes the held vectors again.
"""

from __future__ import annotations

import numpy as np

from events.graph_events import GraphLabelsEmbedded
from events.model import EmbedderSwitched
from projections.folds.graph_records import GraphNode, node_id

LABELLED = ("topic", "object")  # the node types whose labels are embedded


def hold_ahead(held: dict[str, dict[str, np.ndarray]], e: GraphLabelsEmbedded) -> None:
    """Keep ``e``'s vectors (recorded ahead of a switch to ``e.model_id``) by model and node id."""
    mine = held.setdefault(e.model_id, {})
    for label in e.vectors:
        vector = e.vector(label)
        for node_type in LABELLED:
            mine[node_id(node_type, label)] = vector


def switch(nodes: dict[str, GraphNode], held: dict[str, dict[str, np.ndarray]], current: str,
           e: EmbedderSwitched) -> str:
    """The nodes take the vectors held for ``e.model_id``; theirs are held under the model they were of
    (``current``, else the event's ``previous_model_id``). Returns the model the nodes' vectors are of now."""
    previous = current or e.previous_model_id
    if e.model_id == previous:
        return previous
    old = held.setdefault(previous, {})
    incoming = held.pop(e.model_id, {})
    for nid, node in nodes.items():
        if node.node_type not in LABELLED:
            continue
        if node.vector is not None:
            old[nid] = node.vector
        vector = incoming.get(nid)
        if vector is not None or node.vector is not None:
            nodes[nid] = GraphNode(node.node_id, node.node_type, node.label, node.seq, vector, node.memory_ids)
    return e.model_id


def canonical(held: dict[str, dict[str, np.ndarray]], current: str) -> list:
    """The held vectors in a comparable form (empty for a user that never re-embedded)."""
    if not held and not current:
        return []
    return [current, [(m, sorted((nid, v.tobytes()) for nid, v in vs.items())) for m, vs in sorted(held.items())]]
