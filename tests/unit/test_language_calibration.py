"""Dense similarities across scripts: each script group moved toward the largest group's scale, one script
untouched."""

from __future__ import annotations

import numpy as np
import pytest

from projections.queries.language_calibration import MIN_GROUP, SHARE, calibrate
from projections.rules.text import mainly_chinese


def test_script_groups_by_the_script_carrying_most_words():
    texts = ["I moved to Hangzhou", "我最近改用 Neovim 了", "We hiked 黄山 last weekend with the club", "你好"]
    assert [mainly_chinese(t) for t in texts] == [False, True, False, True]


def test_the_other_script_moves_toward_the_largest_groups_scale():
    english = np.array([0.80, 0.82, 0.84, 0.86, 0.88, 0.90], dtype=np.float32)
    chinese = np.array([0.70, 0.71, 0.72, 0.73, 0.74, 0.78], dtype=np.float32)  # a lower scale, its best 0.78
    sims = np.concatenate([english, chinese])
    groups = np.array([0] * 6 + [1] * 6, dtype=np.int8)
    out = calibrate(sims, groups)
    assert np.array_equal(out[:6], english)  # the largest group (ties: the first) keeps its similarities
    on_scale = english.mean() + (chinese - chinese.mean()) / chinese.std() * english.std()
    assert out[6:] == pytest.approx(chinese + SHARE * (on_scale - chinese), abs=1e-6)
    assert out[11] > english[2]  # the best Chinese turn, far above its own group, now ranks among the English
    assert np.argsort(-out[6:]).tolist() == np.argsort(-chinese).tolist()  # order within a group unchanged


def test_one_script_or_a_tiny_group_is_left_as_it_is():
    sims = np.linspace(0.5, 0.9, 20).astype(np.float32)
    assert calibrate(sims, np.zeros(20, dtype=np.int8)) is sims
    few = np.array([0] * 15 + [1] * (MIN_GROUP - 1) + [0], dtype=np.int8)
    assert calibrate(sims, few) is sims
    flat = np.array([0.5] * 6 + [0.7] * 6, dtype=np.float32)  # a group whose similarities do not spread
    assert np.array_equal(calibrate(flat, np.array([0] * 6 + [1] * 6, dtype=np.int8))[6:], flat[6:])
