"""A user's switch to another encoder places its episodes again by that model's vectors: the same episodes as a
stream recorded with that model from the start; switching back restores the old ones."""

from __future__ import annotations

from datetime import timedelta

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from events.model import EmbedderSwitched
from projections.folds.episodes import DEFAULT_SEGMENTATION, SegmentationConfig, fold
from projections.folds.episodes import EpisodeState
from tests.builders import T0, embedding, message, stream

A, B = "model-a", "model-b"
CONFIG = SegmentationConfig(window=2, topic_threshold=0.5, min_size=2, max_size=6)


def _unit(v) -> list[float]:
    v = np.asarray(v, dtype=np.float64)
    return list(v / np.linalg.norm(v))


def _recorded(vectors: list[list[float]], model: str, gaps: list[int]) -> list[tuple[str, object]]:
    out, at = [], T0
    for i, (vec, gap) in enumerate(zip(vectors, gaps)):
        at += timedelta(minutes=gap)
        out += [(f"m{i}", message(f"turn {i}", f"c{i}", occurred_at=at)), (f"v{i}", embedding(f"m{i}", vec, model))]
    return out


def _shape(state: EpisodeState) -> list[tuple]:
    return [(ep.reason, ep.member_ids) for ep in state.episodes()]


directions = st.lists(st.sampled_from([[1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 1, 0], [0, 1, 1]]), min_size=3, max_size=14)


@given(st.data(), directions, directions)
@settings(max_examples=40, deadline=None)
def test_a_switch_gives_the_episodes_of_the_new_models_vectors_and_back(data, first, second):
    n = min(len(first), len(second))
    a, b = [_unit(v) for v in first[:n]], [_unit(v) for v in second[:n]]
    gaps = data.draw(st.lists(st.sampled_from([1, 1, 1, 600]), min_size=n, max_size=n))  # 600 min: a time gap
    recorded_a = _recorded(a, A, gaps)
    ahead = [(f"w{i}", embedding(f"m{i}", vec, B)) for i, vec in enumerate(b)]
    to_b = ("s1", EmbedderSwitched(embedder="b", model_id=B, dim=3, previous_model_id=A))
    switched = fold(EpisodeState(), stream(*recorded_a, *ahead, to_b), CONFIG)
    fresh_b = fold(EpisodeState(), stream(*_recorded(b, B, gaps)), CONFIG)
    assert _shape(switched) == _shape(fresh_b)
    for got, want in zip(switched.episodes(), fresh_b.episodes()):
        np.testing.assert_allclose(got.centroid, want.centroid)

    back = fold(EpisodeState(), stream(*recorded_a, *ahead, to_b, ("s2", EmbedderSwitched(
        embedder="a", model_id=A, dim=3, previous_model_id=B))), CONFIG)
    assert _shape(back) == _shape(fold(EpisodeState(), stream(*recorded_a), CONFIG))


def test_a_later_vector_of_another_model_moves_no_boundary_before_the_switch():
    recorded = _recorded([_unit([1, 0, 0]), _unit([0, 1, 0]), _unit([0, 0, 1])], A, [1, 1, 1])
    plain = fold(EpisodeState(), stream(*recorded), DEFAULT_SEGMENTATION)
    ahead = fold(EpisodeState(), stream(*recorded, ("w2", embedding("m2", [1, 0, 0], B))), DEFAULT_SEGMENTATION)
    assert _shape(ahead) == _shape(plain) and ahead.held[B]["m2"].tolist() == [1, 0, 0]
    assert ahead.canonical()[:2] == plain.canonical()
