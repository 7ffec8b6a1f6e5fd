"""The dense list: the neighbours of the query's vector among the stored turns (LanceDB, in the shard).

Weighted ``dense_weight`` (a Chinese query: ``cjk_dense_weight`` when set; :func:`retrieval.list_weights`)."""

from __future__ import annotations

from projections.queries.scoring import ListStage, Scoring, Term


def gather(s: Scoring) -> None:
    s.add("dense", s.dense)
    s.terms.append(Term("dense", s.weights["dense"], "dense_rank", "dense_similarity"))


STAGE = ListStage("dense", gather, off={"dense_weight": 0.0, "cjk_dense_weight": 0.0})
