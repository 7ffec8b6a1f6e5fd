"""Extractive titles and summaries of episodes: offline, deterministic, English and Chinese.

Keywords are the episode's terms weighted by term frequency in the episode
times inverse document frequency in the user's corpus (the lexical index, so
a word the user says everywhere is not salient). Chinese terms are also
weighed against jieba's shipped IDF table of general Chinese, so function
words (不过, 需要) stay out even when the user's corpus is too small to tell.

The summary is the one or two sentences that carry the most keyword weight,
plus how central their message is (cosine of its recorded embedding to the
episode centroid), shown in conversation order and cut to a length.
Sentences are quoted, never rewritten, so the summary keeps the
conversation's language; the title joins the top keywords with that
language's separator.

Pure functions of (episode, messages, corpus, config): no model, no clock; the
only read is jieba's IDF table, once, from the installed package (as the
tokenizer reads its dictionary). An LLM title, when configured, belongs in a
recorded event instead.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

import numpy as np

from projections.folds.episodes import Episode
from projections.folds.lexical import LexicalIndex
from projections.folds.messages import StoredMessage
from projections.rules.text import has_cjk, tokenize

Language = Literal["en", "zh"]

_CJK_CHAR = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_LATIN_LETTER = re.compile(r"[^\W\d_]", re.ASCII)
_LATIN_WORD = re.compile(r"[A-Za-z]+(?:'[A-Za-z]+)?")
# A sentence ends at . ! ? followed by a space, at Chinese end punctuation, or at a line break.
_TRAILING_PUNCT = re.compile(r"[\s,;:,、;:]+$")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[。!?;…])|\n+")


@dataclass(frozen=True, slots=True)
class SummaryConfig:
    """Every parameter of extractive summaries; another instance re-summarises the same episodes."""

    keywords: int = 5
    title_keywords: int = 3
    sentences: int = 2
    sentence_chars: int = 120  # each quoted sentence is cut to this many characters
    centrality_weight: float = 0.5  # weight of cos(message, centroid) beside the keyword weight (at most 1 per keyword)
    min_latin_chars: int = 3  # shorter English keywords ("go", "ok") say little
    min_cjk_chars: int = 2  # single characters ("吃", "锅") are too ambiguous for a title
    skip_roles: tuple[str, ...] = ("system", "tool")  # not quoted unless nothing else is left
    with_speaker: bool = True  # quote as "Speaker: sentence" when the message has a speaker
    chinese_background_idf: bool = True  # weigh Chinese terms by jieba's general-Chinese IDF too


DEFAULT_SUMMARY = SummaryConfig()


@dataclass(frozen=True, slots=True)
class EpisodeSummary:
    """Title, keywords and quoted sentences of one episode; ``source_ids`` is the message each sentence came from."""

    episode_id: str
    language: Language
    title: str
    keywords: tuple[str, ...]
    sentences: tuple[str, ...]
    source_ids: tuple[str, ...]

    @property
    def text(self) -> str:
        """The summary as one string: sentences joined by a space (English) or directly (Chinese)."""
        return ("" if self.language == "zh" else " ").join(self.sentences)

    def canonical(self) -> tuple:
        return (self.episode_id, self.language, self.title, self.keywords, self.sentences, self.source_ids)


def language_of(texts: list[str]) -> Language:
    """``zh`` when Chinese characters are at least half as many as Latin letters, else ``en``."""
    cjk = sum(len(_CJK_CHAR.findall(t)) for t in texts)
    latin = sum(len(_LATIN_LETTER.findall(t)) for t in texts)
    return "zh" if cjk > 0 and 2 * cjk >= latin else "en"


def split_sentences(text: str) -> list[str]:
    """The sentences of ``text`` in order, stripped, empty ones dropped."""
    return [s.strip() for s in _SENTENCE_END.split(text) if s and s.strip()]


@lru_cache(maxsize=1)
def _chinese_idf() -> tuple[dict[str, float], float]:
    """jieba's shipped IDF table and its median (read once from the installed package, about 0.4 s)."""
    from jieba.analyse import default_tfidf

    return default_tfidf.idf_freq, default_tfidf.median_idf


def _background(term: str, config: SummaryConfig) -> float:
    """How unusual a Chinese term is in general Chinese (IDF / median IDF; unknown terms 1.0); 1.0 otherwise."""
    if not (config.chinese_background_idf and has_cjk(term)):
        return 1.0
    table, median = _chinese_idf()
    return table.get(term, median) / median


