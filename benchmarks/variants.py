"""Named fusion configurations the benchmark and the lab compare: the default, the one before the
generalisation work, and the default with one stage switched off (an ablation per stage).

Leave-conversations-out reporting (:mod:`benchmarks.leaveout`) chooses among
the ``palimpsest*`` configurations on other samples. ``EXPERIMENTS`` are the
lab's grid (``python -m benchmarks.lab --variants ...``): each is the
configuration before this work plus the stages named.
"""

from __future__ import annotations

from dataclasses import replace

from benchmarks.ranker_model_before_keys import MODEL as BEFORE_KEYS_RANKER
from benchmarks.ranker_model_before_lists import MODEL as BEFORE_LISTS_RANKER
from benchmarks.ranker_model_cjk_before_lists import MODEL as BEFORE_LISTS_CJK_RANKER
from projections.queries.list_expand import DEFAULT as LISTS_ON
from projections.queries.list_expand import ListExpandConfig
from projections.queries.encoder_fusion import fusion_for
from projections.queries.graph_search import DEFAULT_GRAPH_SEARCH
from projections.queries.retrieval import DEFAULT_FUSION, FusionConfig

LISTS_OFF = ListExpandConfig(weight=0.0)
# The default before the second pass for list questions (issue 12, seventh round): no list pass, the ranker fitted
# without its term over the best 20 rows, notes at most a quarter of a context's budget.
BEFORE_LISTS = replace(DEFAULT_FUSION, list_expansion=LISTS_OFF, ranker=BEFORE_LISTS_RANKER, ranker_depth=20,
                       note_share=0.25, cjk_ranker=BEFORE_LISTS_CJK_RANKER)

# The default before the derived keys (projections.queries.key_index) were switched on: the turn's own text ranks,
# no context list, its ranker fitted on the plain lexical ranks. The base of the experiment rounds below, so their
# figures stay reproducible.
PREVIOUS = replace(BEFORE_LISTS, fact_key=False, cjk_subwords=False, context_weight=0.0, context_candidates=100,
                   ranker=BEFORE_KEYS_RANKER, cjk_ranker=None)
# The derived keys as the fifth round measured them (all 100 context candidates, the ranker before the keys).
KEYS = replace(PREVIOUS, fact_key=True, cjk_subwords=True, context_weight=0.5)
BEFORE = replace(PREVIOUS, neighbour_weight=0.0, speaker_weight=0.0, time_weight=0.0, clause_weight=0.0,
                 cjk_dense_weight=None, ranker=None, conversation_weight=0.0, coverage_weight=0.0)


