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


@pytest.mark.parametrize("speaker, text", [
    ("Caroline", "I went to the LGBTQ support group yesterday and it was so powerful."),
    ("小明", "我最喜欢的颜色是蓝色，我们决定改用 PostgreSQL 了。"),
    ("Mel's", "don't 'quote' me: Σίσυφος ΣΑΣ"),
    (None, "用户喜欢喝咖啡 golang"),
])
def test_lexical_tokens_are_their_parts_memoised_tokens(speaker, text):
    """The lexical folds index a message (``index_text``) and a note (text and key terms joined by spaces) from
    their parts' memoised tokens: the same tokens as the joined text, the same index, and the memo is emptied
    by ``forget_text_caches`` (erasure)."""
    from events.model import index_text
    from projections.folds.lexical import LexicalIndex
    from projections.rules.extraction import forget_text_caches, key_terms
    from projections.rules.text import text_tokens

    parts = (speaker, text) if speaker else (text,)
    assert [t for p in parts for t in text_tokens(p)] == tokenize(index_text(speaker, text))
    terms = key_terms(text)
    assert [t for p in (text, *terms) for t in text_tokens(p)] == tokenize(" ".join((text, *terms)))
    joined, by_parts = LexicalIndex(), LexicalIndex()
    joined.add("m", index_text(speaker, text))
    by_parts.add_parts("m", parts)
    assert by_parts.canonical() == joined.canonical()
    assert text_tokens.cache_info().currsize > 0
    forget_text_caches()
    assert text_tokens.cache_info().currsize == 0
