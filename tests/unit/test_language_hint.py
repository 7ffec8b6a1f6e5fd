"""The warning an English-only store gives when it is asked to remember Chinese."""

from __future__ import annotations

from palimpsest.language_hint import english_only_warning

CHINESE = ["我最近改用 Neovim 了，不再用 VS Code 写代码。", "这个周末我们俱乐部要去黄山爬山。"]
ENGLISH = ["We climbed 黄山 last weekend", "I prefer green tea in the morning"] * 5


def test_an_english_only_encoder_given_chinese_names_the_count_and_the_move():
    warning = english_only_warning("minilm", CHINESE + ENGLISH)
    assert warning["encoder"] == "minilm" and warning["chinese"] == 2 and warning["messages"] == 12
    assert "reembed --embedder multilingual-e5-small" in warning["fix"]


def test_english_a_few_chinese_lines_and_a_multilingual_encoder_give_none():
    assert english_only_warning("minilm", ENGLISH) is None  # an English sentence naming 黄山 is English
    assert english_only_warning("minilm", CHINESE[:1] + ENGLISH * 2) is None  # 1 of 21: under a tenth
    assert english_only_warning("minilm", CHINESE[:1] + ENGLISH[:9]) is not None  # 1 of 10: a tenth
    assert english_only_warning("minilm", []) is None
    for encoder in ("multilingual-e5-small", "hash", "openai:text-embedding-3-small"):
        assert english_only_warning(encoder, CHINESE) is None
