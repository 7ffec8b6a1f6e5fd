"""Graph-expanded retrieval over the memory graph (seed 001 §5.2, §12.3): vector seeds, BFS, scoring.

1. **Seeds.** The query vector is compared (cosine) with every canonical node
   that has a vector (topics and objects); a node whose label is not embedded
   yet takes the vector a read passes for it (``label_vectors``: the driver
   encodes those labels for the read, recording nothing; :func:`unembedded`
   says which). The ``seed_nodes`` most similar
   nodes at or above ``seed_min_similarity`` seed the search; every active
   memory containing one is a seed memory at distance 0.
2. **Expansion.** BFS over memories to ``depth`` (0 = seeds only, at most
   ``max_depth``). Two memories are one hop apart when a linked edge joins them
   (a node endpoint stands for every memory containing that node), or when they
   share a topic/object node (a ``shared_node`` hop; subjects and attribute keys
   are hubs every memory shares, so they are not hops). Hops are undirected:
   "why" walks from an effect back to its cause. With ``relation_filter``, a
   linked hop is taken only if its edge type or relation name is in the filter,
   a shared-node hop only if ``"shared_node"`` is. Only active memories are
   walked; type and time filters select among the reached memories without
   cutting paths. Ties are broken by memory id, so paths are deterministic.
3. **Score** of each reached memory::

       score = α·semantic + β·importance + γ·1/(1 + distance) + δ·e^(−age/τ) + ε·access

   ``semantic`` is the memory's best node cosine with the query (clipped at 0);
   ``distance`` is the BFS hop count (0 for seeds, so seeds get the full γ; the
   seed's 1/distance is undefined at 0); ``age`` is days since creation at
   ``now``; ``access`` = min(1, ln(1 + access count) / ln(1 + access_saturation)).

Modes (:func:`expansion_depth`): ``fast`` never expands, ``deep`` expands to
``expand_depth``, ``auto`` expands when :func:`needs_expansion` says so (causal
or relational cues in English or Chinese, or a best seed similarity below
``low_similarity``). Every hit keeps its provenance: source turn and message ids.
"""

from __future__ import annotations

import math
import re
from collections import deque
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

import numpy as np

from events.errors import InvalidInputError
from projections.folds.graph import GraphMemory, GraphState, GraphView
from projections.queries.graph_terms import LabelIndex

SHARED_NODE = "shared_node"
TERMS = ("semantic", "importance", "graph", "time_decay", "access")


@dataclass(frozen=True, slots=True)
class GraphSearchConfig:
    alpha: float = 0.4  # semantic similarity
    beta: float = 0.2  # importance
    gamma: float = 0.2  # graph proximity
    delta: float = 0.1  # time decay
    epsilon: float = 0.1  # access frequency
    decay_tau_days: float = 30.0
    low_similarity: float = 0.7  # seed §12.3.2: top-1 similarity below this → expand in auto mode
    expand_depth: int = 1
    max_depth: int = 2
    seed_nodes: int = 50  # seed §5.2: top-50 similar nodes
    seed_min_similarity: float = 0.3
    access_saturation: int = 10
    shared_node_types: tuple[str, ...] = ("topic", "object")
    max_shared_fanout: int = 50  # a node shared by more memories is a hub ("go", "have"): no hops through it
    lexical_seed_min: float = 0.5  # a memory whose labels cover this share of the query's words is a seed; 0: off

    def __post_init__(self) -> None:
        checks = [
            ("alpha", min(self.weights) >= 0 and sum(self.weights) > 0, "non-negative weights, not all zero"),
            ("decay_tau_days", self.decay_tau_days > 0, "a positive number of days"),
            ("expand_depth", 0 <= self.expand_depth <= self.max_depth, "0 <= expand_depth <= max_depth"),
            ("seed_nodes", self.seed_nodes >= 1, "at least 1"),
            ("access_saturation", self.access_saturation >= 1, "at least 1 access"),
        ]
        problems = [(name, f"{getattr(self, name)!r}: use {want}") for name, ok, want in checks if not ok]
        if problems:
            raise InvalidInputError(problems, what="graph search config")

    @property
    def weights(self) -> tuple[float, float, float, float, float]:
        return (self.alpha, self.beta, self.gamma, self.delta, self.epsilon)


