"""Lexical tokens for BM25: English words (lower-cased, stop words dropped, light
suffix stripping) and Chinese words segmented with jieba.

Deterministic and pure: the same text always gives the same tokens, so the
lexical projection rebuilds identically.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from functools import lru_cache

import jieba

from projections.adapters import jieba_dict

jieba.setLogLevel(logging.WARNING)

# The offline rules (notes, graph memories, classification) read at most this many characters of a message; the
# whole text is stored, embedded and indexed for search. Some rules cost time quadratic in a clause's length, so a
# message of the maximum size (100,000 characters) would hold its shard for minutes to hours (README, "Limits").
RULES_MAX_CHARS = 2_500
CJK_RUN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")  # a run of Chinese characters
# Letters and digits of any non-CJK script (accented Latin, Cyrillic, kana runs, Hangul…).
_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)?")

EN_STOP = frozenset(
    """a an the and or but if then else of to in on at by for with from into onto about as is are was were be been
    being am do does did doing have has had having i me my mine myself you your yours yourself he him his she her hers
    it its they them their theirs we us our ours this that these those there here what which who whom whose when where
    why how all any both each few more most other some such no nor not only own same so than too very can will just
    would should could shall may might must s t d ll m o re ve y don didn doesn isn wasn weren haven hasn hadn won
    wouldn shouldn couldn mustn yeah oh ok okay hey hi wow really also""".split()
)
ZH_STOP = frozenset("的 了 是 在 我 你 他 她 它 们 这 那 和 与 就 都 也 还 吗 呢 吧 啊 呀 嗯 哦 个 把 被 着 过 很 有 没 不 要 会 对 说 去 到 给 让".split())


def _stem(word: str) -> str:
    # Deliberately light: merges plural/verb forms without Porter's surprises.
    if len(word) > 5 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 5 and word.endswith("ing"):
        return word[:-3]
    if len(word) > 4 and word.endswith("ed") and not word.endswith("eed"):
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


@lru_cache(maxsize=50_000)
def _english(word: str) -> str | None:
    word = word.split("'")[0]
    if not word or word in EN_STOP:
        return None
    return _stem(word)


# jieba costs ~10 µs per character (a 200-character question: ~2 ms per segmentation), and one search segments
# the same runs again and again: the question's, its clauses' (most end at punctuation, so they are its runs), each
# ranked list's. The segmentations of recent runs are kept (pure functions of the run, returned as tuples).
RUN_CACHE = 8192


@lru_cache(maxsize=RUN_CACHE)
def chinese_words(run: str) -> tuple[str, ...]:
    """The jieba words of a run of Chinese characters, stop words dropped."""
    jieba_dict.load()  # a no-op once loaded
    return tuple(w for w in jieba.lcut(run) if w.strip() and w not in ZH_STOP)


def tokenize(text: str, chinese=chinese_words) -> list[str]:
    """Tokens of ``text`` for lexical matching, in order of appearance; ``chinese`` splits each Chinese run."""
    lowered = text.lower()
    tokens: list[str] = []
    pos = 0
    for match in CJK_RUN.finditer(lowered):
        tokens.extend(_latin(lowered[pos : match.start()]))
        tokens.extend(chinese(match.group()))
        pos = match.end()
    tokens.extend(_latin(lowered[pos:]))
    return tokens


@lru_cache(maxsize=RUN_CACHE)
def _subwords(run: str) -> tuple[str, ...]:
    """jieba's search-mode words of a Chinese run (words and their dictionary sub-words), stop words dropped, and
    the character bigrams of each word of three or more characters that jieba's dictionary does not hold."""
    jieba_dict.load()
    tokens = [w for w in jieba.cut_for_search(run) if w.strip() and w not in ZH_STOP]
    freq = jieba.dt.FREQ
    for word in chinese_words(run):  # (no stop word has three characters)
        if len(word) >= 3 and not freq.get(word):
            tokens.extend(word[i : i + 2] for i in range(len(word) - 1))
    return tuple(tokens)


TEXT_CACHE = 4096  # texts whose tokens are kept: more than one user's turns (a read index is built user by user)


@lru_cache(maxsize=TEXT_CACHE)
def text_tokens(text: str) -> tuple[str, ...]:
    """:func:`tokenize` of ``text``, memoised. ``tokenize(f"{a} {b}") == tokenize(a) + tokenize(b)`` (a space
    ends every token and every Chinese run), so a key made of several turns is tokenized from its parts' tokens:
    each turn once, however many keys hold it (checked on 30,000 triples of the three dev files' turns)."""
    return tuple(tokenize(text))