def variants(default: FusionConfig = DEFAULT_FUSION) -> dict[str, FusionConfig]:
    """The named configurations around ``default``, the store's default fusion (an encoder's own:
    :func:`projections.queries.encoder_fusion.fusion_for`): each ablation switches one stage of it off; the
    earlier defaults (``palimpsest_before*``, ``palimpsest_keys``) stay as they were."""
    return {
        "palimpsest": default,
        "palimpsest_before": BEFORE,
        "palimpsest_no_ranker": replace(default, ranker=None, cjk_ranker=None),
        # the second pass for list questions off (projections.queries.list_expand); the notes' share as before it
        "palimpsest_no_list_expand": replace(default, list_expansion=LISTS_OFF),
        "palimpsest_notes_quarter": replace(default, note_share=0.25),
        "palimpsest_notes_depth20": replace(default, note_depth=20),  # a context reads the notes of 20 hits (was)
        "palimpsest_before_lists": BEFORE_LISTS,
        "palimpsest_no_cjk_ranker": replace(default, cjk_ranker=None),  # Chinese queries not re-ranked
        "palimpsest_no_focus": replace(default, query_focus=False),  # rambling queries read whole
        "palimpsest_no_neighbours": replace(default, neighbour_weight=0.0),
        "palimpsest_no_speaker": replace(default, speaker_weight=0.0),
        "palimpsest_no_time": replace(default, time_weight=0.0),
        "palimpsest_no_clauses": replace(default, clause_weight=0.0),
        "palimpsest_no_cjk_dense": replace(default, cjk_dense_weight=None),
        "palimpsest_no_conversation": replace(default, conversation_weight=0.0),
        "palimpsest_no_episodes": replace(default, episode_weight=0.0),
        "palimpsest_no_cross_lingual": replace(default, cross_lingual=False),
        "palimpsest_no_notes": replace(default, note_weight=0.0, note_tokens=0),
        "palimpsest_no_graph": replace(default, graph_weight=0.0),
        # the learning loop off: the dispatcher's adjustments and the Molt policy ignored (benchmarks/feedback.py)
        "palimpsest_no_feedback": replace(default, feedback=False),
        # one mechanism of the loop alone: the dispatcher's penalties and invalidations, or the Molt policy
        "palimpsest_penalties_only": replace(default, feedback_policy=False),
        "palimpsest_policy_only": replace(default, feedback_adjustments=False),
        # a stage that is off by default, switched on: pseudo-relevance feedback for list questions
        # (projections.queries.prf; parameters chosen leave-conversations-out in the lab on the LoCoMo dev file)
        "palimpsest_prf": replace(default, prf_weight=1.0, prf_seeds=3, prf_candidates=20, prf_beta=1.0,
                                  prf_lists_only=True),
        # the default before the derived lexical keys (projections.queries.key_index), and each key off again
        "palimpsest_before_keys": PREVIOUS,
        "palimpsest_no_fact_key": replace(default, fact_key=False),
        "palimpsest_no_context": replace(default, context_weight=0.0),
        "palimpsest_no_subwords": replace(default, cjk_subwords=False),
        # the fifth round's keys configuration: the ranker before the keys, 100 context candidates
        "palimpsest_keys": KEYS,
    }


def for_encoder(model_id: str) -> dict[str, FusionConfig]:
    """:func:`variants` around the default fusion of the encoder that made ``model_id``'s vectors."""
    return variants(fusion_for(model_id))


VARIANTS: dict[str, FusionConfig] = variants()

NB, SPK, TIME, CL = dict(neighbour_weight=0.3), dict(speaker_weight=0.3), dict(time_weight=0.3), dict(clause_weight=0.5)
EXPERIMENTS: dict[str, FusionConfig] = {
    "nb_0.2": replace(BEFORE, neighbour_weight=0.2),
    "nb_0.3": replace(BEFORE, **NB),
    "nb_0.5": replace(BEFORE, neighbour_weight=0.5),
    "nb_0.5_top10": replace(BEFORE, neighbour_weight=0.5, neighbour_top=10),
    "nb_0.3_top30": replace(BEFORE, neighbour_weight=0.3, neighbour_top=30),
    "sess_0.5": replace(BEFORE, session_weight=0.5),
    "sess_1": replace(BEFORE, session_weight=1.0, session_candidates=5),
    "spk_0.3": replace(BEFORE, **SPK),
    "spk_1": replace(BEFORE, speaker_weight=1.0),
    "time_0.3": replace(BEFORE, **TIME),
    "time_1": replace(BEFORE, time_weight=1.0),
    "clause_0.5": replace(BEFORE, **CL),
    "clause_1": replace(BEFORE, clause_weight=1.0),
    "cjk_dense_0.5": replace(BEFORE, cjk_dense_weight=0.5),
    "cjk_dense_0.25": replace(BEFORE, cjk_dense_weight=0.25),
    "c_nb_spk_time": replace(BEFORE, **NB, **SPK, **TIME),
    "c_nb_spk_time_sess": replace(BEFORE, **NB, **SPK, **TIME, session_weight=0.5),
    "c_nb_sess": replace(BEFORE, **NB, session_weight=0.5),
    "c_nb_spk_sess": replace(BEFORE, **NB, **SPK, session_weight=0.5),
    "c_nb_spk_time_cl": replace(BEFORE, **NB, **SPK, **TIME, **CL),
    "c_nb02_spk_time_cl": replace(BEFORE, neighbour_weight=0.2, **SPK, **TIME, **CL),
    "c_all_cjk0.5": replace(BEFORE, **NB, **SPK, **TIME, **CL, cjk_dense_weight=0.5),
    "c_all_cjk0.25": replace(BEFORE, **NB, **SPK, **TIME, **CL, cjk_dense_weight=0.25),
    # the default without its ranker: the base the ranker was fitted on (benchmarks/train_ranker.py)
    "c_all_nb02_cjk0.25": replace(BEFORE, neighbour_weight=0.2, **SPK, **TIME, **CL, cjk_dense_weight=0.25),
}
ALL = {**VARIANTS, **EXPERIMENTS}