DEFAULT_GRAPH_SEARCH = GraphSearchConfig()

_EN_CUES = re.compile(
    r"\b(why|because|cause[sd]?|causing|reasons?|due to|leads? to|led to|result(?:ed|s)? in|so that|"
    r"relat(?:ed|es|ing) to|relationship|connected (?:to|with)|linked (?:to|with)|associated with|has to do with)\b",
    re.IGNORECASE,
)
_ZH_CUES = ("为什么", "为何", "为啥", "因为", "所以", "原因", "导致", "由于", "有关", "关于", "相关", "联系", "关系")


def needs_expansion(query: str, top_similarity: float | None, config: GraphSearchConfig = DEFAULT_GRAPH_SEARCH) -> bool:
    """True for causal or relational questions ("why", "related to", "为什么", "和…有关") or weak vector seeds."""
    if _EN_CUES.search(query) or any(cue in query for cue in _ZH_CUES):
        return True
    return top_similarity is None or top_similarity < config.low_similarity


def expansion_depth(mode: str, query: str, top_similarity: float | None,
                    config: GraphSearchConfig = DEFAULT_GRAPH_SEARCH, expand_depth: int | None = None) -> int:
    """The BFS depth for ``mode``: fast → 0, deep → ``expand_depth``, auto → ``expand_depth`` if it needs expansion.

    ``expand_depth`` defaults to the config's.
    """
    depth = config.expand_depth if expand_depth is None else expand_depth
    if mode == "fast":
        return 0
    if mode == "deep":
        return depth
    if mode == "auto":
        return depth if needs_expansion(query, top_similarity, config) else 0
    raise InvalidInputError([("mode", f"{mode!r}: use 'fast', 'deep' or 'auto'")], what="graph search")


@dataclass(frozen=True, slots=True)
class GraphHit:
    """One memory found, its score and the numbers behind it, how it was reached, and where it came from."""

    memory_id: str
    score: float
    terms: dict[str, float]  # raw values of the five terms
    contributions: dict[str, float]  # weight × value; they sum to ``score``
    distance: int
    path: tuple[str, ...]  # memory ids from a seed to this memory
    via: tuple[str, ...]  # one "<edge type>:<relation>" per hop
    memory_type: str
    summary: str
    turn_ids: tuple[str, ...]
    message_ids: tuple[str, ...]


LabelVectors = Mapping[str, np.ndarray]  # label → its vector, for the labels not embedded yet


def unembedded(state: GraphState) -> dict[str, tuple[str, ...]]:
    """The canonical topic/object nodes with no vector yet: node id → the labels whose recorded vector it would
    take, its own first (as the merged view picks one). Cached until the structure changes (an embedding does)."""
    cached = state._views.get("unembedded")
    if cached is None or cached[0] != state.structure:
        view = state.view()
        out = {nid: (n.label, *(state.nodes[r].label for r in n.merged_ids)) for nid, n in view.nodes.items()
               if n.vector is None and n.node_type in ("topic", "object")}
        cached = state._views["unembedded"] = (state.structure, out)
    return cached[1]


def _cosines(state: GraphState, query: np.ndarray, label_vectors: LabelVectors | None = None) -> dict[str, float]:
    """Cosine of the query with every canonical node that has a vector of the query's size (one matrix product),
    and with each node not embedded yet whose label ``label_vectors`` holds."""
    q = np.asarray(query, dtype=np.float32).ravel()
    qn = np.linalg.norm(q)
    ids, matrix = state.node_matrix(q.shape[0])
    if qn == 0:
        return {}
    sims = dict(zip(ids, (matrix @ (q / qn)).tolist())) if ids else {}
    for nid, labels in (unembedded(state).items() if label_vectors else ()):
        vector = next((label_vectors[x] for x in labels if x in label_vectors), None)
        if vector is not None and vector.shape == q.shape:
            v = np.asarray(vector, dtype=np.float32)
            norm = np.linalg.norm(v)
            sims[nid] = float((v / norm) @ (q / qn)) if norm > 0 else 0.0
    return sims