def search_tokens(text: str) -> list[str]:
    """:func:`tokenize` with richer Chinese terms (:func:`_subwords`); English tokens as in :func:`tokenize`."""
    return tokenize(text, _subwords)


# Words that ask, place a question in the present or carry no topic ("我现在住在哪个城市？", "what do I usually drink
# now?", "我周六一般做什么？", "what database does Atlas use?"): left out of a query's lexical terms, so that a turn
# matching only them ("我的电池现在只能撑两个小时", "my parents are learning to use video calls") does not rank. English
# question words, "do" and "most" are stop words already (EN_STOP); 做 and 最 are their Chinese.
QUERY_STOP = frozenset("""什么 哪 哪个 哪些 哪里 哪儿 哪家 怎么 怎样 怎么样 为什么 多少 几 谁 现在 目前 平时 一般 通常 做 最 用
    now usually currently use""".split())


@lru_cache(maxsize=1024)
def query_tokens(query: str, subwords: bool = False) -> tuple[str, ...]:
    """:func:`tokenize` (or :func:`search_tokens`) of a query without :data:`QUERY_STOP`, memoised: one search
    ranks the same question in several lists (the keys, the conversations, the notes, the ranker's coverage), and
    jieba takes about 0.5 ms to segment a Chinese question. A query of only such words keeps them."""
    tokens = search_tokens(query) if subwords else tokenize(query)
    return tuple(t for t in tokens if t not in QUERY_STOP) or tuple(tokens)


def _latin(segment: str) -> list[str]:
    return [token for token in map(_english, _WORD.findall(segment)) if token]


def rule_text(text: str) -> str:
    """The part of a message the offline rules read: its first :data:`RULES_MAX_CHARS` characters."""
    return text[:RULES_MAX_CHARS]


# A shared picture's caption, as the LoCoMo importer writes it (palimpsest.locomo): "… [image: a photo of …]".
CAPTION = re.compile(r"\s*\[image:[^\]]*\]?")


def said_text(text: str) -> str:
    """What the speaker said: the text without the captions of the pictures shared with it (a caption describes
    a picture; "[image: a bulletin board saying don't ever be afraid]" states no rule of the speaker's)."""
    return CAPTION.sub("", text) if "[image:" in text else text


def has_cjk(text: str) -> bool:
    return CJK_RUN.search(text) is not None


CJK_CHARS_PER_WORD = 1.6  # Chinese text holds about this many characters per word (as an English reader counts)
_CJK_CHAR = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


def mainly_chinese(text: str) -> bool:
    """Whether most of ``text``'s words are Chinese (its Chinese characters over :data:`CJK_CHARS_PER_WORD`
    against its words of other scripts); a mixed text counts as the script that carries more of it, so an
    English sentence naming 黄山 stays English and "我最近改用 Neovim 了" Chinese."""
    if CJK_RUN.search(text) is None:
        return False
    return len(_CJK_CHAR.findall(text)) / CJK_CHARS_PER_WORD >= len(_WORD.findall(CJK_RUN.sub(" ", text)))


TOPIC_OVERLAP = 0.5  # the share of their terms two questions must have in common to be about the same topic


@lru_cache(maxsize=10_000)
def terms(text: str) -> frozenset[str]:
    """The distinct lexical tokens of ``text`` (English stems, Chinese words; stop words dropped)."""
    return frozenset(tokenize(text))


def same_topic(a: str, b: str, overlap: float = TOPIC_OVERLAP) -> bool:
    """Whether two questions are about the same topic: their terms' Jaccard overlap is at least ``overlap``.

    A paraphrase or a repetition of a question shares most of its terms ("What did Mel paint?" / "What has Mel
    painted lately?"); two questions about the same person but different facts share only the name.
    """
    x, y = terms(a), terms(b)
    return bool(x and y) and len(x & y) / len(x | y) >= overlap


def text_memo(maxsize: int) -> Callable:
    """``lru_cache(maxsize)`` for a function of user text whose memo :func:`text_caches_clear` also empties (an
    erasure leaves no copy of a forgotten user's words in the process): for modules this one cannot import."""
    def wrap(fn: Callable) -> Callable:
        memo = lru_cache(maxsize=maxsize)(fn)
        _TEXT_MEMOS.append(memo.cache_clear)
        return memo
    return wrap


_TEXT_MEMOS: list[Callable[[], None]] = []  # cache_clear of each memo made by text_memo


def text_caches_clear() -> None:
    """Empty this module's memos of text (Chinese runs' words and sub-words, query and text tokens) and every
    :func:`text_memo` (the contradiction rules' statements, the graph conflict check's label terms)."""
    for memo in (chinese_words, _subwords, query_tokens, text_tokens):
        memo.cache_clear()
    for clear in _TEXT_MEMOS:
        clear()
