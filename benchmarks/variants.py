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