def top_similarity(state: GraphState, query_vector: np.ndarray, label_vectors: LabelVectors | None = None
                   ) -> float | None:
    """The best node cosine with the query (None when no node has a comparable vector): auto mode's signal."""
    sims = _cosines(state, query_vector, label_vectors)
    return max(sims.values()) if sims else None


def _links(view: GraphView, active: set[str], relation_filter: Collection[str] | None) -> dict[str, list[tuple[str, str]]]:
    links: dict[str, list[tuple[str, str]]] = {}
    names: dict[tuple[str, str], str] = {}  # one string per relation, shared by every hop (10k memories: 240k hops)
    for e in view.edges:
        if e.origin != "linked" or (relation_filter is not None and not {e.edge_type, e.relation} & set(relation_filter)):
            continue
        ends = [{eid} if kind == "memory" else set(view.nodes[eid].memory_ids)
                for kind, eid in ((e.source_kind, e.source_id), (e.target_kind, e.target_id))]
        name = names.get((e.edge_type, e.relation))
        if name is None:
            name = names[(e.edge_type, e.relation)] = f"{e.edge_type}:{e.relation}"
        for a in ends[0] & active:
            for b in ends[1] & active:
                if a != b:
                    links.setdefault(a, []).append((b, name))
                    links.setdefault(b, []).append((a, name))
    return links


Reached = dict[str, tuple[int, tuple[str, ...], tuple[str, ...]]]  # memory → (distance, path, via)


def expand(state: GraphState, seeds: Sequence[str], depth: int, *, relation_filter: Collection[str] | None = None,
           shared: bool = True, config: GraphSearchConfig = DEFAULT_GRAPH_SEARCH) -> Reached:
    """BFS from ``seeds`` (active memory ids, in priority order) to ``depth`` hops over linked edges and, with
    ``shared``, shared topic/object nodes (hubs over ``max_shared_fanout`` excluded); seeds are at distance 0."""
    view = state.view()
    key = ("links", None if relation_filter is None else frozenset(relation_filter))
    cached = state._views.get(key)  # derived like the view: rebuilt only when the structure changed
    if cached is None or cached[0] != state.structure:
        active = {mid for mid, m in state.memories.items() if m.status == "active"}
        cached = state._views[key] = (state.structure, _links(view, active, relation_filter))
    links = cached[1]
    found: Reached = {}
    queue = deque()
    for mid in seeds:
        if mid not in found:
            found[mid] = (0, (mid,), ())
            queue.append(mid)
    while queue:
        mid = queue.popleft()
        dist, path, via = found[mid]
        if dist >= depth:
            continue
        hops = list(links.get(mid, ()))
        if shared:
            for nid in view.memory_nodes[mid]:
                node = view.nodes[nid]
                if node.node_type in config.shared_node_types and len(node.memory_ids) <= config.max_shared_fanout:
                    hops += [(other, f"{SHARED_NODE}:{node.label}") for other in node.memory_ids
                             if state.memories[other].status == "active"]
        for other, label in sorted(hops):
            if other not in found:
                found[other] = (dist + 1, (*path, other), (*via, label))
                queue.append(other)
    return found


