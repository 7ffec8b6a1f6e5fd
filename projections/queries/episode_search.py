"""Episodes as retrievable units: rank a user's episodes for a query, with provenance to their turns.

Two lists fused by the same weighted reciprocal-rank rule as message search:
episodes by the cosine of their centroid to the query vector, and episodes
by the best BM25 rank any of their members reaches. An episode is returned
with its boundary reason, its span, its turns and its extractive summary.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from projections.folds.episodes import Episode
from projections.folds.state import UserMemory
from projections.queries.candidates import ranked_episodes
from projections.queries.retrieval import DEFAULT_FUSION, FusionConfig


@dataclass(frozen=True, slots=True)
class EpisodeHit:
    episode: Episode
    rank: int
    score: float
    breakdown: dict


def search_episodes(
    memory: UserMemory, query: str, query_vector: np.ndarray, k: int, config: FusionConfig = DEFAULT_FUSION
) -> list[EpisodeHit]:
    """The ``k`` episodes that best match ``query``, best first (ties: earlier episode first)."""
    episodes = {e.episode_id: e for e in memory.episodes.episodes()}
    if not episodes or k < 1:
        return []
    parts: dict[str, dict] = {}
    for rank, (episode, sim) in enumerate(ranked_episodes(memory, query_vector, len(episodes)), start=1):
        parts.setdefault(episode.episode_id, {})["dense"] = (rank, sim)
    membership = memory.episodes.membership()
    lexical_rank = 0
    for memory_id, bm25 in memory.lexical.search(query, config.candidates, config.bm25):
        episode_id = membership.get(memory_id)
        if episode_id is None or "lexical" in parts.get(episode_id, {}):
            continue
        lexical_rank += 1
        parts.setdefault(episode_id, {})["lexical"] = (lexical_rank, bm25, memory_id)

    order = {episode_id: i for i, episode_id in enumerate(episodes)}
    scored = []
    for episode_id, p in parts.items():
        score, breakdown = 0.0, {}
        if "dense" in p:
            rank, sim = p["dense"]
            score += config.dense_weight / (config.rrf_k + rank)
            breakdown.update(centroid_rank=rank, centroid_similarity=round(sim, 6))
        if "lexical" in p:
            rank, bm25, memory_id = p["lexical"]
            score += config.lexical_weight / (config.rrf_k + rank)
            breakdown.update(lexical_rank=rank, best_bm25=round(bm25, 6), best_member=memory_id)
        breakdown["rrf"] = round(score, 8)
        scored.append((score, order[episode_id], episode_id, breakdown))
    scored.sort(key=lambda s: (-s[0], s[1]))
    return [
        EpisodeHit(episodes[episode_id], rank, score, breakdown)
        for rank, (score, _, episode_id, breakdown) in enumerate(scored[:k], start=1)
    ]