# Issue 12, second round: experiments on top of the default (stages and ranker on).
CONV = {f"conv_{w}_c{c}_fit{fit}": replace(PREVIOUS, conversation_weight=w, conversation_candidates=c,
                                           conversation_fit=fit)
        for w in (0.5, 1.0, 2.0) for c in (1, 3) for fit in (0, 10)}
EXPERIMENTS.update(CONV)
EXPERIMENTS.update({f"conv2_{w}_c{c}_fit{fit}": replace(PREVIOUS, conversation_weight=w, conversation_candidates=c,
                                                          conversation_fit=fit)
                    for w, c, fit in ((1.5, 1, 10), (1.0, 1, 15), (1.0, 1, 20), (1.5, 1, 15), (1.0, 2, 10), (0.7, 1, 10))})
ALL = {**VARIANTS, **EXPERIMENTS}

# Issue 12, third round: coverage-aware selection (projections.queries.coverage) on top of the default.
EXPERIMENTS.update({f"cov_{w}_d{d}": replace(PREVIOUS, coverage_weight=w, coverage_depth=d)
                    for w in (0.1, 0.2, 0.3, 0.5, 0.8) for d in (10, 20, 30, 50)})
EXPERIMENTS.update({f"covd_{w}_d{d}": replace(PREVIOUS, coverage_weight=w, coverage_depth=d, coverage_mode="dense")
                    for w in (0.05, 0.1, 0.2, 0.4) for d in (20, 30)})
EXPERIMENTS.update({f"covl_{w}_d{d}": replace(PREVIOUS, coverage_weight=w, coverage_depth=d,
                                              coverage_lists_only=True)
                    for w in (0.1, 0.2, 0.3, 0.5, 0.8) for d in (10, 20, 30, 50)})
ALL = {**VARIANTS, **EXPERIMENTS}

# Issue 12, fourth round: pseudo-relevance feedback over the turn vectors (projections.queries.prf).
EXPERIMENTS.update({f"prf_{w}_s{s}_c{c}_b{b}{'_l' if lists else ''}": replace(
    PREVIOUS, prf_weight=w, prf_seeds=s, prf_candidates=c, prf_beta=b, prf_lists_only=lists)
    for w in (0.2, 0.5, 1.0) for s in (2, 3, 5) for c in (20,) for b in (0.5, 1.0) for lists in (False, True)})
ALL = {**VARIANTS, **EXPERIMENTS}

# Issue 12, fifth round: derived lexical keys of each turn (projections.queries.key_index) on top of the default.
# A separate list with its own weight, or (``_only``) the fact key in place of the turn's own BM25 document.
# (fact_cjk: these were measured with the fact list on Chinese queries too.)
EXPERIMENTS.update({f"fact_{w}": replace(PREVIOUS, fact_weight=w, fact_cjk=True) for w in (0.3, 0.5, 0.8, 1.3)})
EXPERIMENTS.update({"fact_only": replace(PREVIOUS, fact_weight=1.3, lexical_weight=0.0, fact_cjk=True),
                    "fact_0.8_lex_0.8": replace(PREVIOUS, fact_weight=0.8, lexical_weight=0.8, fact_cjk=True)})