def search_graph(
    state: GraphState,
    query_vector: np.ndarray,
    *,
    now: datetime,
    query: str | None = None,
    depth: int = 1,
    relation_filter: Collection[str] | None = None,
    memory_types: Collection[str] | None = None,
    time_range: tuple[datetime | None, datetime | None] | None = None,
    max_results: int = 10,
    config: GraphSearchConfig = DEFAULT_GRAPH_SEARCH,
    label_vectors: LabelVectors | None = None,
) -> list[GraphHit]:
    """The best ``max_results`` active memories by the module's score, best first (ties: distance, memory id);
    ``label_vectors`` stand in for the vectors of labels not embedded yet (:func:`unembedded`)."""
    if now.tzinfo is None:
        raise ValueError("now must be timezone-aware (e.g. datetime.now(UTC)); naive times are ambiguous")
    if not 0 <= depth <= config.max_depth:
        raise InvalidInputError([("depth", f"{depth!r}: use 0 to {config.max_depth}")], what="graph search")
    view = state.view()
    active = {mid for mid, m in state.memories.items() if m.status == "active"}
    sims = _cosines(state, query_vector, label_vectors)
    seeds = sorted(((s, nid) for nid, s in sims.items() if s >= config.seed_min_similarity), reverse=True)
    seed_ids = {mid for _, nid in seeds[: config.seed_nodes] for mid in view.nodes[nid].memory_ids} & active
    semantic = {mid: max([0.0, *(sims.get(n, 0.0) for n in view.memory_nodes[mid])]) for mid in active}
    if query and config.lexical_seed_min > 0:
        index = state._views.setdefault("labels", LabelIndex()).sync(state.memories)
        for mid, value in index.scores(query, active).items():
            semantic[mid] = max(semantic[mid], value)
            if value >= config.lexical_seed_min:
                seed_ids.add(mid)

    shared = relation_filter is None or SHARED_NODE in relation_filter
    order = sorted(seed_ids, key=lambda m: (-semantic[m], m))
    found = expand(state, order, depth, relation_filter=relation_filter, shared=shared, config=config)

    hits = []
    for mid, (dist, path, via) in found.items():
        m = state.memories[mid]
        if not _selected(m, memory_types, time_range):
            continue
        terms = dict(zip(TERMS, _terms(m, semantic[mid], dist, now, config), strict=True))
        contributions = {k: w * terms[k] for k, w in zip(TERMS, config.weights, strict=True)}
        hits.append(GraphHit(mid, sum(contributions.values()), terms, contributions, dist, path, via, m.memory_type,
                             " ".join(x for x in (m.subject, m.topic, m.object) if x), m.source_turn_ids,
                             m.source_message_ids))
    hits.sort(key=lambda h: (-h.score, h.distance, h.memory_id))
    return hits[:max_results]


def _selected(m: GraphMemory, memory_types: Collection[str] | None,
              time_range: tuple[datetime | None, datetime | None] | None) -> bool:
    if memory_types is not None and m.memory_type not in memory_types:
        return False
    start, end = time_range or (None, None)
    return (start is None or m.created_at >= start) and (end is None or m.created_at <= end)


def _terms(m: GraphMemory, semantic: float, distance: int, now: datetime, config: GraphSearchConfig) -> tuple:
    age_days = max(0.0, (now - m.created_at).total_seconds() / 86_400.0)
    access = min(1.0, math.log1p(m.access_count) / math.log1p(config.access_saturation))
    return (semantic, m.importance, 1.0 / (1 + distance), math.exp(-age_days / config.decay_tau_days), access)


def search(state: GraphState, query: str, query_vector: np.ndarray, *, now: datetime, mode: str = "auto",
           config: GraphSearchConfig = DEFAULT_GRAPH_SEARCH, expand_depth: int | None = None,
           label_vectors: LabelVectors | None = None, **filters) -> tuple[int, list[GraphHit]]:
    """Pick the depth for ``mode`` (fast / deep / auto), then :func:`search_graph`; returns (depth used, hits)."""
    depth = expansion_depth(mode, query, top_similarity(state, query_vector, label_vectors), config, expand_depth)
    return depth, search_graph(state, query_vector, now=now, query=query, depth=depth, config=config,
                               label_vectors=label_vectors, **filters)
