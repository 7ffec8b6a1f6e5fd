"""The episodes list: the user's episodes ranked by centroid cosine to the query; every member of the best
``episode_candidates`` gets ``episode_weight / (rrf_k + episode rank)``, a topical prior for the stretch of
conversation a question is about."""

from __future__ import annotations

from projections.queries import candidates
from projections.queries.scoring import ListStage, Scoring, Term


def gather(s: Scoring) -> None:
    config = s.config
    if config.episode_weight > 0 and s.query_vector is not None:
        parts = s.parts
        ranked = candidates.ranked_episodes(s.memory, s.query_vector, config.episode_candidates)
        for rank, (episode, similarity) in enumerate(ranked, start=1):
            for member in episode.members:
                parts.setdefault(member.event_id, {}).setdefault("episode", (rank, similarity, episode.episode_id))
    s.terms.append(Term("episode", config.episode_weight, "episode_rank", "episode_similarity", "episode_id"))


STAGE = ListStage("episodes", gather, off={"episode_weight": 0.0})