EXPERIMENTS.update({f"ctx_{w}": replace(PREVIOUS, context_weight=w) for w in (0.3, 0.5, 0.8)})
EXPERIMENTS.update({f"ctxp_{w}": replace(PREVIOUS, context_weight=w, context_window="prev") for w in (0.3, 0.5)})
EXPERIMENTS.update({f"sub_{w}": replace(PREVIOUS, subword_weight=w) for w in (0.3, 0.5, 1.0)})
EXPERIMENTS.update({"sub_1.3_lex0": replace(PREVIOUS, subword_weight=1.3, lexical_weight=0.0)})
ALL = {**VARIANTS, **EXPERIMENTS}
# Chinese queries: the sub-word list in place of (or beside) the jieba word list; English queries unchanged.
EXPERIMENTS.update({f"subr_{w}_lex{lw}": replace(PREVIOUS, subword_weight=w, cjk_lexical_weight=lw)
                    for w, lw in ((1.3, 0.0), (1.0, 0.3), (1.3, 0.3), (1.6, 0.0), (1.0, 0.0))})
ALL = {**VARIANTS, **EXPERIMENTS}
# Combinations: neighbour-context list, the fact key in place of the turn's own document, Chinese sub-words.
SUBR = dict(subword_weight=1.3, cjk_lexical_weight=0.0)
FACT_ONLY = dict(fact_weight=1.3, lexical_weight=0.0, fact_cjk=True)
EXPERIMENTS.update({f"kx_ctx{w}_subr": replace(PREVIOUS, context_weight=w, **SUBR) for w in (0.3, 0.5, 0.8)})
EXPERIMENTS.update({f"kx_ctx{w}_subr_fact": replace(PREVIOUS, context_weight=w, **SUBR, **FACT_ONLY)
                    for w in (0.3, 0.5)})
EXPERIMENTS.update({"kx_ctxp0.5_subr": replace(PREVIOUS, context_weight=0.5, context_window="prev", **SUBR),
                    "kx_subr_fact": replace(PREVIOUS, **SUBR, **FACT_ONLY)})
ALL = {**VARIANTS, **EXPERIMENTS}
# The fact key for English queries only (fact_cjk False), sub-words for Chinese, and the context list.
EXPERIMENTS.update({f"kx_en_fact_ctx{w}": replace(PREVIOUS, context_weight=w, **SUBR, fact_weight=1.3,
                                                   lexical_weight=0.0)
                    for w in (0.0, 0.3, 0.5, 0.8)})
ALL = {**VARIANTS, **EXPERIMENTS}
# Issue 12, sixth round: the derived keys with the plain lexical search skipped (retrieval.lexical_key), the ranker
# refitted on the fact key's ranks with six more features (benchmarks/train_ranker.py --base keys_ctxc30_no_ranker),
# fewer context candidates (cost), the notes' share of a context. keys_ctxc30_no_ranker is the default's base.
EXPERIMENTS.update({"keys_no_ranker": replace(KEYS, ranker=None), "keys_fact_only": replace(KEYS, context_weight=0.0),
                    "keys_ctxc30_no_ranker_cjk": replace(KEYS, context_candidates=30, ranker=None, ranker_cjk=True)})
EXPERIMENTS.update({f"keys_ctxc{c}": replace(KEYS, context_candidates=c) for c in (10, 20, 30, 50)})
EXPERIMENTS.update({f"keys_ctxc{c}_no_ranker": replace(KEYS, context_candidates=c, ranker=None) for c in (20, 30, 50)})
EXPERIMENTS.update({f"keys_notes{t}": replace(DEFAULT_FUSION, note_tokens=t) for t in (0, 250, 750)})
ALL = {**VARIANTS, **EXPERIMENTS}
# Issue 12, seventh round: a second pass for list questions (projections.queries.list_expand), the ranker refitted
# with its term over the best 25 rows, the notes' share of a context 0.5. The grid is on top of the default before it.
EXPERIMENTS.update({f"lz_{w}_s{s}_t{t}_m{m}": replace(
    BEFORE_LISTS, list_expansion=ListExpandConfig(weight=w, seeds=s, terms=t, min_seeds=m, candidates=20))
    for w in (0.5, 1.0, 2.0) for s in (3, 5) for t in (5, 10) for m in (1, 2)})
