"""The lexical tokenizer: English words and Chinese words segmented with jieba."""

from __future__ import annotations

import pytest

from projections.rules.text import has_cjk, tokenize


def test_english_drops_stop_words_and_lowercases():
    assert tokenize("The Dog and I were at THE park") == ["dog", "park"]


@pytest.mark.parametrize(
    ("word", "stem"),
    [
        ("walks", "walk"),
        ("walked", "walk"),
        ("walking", "walk"),
        ("puppies", "puppy"),
        ("adopted", "adopt"),
        ("mountains", "mountain"),
        # protected endings and short words are left alone
        ("glass", "glass"),
        ("bus", "bus"),
        ("tennis", "tennis"),
        ("agreed", "agreed"),
        ("red", "red"),
        ("ring", "ring"),
    ],
)
def test_english_light_stemming(word, stem):
    assert tokenize(word) == [stem]


def test_contractions_and_punctuation():
    assert tokenize("I'm sure it's Alice's dog, isn't it?!") == ["sure", "alice", "dog"]


def test_chinese_is_segmented_into_words_and_stop_words_dropped():
    tokens = tokenize("我喜欢在周末去爬山")
    assert "爬山" in tokens and "周末" in tokens
    assert tokens == ["喜欢", "周末", "爬山"]  # 我/在/去 are stop words


def test_mixed_english_and_chinese_keeps_order_of_appearance():
    assert tokenize("I love 爬山 on weekends with my puppies") == ["love", "爬山", "weekend", "puppy"]


def test_chinese_query_shares_tokens_with_the_sentence_it_should_find():
    assert set(tokenize("爬山")) <= set(tokenize("我喜欢在周末去爬山"))
    assert not set(tokenize("北京烤鸭")) & set(tokenize("我喜欢在周末去爬山"))


def test_numbers_are_kept_and_empty_text_has_no_tokens():
    assert tokenize("Flight 370 at 9am") == ["flight", "370", "9am"]
    assert tokenize("") == []
    assert tokenize("the and of") == []


def test_tokenize_is_deterministic():
    text = "我们周末去北京爬长城, then we walked home"
    # "then" and "we" are stop words
    assert tokenize(text) == tokenize(text) == ["我们", "周末", "北京", "爬", "长城", "walk", "home"]


def test_has_cjk():
    assert has_cjk("hello 世界")
    assert not has_cjk("hello world")