def keyword_weights(texts: list[str], corpus: LexicalIndex, config: SummaryConfig = DEFAULT_SUMMARY) -> dict[str, float]:
    """term → tf·idf·background of every eligible term of ``texts``, best first (ties: more frequent, then alphabetical).

    idf = ln((1 + N) / (1 + df)) + 1 over the corpus's N documents, so a term
    the corpus has never seen weighs most and every weight is positive.
    """
    tf = Counter(t for text in texts for t in tokenize(text))
    n = len(corpus.doc_ids)
    weights = {}
    for term, count in tf.items():
        cjk = has_cjk(term)
        if term.isdigit() or len(term) < (config.min_cjk_chars if cjk else config.min_latin_chars):
            continue
        df = len(corpus.postings.get(term, ()))
        weights[term] = count * (math.log((1 + n) / (1 + df)) + 1.0) * _background(term, config)
    ranked = sorted(weights.items(), key=lambda kv: (-kv[1], -tf[kv[0]], kv[0]))
    return dict(ranked)


def _surface_forms(texts: list[str]) -> dict[str, str]:
    """English token (stemmed, lower case) → the word as the episode writes it most (ties: shortest, then sorted)."""
    forms: dict[str, Counter] = {}
    for text in texts:
        for word in _LATIN_WORD.findall(text):
            tokens = tokenize(word)
            if len(tokens) == 1:
                forms.setdefault(tokens[0], Counter())[word] += 1
    return {tok: min(c, key=lambda w: (-c[w], len(w), w)) for tok, c in forms.items()}


def _cut(sentence: str, limit: int) -> str:
    if len(sentence) <= limit:
        return sentence
    head = sentence[: limit - 1]
    if not has_cjk(head) and " " in head:
        head = head[: head.rindex(" ")]  # do not cut an English word in half
    return _TRAILING_PUNCT.sub("", head) + "…"


def _centrality(episode: Episode) -> dict[str, float]:
    if episode.centroid is None:
        return {}
    centroid = episode.centroid.astype(np.float64)
    return {m.event_id: float(np.dot(m.vector.astype(np.float64), centroid)) for m in episode.members if m.vector is not None}


def summarize(
    episode: Episode,
    messages: Mapping[str, StoredMessage],
    corpus: LexicalIndex,
    config: SummaryConfig = DEFAULT_SUMMARY,
) -> EpisodeSummary:
    """Title, keywords and the most central sentences of ``episode``.

    ``messages`` maps event ids to stored messages (``MessageStore.by_id``);
    members it lacks are skipped. The same inputs always give the same summary.
    """
    stored = [messages[m] for m in episode.member_ids if m in messages]
    quotable = [m for m in stored if m.role not in config.skip_roles] or stored
    texts = [m.text for m in quotable]
    language = language_of(texts)
    weights = keyword_weights(texts, corpus, config)
    surface = _surface_forms(texts)
    keywords = tuple(surface.get(t, t) for t in list(weights)[: config.keywords])

    pool = list(weights.items())[: 2 * config.keywords]  # sentences are scored on a few more terms than shown
    top = pool[0][1] if pool else 1.0
    scale = {term: w / top for term, w in pool}
    central = _centrality(episode)
    candidates = []  # (score, position, sentence, message)
    for msg in quotable:
        for sentence in split_sentences(msg.text):
            score = sum(scale.get(t, 0.0) for t in sorted(set(tokenize(sentence))))  # fixed order: not the str hash's
            score += config.centrality_weight * central.get(msg.event_id, 0.0)
            candidates.append((score, len(candidates), sentence, msg))
    best = sorted(candidates, key=lambda c: (-c[0], c[1]))[: config.sentences]
    chosen = sorted(best, key=lambda c: c[1])  # conversation order reads better than score order

    def quote(sentence: str, msg: StoredMessage) -> str:
        cut = _cut(sentence, config.sentence_chars)
        return f"{msg.speaker}: {cut}" if config.with_speaker and msg.speaker else cut

    separator = "、" if language == "zh" else ", "
    title = separator.join(keywords[: config.title_keywords])
    if language == "en" and title[:1].islower():
        title = title[0].upper() + title[1:]
    return EpisodeSummary(
        episode_id=episode.episode_id,
        language=language,
        title=title,
        keywords=keywords,
        sentences=tuple(quote(s, m) for _, _, s, m in chosen),
        source_ids=tuple(m.event_id for _, _, _, m in chosen),
    )


def episode_document(episode: Episode, messages: Mapping[str, StoredMessage]) -> str:
    """The episode's member messages as one text (``speaker: text`` lines), for a lexical index of episodes."""
    return "\n".join(messages[m].index_text for m in episode.member_ids if m in messages)
