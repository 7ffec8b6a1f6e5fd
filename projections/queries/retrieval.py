"""Hybrid retrieval: dense and lexical candidates fused by weighted reciprocal rank.

Pure given its inputs: the shard passes in the dense neighbours it got from
LanceDB and the user's projections; this module fuses, explains and attaches
provenance.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

import numpy as np

from projections.folds.lexical import BM25Params
from projections.folds.policy import RetentionPolicy
from projections.folds.state import UserMemory
from projections.queries import candidates, graph_search, list_expand, rerank, stages
from projections.queries.learned import adjusted, hidden
from projections.queries.ranker import RankerModel
from projections.queries.ranker_model import MODEL as ENGLISH_RANKER
from projections.queries.ranker_model_cjk import MODEL as CHINESE_RANKER
from projections.queries.results import Hit
from projections.queries.scoring import Scoring, fuse_lists, run
from projections.rules.query_focus import focus
from projections.rules.text import has_cjk


@dataclass(frozen=True, slots=True)
class FusionConfig:
    """Named, frozen retrieval parameters; pass another instance to re-rank with other weights.

    With ``fact_key`` the lexical list ranks each turn by its fact-augmented
    document (English queries), with ``cjk_subwords`` by jieba sub-words
    (Chinese ones), and ``context_weight`` adds a list of the turn with its
    neighbours (:mod:`projections.queries.key_index`; all on by default).
    Defaults: a small RRF constant (5, not the classic 60) lets the top few
    ranks of each list dominate, and BM25 weighs slightly more than the
    dense list (1.3) because MiniLM is weak on names and rare words. With the
    Anserini BM25 defaults (k1 0.9, b 0.4) this measured recall@10 0.679 vs
    0.574 for plain RRF(k=60) on the LoCoMo dev file (benchmarks/). Episodes
    add a third list: the user's episodes ranked by centroid cosine to the
    query; every member of the top ``episode_candidates`` gets
    ``episode_weight / (rrf_k + episode rank)``, a topical prior that lifts
    turns of the conversation stretch the question is about (0.679 → 0.695
    recall@10 on the same file). ``episode_weight=0`` turns episodes off.
    Retention adds ``retention_weight · min(R, 2) / (rrf_k + 1)``, R being
    the memory's retention at the query time under the shard's policy: among
    equally relevant memories the reinforced and recent one wins, while a
    strong textual match still outranks it. ``retention_weight=0`` turns it off.
    Notes are retrieval keys (LongMemEval's fact-augmented keys): the active
    notes ranked by BM25 against the query lift their source turns by
    ``note_weight / (rrf_k + note rank)``; a context puts the matching notes
    first, within ``note_tokens``. ``note_weight=0, note_tokens=0`` turns notes off.
    The memory graph adds a fifth term, computed last: the graph memories
    read from the best ``graph_seeds`` hits seed a BFS over linked edges
    (``graph_depth`` hops; ``graph_shared_nodes`` also hops through shared
    topic/object nodes; ``graph_mode`` fast never expands, auto expands for
    causal/relational cues or a best dense similarity under the graph
    config's ``low_similarity``), and the candidates it reaches, ranked by
    their score so far, get ``graph_weight / (rrf_k + rank)``: the turns of
    a multi-hop answer are linked in the graph. ``graph_weight=0`` turns it off.
    Then the stages of :mod:`projections.queries.rerank` (neighbour turns,
    sessions, named speakers, time intent, clauses of a compound question,
    the best-matching conversation as one BM25 document:
    :mod:`projections.queries.session_docs`),
    and last the learned ranking stage (:mod:`projections.queries.ranker`),
    which re-orders the best ``ranker_depth`` rows. A Chinese query weighs
    the dense list by ``cjk_dense_weight`` (MiniLM is English-only). Each
    stage is one module of :mod:`projections.queries.stages`, which names the
    fields that switch it off (its ablation: ``stages.without(config, name)``);
    the defaults were chosen leave-conversations-out on the three dev files
    (``python -m benchmarks.locomo``, the variants of :mod:`benchmarks.variants`).
    """

    rrf_k: int = 5
    dense_weight: float = 1.0
    # The packaged encoder (all-MiniLM-L6-v2) is English-only: a query written in Chinese weighs its dense list
    # by this instead of dense_weight (None: dense_weight for every language).
    cjk_dense_weight: float | None = 0.25
    lexical_weight: float = 1.3
    episode_weight: float = 0.5  # members of the episodes nearest the query get a third RRF term
    episode_candidates: int = 5
    retention_weight: float = 0.1  # R at the query time, as a fraction of a rank-1 RRF term (a tie-breaker)
    note_weight: float = 0.5  # source turns of the active notes that match the query get a fourth RRF term
    note_candidates: int = 10
    # A context reads the notes of the best note_depth hits (context.assemble: where they leave room for the turns
    # of better hits): notes of the hits past the turns a budget shows carry their turns in fewer tokens
    note_depth: int = 50
    note_tokens: int = 500  # the notes' share of a context (seed 000: under ~500 tokens); 0 leaves notes out
    note_share: float = 0.5  # and at most this share of its budget (context.assemble)
    # A context leaves out a turn its notes state only when they carry at least this share of its content terms
    # (projections.queries.note_coverage); above 1.0 every turn stays beside its notes.
    note_coverage: float = 1.0
    graph_weight: float = 0.5  # candidates the graph reaches from the best hits: a fifth term
    graph_seeds: int = 5  # the best hits whose graph memories seed the expansion
    graph_candidates: int = 100  # at most this many reached turns get the term
    graph_mode: str = "auto"  # fast: no expansion; deep: expand to graph_depth; auto: expand when it helps
    graph_depth: int = 1
    graph_shared_nodes: bool = False  # also hop through shared topic/object nodes, not only linked edges
    graph_config: graph_search.GraphSearchConfig = graph_search.DEFAULT_GRAPH_SEARCH  # seeds, hops, five-term score
    # Stages after the fusion (projections.queries.rerank; weight 0: off), chosen leave-conversations-out (benchmarks/)
    # a turn in another language than the question's gets the word evidence its dense and episode ranks imply,
    # and the ranker leaves it at its fused place (projections.queries.stages.cross_lingual); on for a
    # multilingual encoder (encoder_fusion)
    cross_lingual: bool = False
    neighbour_weight: float = 0.2  # a top row's previous and next turn get this share of its score
    neighbour_top: int = 20  # the best rows whose neighbours are lifted
    session_weight: float = 0.0  # members of the best-scoring conversations (sessions) get an RRF term
    session_candidates: int = 3
    # whole conversations ranked by BM25 as one document each (projections.queries.session_docs): their members
    # get an RRF term, scaled by min(1, conversation_fit / length) so a long conversation is not lifted wholesale
    conversation_weight: float = 1.0
    conversation_candidates: int = 1
    conversation_fit: int = 10
    speaker_weight: float = 0.3  # turns of the speakers a question names (when it names some, not all)
    time_weight: float = 0.3  # turns that state a resolved time, for "when" questions
    clause_weight: float = 0.5  # each clause of a compound question ranks the turns by BM25 on its own
    # The learned stage (projections.queries.ranker): ``ranker`` fitted on English dev chats, ``cjk_ranker`` on
    # Chinese ones (a Chinese query uses it, or ``ranker`` with ranker_cjk, or none). None turns either off.
    ranker: RankerModel | None = ENGLISH_RANKER
    ranker_depth: int = 25  # how many of the best rows it re-orders
    cjk_ranker_depth: int | None = None  # a Chinese query's ranker re-orders at most this many (None: ranker_depth)
    ranker_cjk: bool = False
    cjk_ranker: RankerModel | None = CHINESE_RANKER
    candidates: int = 100
    # The learning loop (projections.queries.learned): the dispatcher's adjustments (invalidated memories and
    # notes leave default retrieval, penalties scale scores) and the Molt policy (False: palimpsest_no_feedback).
    # Each part can be switched off alone: feedback_adjustments (penalties, invalidations), feedback_policy (Molt).
    feedback: bool = True
    feedback_adjustments: bool = True
    feedback_policy: bool = True
    # Supersession (projections.queries.stages.supersession): a turn whose notes a later statement superseded is
    # multiplied by this and labelled, and the turns of the version in force take its place. 1.0 turns it off.
    supersession_factor: float = 0.5
    # Coverage-aware selection (projections.queries.coverage), last: the best coverage_depth rows re-ordered by MMR
    # over their non-query terms, so list questions get one turn per item. 0 turns it off.
    coverage_weight: float = 0.0
    coverage_depth: int = 30
    coverage_mode: str = "terms"  # redundancy by shared non-query terms, or "dense": cosine of the stored vectors
    coverage_lists_only: bool = False  # only for questions that ask for several items (coverage.list_intent)
    # Pseudo-relevance feedback over the stored turn vectors (projections.queries.prf): the query vector moved
    # toward the best prf_seeds rows ranks every turn; the best prf_candidates get an RRF term. 0 turns it off.
    prf_weight: float = 0.0
    prf_seeds: int = 3
    prf_candidates: int = 20
    prf_beta: float = 1.0
    prf_lists_only: bool = False  # only for questions that ask for several items (coverage.list_intent)
    list_expansion: list_expand.ListExpandConfig = list_expand.DEFAULT  # a second pass for list questions
    # Derived lexical keys of each turn (projections.queries.key_index). The turn's lexical key: fact_key (English
    # queries, or every query with fact_cjk) ranks the turns by their fact-augmented document (the turn + its
    # notes, graph words, spelled dates) and cjk_subwords (Chinese queries) by jieba search-mode sub-words, in place
    # of the turn's own text: the lexical_weight moves to that list, the plain search is not run, and the ranker
    # reads that list's ranks (retrieval.lexical_key). Separate lists with their own weight (0: off): facts,
    # context (the turn + its neighbour turns; context_window "both" or "prev"), subwords.
    fact_key: bool = True
    cjk_subwords: bool = True
    query_focus: bool = True  # the fusion reads a query's text from its pivot on (projections.rules.query_focus)
    fact_weight: float = 0.0
    fact_cjk: bool = False  # Chinese queries skip the fact key and list unless set (measured: they lose on MemDaily)
    context_weight: float = 0.5
    context_window: str = "both"
    context_candidates: int = 30  # how many turns the context list ranks (fewer: fewer new rows to score)
    subword_weight: float = 0.0
    # A Chinese query weighs the (jieba word) lexical list by this instead of lexical_weight (None: the same).
    cjk_lexical_weight: float | None = None
    bm25: BM25Params = field(default_factory=lambda: BM25Params(k1=0.9, b=0.4))


DEFAULT_FUSION = FusionConfig()
# The breakdown figures a hit shows rounded (fuse keeps them exact until then); rank features read them so too.
ROUNDED = {"dense_similarity": 6, "bm25": 6, "facts_bm25": 6, "context_bm25": 6, "context_prev_bm25": 6,
           "subwords_bm25": 6, "episode_similarity": 6, "note_bm25": 6, "retention": 6, "rrf": 8}


def list_weights(config: FusionConfig, query: str) -> dict[str, float]:
    """The weight of each ranked list for ``query``: dense, lexical and the derived keys (0: not fused)."""
    cjk = has_cjk(query)
    dense = config.dense_weight if not cjk or config.cjk_dense_weight is None else config.cjk_dense_weight
    lexical = config.lexical_weight if not cjk or config.cjk_lexical_weight is None else config.cjk_lexical_weight
    facts_apply = config.fact_cjk or not cjk
    weights = {"dense": dense, "lexical": lexical, "facts": config.fact_weight if facts_apply else 0.0,
               "subwords": config.subword_weight if cjk else 0.0}
    if config.context_window not in ("both", "prev"):
        raise ValueError(f"FusionConfig.context_window {config.context_window!r}: use 'both' or 'prev'")
    weights["context" if config.context_window == "both" else "context_prev"] = config.context_weight
    if cjk and config.cjk_subwords:
        weights["subwords"], weights["lexical"] = weights["subwords"] + lexical, 0.0
    elif facts_apply and config.fact_key:
        weights["facts"], weights["lexical"] = weights["facts"] + lexical, 0.0
    return weights


def lexical_key(config: FusionConfig, query: str) -> str:
    """The list carrying the lexical weight: ``lexical`` (the turn's text), or a derived key in its place."""
    cjk = has_cjk(query)
    if cjk and config.cjk_subwords:
        return "subwords"
    if (config.fact_cjk or not cjk) and config.fact_key:
        return "facts"
    return "lexical"


def fuse(
    memory: UserMemory,
    query: str,
    dense: list[tuple[str, float]],
    k: int,
    config: FusionConfig = DEFAULT_FUSION,
    query_vector: np.ndarray | None = None,
    *,
    now: datetime | None = None,
    policy: RetentionPolicy | None = None,
    scope: str = "active",
) -> list[Hit]:
    """Top-``k`` hits: the stages of :mod:`projections.queries.stages` run in order over one search.

    The ranked lists (dense neighbours, BM25 over the turns and their derived
    keys, episodes, notes) are fused by weighted reciprocal rank with the
    retention term; then each stage after the fusion adds its term or
    re-orders. ``scope`` picks the memories searched: ``active`` (not
    archived, the default), ``archive`` (archived only) or ``all``. ``now`` is
    when the question is asked: memories recorded after it are left out (time
    travel), and with ``policy`` the retention term at ``now`` joins the score
    (see :class:`FusionConfig`). The archive is read as it stands.
    """
    s = scored(memory, query, dense, config, query_vector, now=now, policy=policy, scope=scope)
    return [_hit(memory, rank, row) for rank, row in enumerate(s.rows[:k], start=1)]


def scored(
    memory: UserMemory,
    query: str,
    dense: list[tuple[str, float]],
    config: FusionConfig = DEFAULT_FUSION,
    query_vector: np.ndarray | None = None,
    *,
    now: datetime | None = None,
    policy: RetentionPolicy | None = None,
    scope: str = "active",
    before: str | None = None,
) -> Scoring:
    """The scoring state :func:`fuse` ranks from (its ``rows``, best first), after every stage, or with ``before``
    (a stage's name, :data:`projections.queries.stages.STAGES`) after the stages ahead of that one only: the
    rows and query the learned ranker reads (``before="ranker"``), as ``benchmarks.train_ranker`` fits it on."""
    if config.query_focus:
        query = focus(query)  # the dense list keeps the whole query's vector
    s = Scoring(memory, query, config, query_vector, dense, now, policy, scope, primary=lexical_key(config, query),
                weights=list_weights(config, query),
                learn=adjusted(config) and scope == "active" and bool(memory.adjustments.by_target))
    for stage in stages.LISTS:
        if not stage.after_scope:
            stage.gather(s)
    # an index row the projections do not know yet is never surfaced; archived ones only when asked for; with
    # ``now`` (time travel), nothing recorded after it; memories the learning loop invalidated are out of default
    # retrieval too
    tables = rerank.TABLES.get(memory)
    s.allowed = candidates.scope_filter(memory, scope, now, tables.times,
                                        (lambda mid: hidden(memory, mid, now)) if s.learn else None, tables.newest)
    s.parts = {mid: p for mid, p in s.parts.items() if s.allowed(mid)}
    for stage in stages.LISTS:
        if stage.after_scope:
            stage.gather(s)
    fuse_lists(s)
    run(s, stages.STAGES if before is None else stages.STAGES[:[t.name for t in stages.STAGES].index(before)])
    return s


def _hit(memory: UserMemory, rank: int, row: list) -> Hit:
    """A scored row as a hit: its figures rounded (:data:`ROUNDED`), its message and provenance."""
    score, _, memory_id, breakdown = row
    for key, digits in ROUNDED.items():
        if key in breakdown:
            breakdown[key] = round(breakdown[key], digits)
    msg = memory.messages.by_id[memory_id]
    vec = memory.vectors.rows.get(memory_id)
    event_ids = [memory_id] + ([vec.event_id] if vec else [])
    return Hit(
        memory_id=memory_id,
        rank=rank,
        score=score,
        text=msg.text,
        speaker=msg.speaker,
        role=msg.role,
        occurred_at=msg.occurred_at,
        conversation_id=msg.conversation_id,
        turn_id=msg.turn_id,
        breakdown=breakdown,
        provenance={
            "event_ids": event_ids,
            "seq": msg.seq,
            "conversation_id": msg.conversation_id,
            "turn_id": msg.turn_id,
            "client_message_id": msg.client_message_id,
        },
    )
