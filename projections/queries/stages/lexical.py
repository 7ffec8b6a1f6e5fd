"""The lexical lists: BM25 over each turn's text, and over the turn's derived keys (:mod:`key_index`).

The lexical weight goes to one list (``retrieval.lexical_key``): the turn's
text, or in its place its fact-augmented document (English queries,
``fact_key``) or its jieba sub-words (Chinese queries, ``cjk_subwords``).
The derived keys with a weight of their own (facts, the turn with its
neighbours ``context``, sub-words) are lists beside it.
"""

from __future__ import annotations

from projections.queries import key_index
from projections.queries.scoring import ListStage, Scoring, Term


def gather(s: Scoring) -> None:
    config, memory = s.config, s.memory
    if s.primary == "lexical":
        s.add("lexical", memory.lexical.search(s.query, config.candidates, config.bm25))
    s.terms.append(Term("lexical", s.weights["lexical"], "lexical_rank", "bm25"))
    for kind in key_index.KINDS:
        weight = s.weights.get(kind, 0.0)
        if weight > 0:
            limit = config.context_candidates if kind.startswith("context") else config.candidates
            s.add(kind, key_index.search(memory, kind, s.query, limit, config.bm25))
            s.terms.append(Term(kind, weight, f"{kind}_rank", f"{kind}_bm25"))


STAGE = ListStage("lexical", gather, off={"lexical_weight": 0.0, "cjk_lexical_weight": 0.0, "fact_weight": 0.0,
                                          "context_weight": 0.0, "subword_weight": 0.0})
