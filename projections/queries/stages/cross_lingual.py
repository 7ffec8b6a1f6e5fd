"""A turn in another language than the question's is credited with the word evidence its meaning implies.

BM25 over a turn, its derived keys and its notes, and over whole
conversations, cannot match an English question to a Chinese turn (or the
reverse) unless they share a name: for such a turn those lists are missing
evidence, not evidence against it. Fused as they are, every same-language
turn the word lists reach outranks it, however near the encoder puts it.

This stage, after the conversations' term, gives a turn whose main script
differs from the question's (:func:`~projections.queries.rerank.other_script`)
the word evidence its language-blind lists (dense, episodes) imply: their
terms scaled up to the weight of all the lists and the conversation term, less
what the word lists gave it (``cross_lingual_term`` in the breakdown, when
positive). The learned ranker then leaves such a turn at its fused place
(:func:`~projections.queries.ranker.rerank_rows`). A search whose question
and turns share one script is unchanged. On by default for a multilingual
encoder (:mod:`projections.queries.encoder_fusion`): with one that cannot read
the other language, the blind lists would be guessing.
"""

from __future__ import annotations

from projections.queries import rerank
from projections.queries.scoring import Scoring, Stage

BLIND = ("dense", "episode")  # the lists that read a text's meaning, whatever its language


def apply(s: Scoring) -> None:
    k = s.config.rrf_k
    blind = [(t.weight, t.rank_key) for t in s.terms if t.kind in BLIND and t.weight > 0]
    lexical = [(t.weight, t.rank_key) for t in s.terms if t.kind not in BLIND and t.weight > 0]
    seen = sum(w for w, _ in blind)
    if not blind or not lexical:
        return
    words = sum(w for w, _ in lexical) + s.config.conversation_weight  # the evidence that reads words
    other = rerank.other_script(s.memory, s.query, [row[2] for row in s.rows])
    for row, foreign in zip(s.rows, other):
        if not foreign:
            continue
        b = row[3]
        read = sum(w / (k + b[key]) for w, key in blind if key in b)
        given = sum(w / (k + b[key]) for w, key in lexical if key in b) + b.get("conversation_term", 0.0)
        if (added := read * words / seen - given) > 0:
            row[0] += added
            b["cross_lingual_term"] = added


STAGE = Stage("cross_lingual", lambda s: s.config.cross_lingual, apply, off={"cross_lingual": False},
              leaves_unsorted=True)