EXPERIMENTS.update({f"lists_rd{d}": replace(BEFORE_LISTS, list_expansion=LISTS_ON, ranker_depth=d) for d in (20, 25, 30)})
EXPERIMENTS.update({f"lists_notes{int(100 * f)}": replace(BEFORE_LISTS, list_expansion=LISTS_ON, note_share=f)
                    for f in (0.35, 0.5, 0.6)})
# the bases the rankers are fitted on (benchmarks/train_ranker.py): the default without its rankers; the Chinese one
# with the (then Chinese) ranker slot used for Chinese queries
EXPERIMENTS.update({"lists_no_ranker_cjk": replace(DEFAULT_FUSION, ranker=None, cjk_ranker=None, ranker_cjk=True),
                    "lists_cjk_off_no_ranker_cjk": replace(DEFAULT_FUSION, ranker=None, cjk_ranker=None, ranker_cjk=True,
                                                           list_expansion=replace(LISTS_ON, cjk=False))})
ALL = {**VARIANTS, **EXPERIMENTS}
# Issue 35: fusion for multilingual-e5-small, whose cosines sit in 0.78-0.90 (MiniLM's: 0.25-0.75). The base is the
# MiniLM default without its rankers (fitted on MiniLM's features): the list weights, and the cosine below which the
# graph expands (auto mode; MiniLM's 0.7 expands for 82 % of the LoCoMo dev questions, e5's 0.885 about as many).
E5_BASE = replace(DEFAULT_FUSION, ranker=None, cjk_ranker=None)
EXPERIMENTS.update({f"e5_dw{d}_lw{lw}": replace(E5_BASE, dense_weight=d, lexical_weight=lw)
                    for d in (1.0, 1.3, 1.6, 2.0) for lw in (1.0, 1.3)})
EXPERIMENTS.update({f"e5_low{t}": replace(E5_BASE, graph_config=replace(DEFAULT_GRAPH_SEARCH, low_similarity=t))
                    for t in (0.85, 0.87, 0.885, 0.9)})
ALL = {**VARIANTS, **EXPERIMENTS}
# the base the e5 rankers are fitted on (benchmarks/train_ranker.py): the graph threshold at e5's 0.885, no rankers
E5_LOW = replace(E5_BASE, graph_config=replace(DEFAULT_GRAPH_SEARCH, low_similarity=0.885))
EXPERIMENTS.update({"e5_low_no_ranker": E5_LOW, "e5_low_no_ranker_cjk": replace(E5_LOW, ranker_cjk=True)})
ALL = {**VARIANTS, **EXPERIMENTS}
# one weight at a time around that base
EXPERIMENTS.update({f"e5_{name}{v}": replace(E5_LOW, **{field: v}) for name, field, values in (
    ("ep", "episode_weight", (0.25, 1.0)), ("ctx", "context_weight", (0.3, 0.8)), ("nb", "neighbour_weight", (0.1, 0.3)),
    ("conv", "conversation_weight", (0.5, 1.5)), ("rrfk", "rrf_k", (3, 10)), ("note", "note_weight", (0.25, 1.0)))
    for v in values})
ALL = {**VARIANTS, **EXPERIMENTS}
# Chinese queries: e5 reads Chinese, so the dense list need not be weighed down (MiniLM's 0.25)
EXPERIMENTS.update({f"e5_cjkd{w}": replace(E5_LOW, cjk_dense_weight=w) for w in (0.5, 1.0, 1.3, 1.6)})
EXPERIMENTS.update({f"e5_cjkd{w}_no_ranker_cjk": replace(E5_LOW, cjk_dense_weight=w, ranker_cjk=True) for w in (1.0, 1.3)})
ALL = {**VARIANTS, **EXPERIMENTS}
# the base the e5 rankers are fitted on: the graph threshold at 0.885, one dense weight for every language
E5_CALIBRATED = replace(E5_LOW, cjk_dense_weight=None)
EXPERIMENTS.update({"e5_calibrated_no_ranker": E5_CALIBRATED})
ALL = {**VARIANTS, **EXPERIMENTS}
