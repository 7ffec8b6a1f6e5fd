"""Named fusion configurations the benchmark and the lab compare: the default and one switch per stage.

Each variant differs from :data:`DEFAULT_FUSION` in one stage, so a figure
says what that stage is worth; leave-conversations-out reporting chooses
among them on other samples.
"""

from __future__ import annotations

from dataclasses import replace

from projections.queries.retrieval import DEFAULT_FUSION, FusionConfig

VARIANTS: dict[str, FusionConfig] = {
    "palimpsest": DEFAULT_FUSION,
    "palimpsest_no_episodes": replace(DEFAULT_FUSION, episode_weight=0.0),
    "palimpsest_no_notes": replace(DEFAULT_FUSION, note_weight=0.0, note_tokens=0),
    "palimpsest_no_graph": replace(DEFAULT_FUSION, graph_weight=0.0),
}

# Candidate stages under study (the lab only until they earn a place above).
EXPERIMENTS: dict[str, FusionConfig] = {
    "nb_0.3": replace(DEFAULT_FUSION, neighbour_weight=0.3),
    "nb_0.5": replace(DEFAULT_FUSION, neighbour_weight=0.5),
    "nb_0.5_top10": replace(DEFAULT_FUSION, neighbour_weight=0.5, neighbour_top=10),
    "sess_0.5": replace(DEFAULT_FUSION, session_weight=0.5),
    "sess_1": replace(DEFAULT_FUSION, session_weight=1.0, session_candidates=5),
    "spk_0.3": replace(DEFAULT_FUSION, speaker_weight=0.3),
    "spk_1": replace(DEFAULT_FUSION, speaker_weight=1.0),
    "time_0.3": replace(DEFAULT_FUSION, time_weight=0.3),
    "time_1": replace(DEFAULT_FUSION, time_weight=1.0),
    "nb_0.2": replace(DEFAULT_FUSION, neighbour_weight=0.2),
    "nb_0.3_top30": replace(DEFAULT_FUSION, neighbour_weight=0.3, neighbour_top=30),
    "c_nb_spk_time": replace(DEFAULT_FUSION, neighbour_weight=0.3, speaker_weight=0.3, time_weight=0.3),
    "c_nb_spk_time_sess": replace(DEFAULT_FUSION, neighbour_weight=0.3, speaker_weight=0.3, time_weight=0.3,
                                  session_weight=0.5),
    "c_nb_sess": replace(DEFAULT_FUSION, neighbour_weight=0.3, session_weight=0.5),
    "c_nb_spk_sess": replace(DEFAULT_FUSION, neighbour_weight=0.3, speaker_weight=0.3, session_weight=0.5),
}
ALL = {**VARIANTS, **EXPERIMENTS}
