"""Named fusion configurations the benchmark and the lab compare: the default, the one before the
generalisation work, and the default with one stage switched off (an ablation per stage).

Leave-conversations-out reporting (:mod:`benchmarks.leaveout`) chooses among
the ``palimpsest*`` configurations on other samples. ``EXPERIMENTS`` are the
lab's grid (``python -m benchmarks.lab --variants ...``): each is the
configuration before this work plus the stages named.
"""

from __future__ import annotations

from dataclasses import replace

from projections.queries.retrieval import DEFAULT_FUSION, FusionConfig

BEFORE = replace(DEFAULT_FUSION, neighbour_weight=0.0, speaker_weight=0.0, time_weight=0.0, clause_weight=0.0,
                 cjk_dense_weight=None, ranker=None)

VARIANTS: dict[str, FusionConfig] = {
    "palimpsest": DEFAULT_FUSION,
    "palimpsest_before": BEFORE,
    "palimpsest_no_ranker": replace(DEFAULT_FUSION, ranker=None),
    "palimpsest_no_neighbours": replace(DEFAULT_FUSION, neighbour_weight=0.0),
    "palimpsest_no_speaker": replace(DEFAULT_FUSION, speaker_weight=0.0),
    "palimpsest_no_time": replace(DEFAULT_FUSION, time_weight=0.0),
    "palimpsest_no_clauses": replace(DEFAULT_FUSION, clause_weight=0.0),
    "palimpsest_no_cjk_dense": replace(DEFAULT_FUSION, cjk_dense_weight=None),
    "palimpsest_no_episodes": replace(DEFAULT_FUSION, episode_weight=0.0),
    "palimpsest_no_notes": replace(DEFAULT_FUSION, note_weight=0.0, note_tokens=0),
    "palimpsest_no_graph": replace(DEFAULT_FUSION, graph_weight=0.0),
    # the learning loop off: the dispatcher's adjustments and the Molt policy ignored (benchmarks/feedback.py)
    "palimpsest_no_feedback": replace(DEFAULT_FUSION, feedback=False),
}

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
