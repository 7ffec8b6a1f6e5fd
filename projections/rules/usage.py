"""Offline usage judge: which retrieved memories a reply actually drew on (seed 002).

Seed 002: a memory retrieved for a turn counts as *used* only when it shaped
the reply ("the user likes cats" retrieved while the assistant talks about the
weather is not used). Without a language model the evidence is lexical: a
retrieved item (a note or a message) is used when the reply repeats its
content terms.

- An item's content terms are its key terms
  (:func:`projections.rules.extraction.key_terms`: stop words, the rules' verbs,
  "user"/"用户" and time words left out), minus ``ignore`` (e.g. how the
  assistant addresses the user, "主人", which a reply repeats whatever it is
  about). Tokens come from :func:`projections.rules.text.tokenize`, so English is
  lightly stemmed and Chinese is segmented by jieba.
- A term is in the reply when the reply has the same token or, for Chinese
  words of two or more characters, one contains the other (jieba cuts "喝咖啡"
  in a note and "咖啡" in a reply).
- score = matched terms / min(number of terms, :data:`MAX_TERMS`): a short
  note must be repeated by half, a long message by two of its terms.
- Used when score ≥ ``threshold`` (:data:`USAGE_THRESHOLD` = 0.5) and at least
  one term matched. Paraphrases and synonyms ("很紧张" answered by "别这么绷着")
  are missed: that judgement needs a language model.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from projections.rules.extraction import key_terms
from projections.rules.text import has_cjk, tokenize

USAGE_THRESHOLD = 0.5
MAX_TERMS = 4  # a long message counts as used once the reply repeats two of its terms (2 / 4 = 0.5)


def _cjk_hit(term: str, reply: str, words: Sequence[str]) -> bool:
    if not (has_cjk(term) and len(term) > 1):
        return False
    return term in reply or any(w in term for w in words)


def usage_score(reply: str, text: str, *, ignore: Iterable[str] = ()) -> float:
    """The share of ``text``'s content terms that ``reply`` repeats, counting at most :data:`MAX_TERMS` terms."""
    skip = {t for word in ignore for t in tokenize(word)}
    terms = [t for t in key_terms(text) if t not in skip]
    if not terms:
        return 0.0
    said, lowered = set(tokenize(reply)), reply.lower()
    words = [w for w in said if has_cjk(w) and len(w) > 1]
    matched = sum(1 for t in terms if t in said or _cjk_hit(t, lowered, words))
    return min(1.0, matched / min(len(terms), MAX_TERMS))


def judge_usage(
    reply: str, items: Sequence[tuple[str, str]], *, threshold: float = USAGE_THRESHOLD, ignore: Iterable[str] = ()
) -> list[tuple[str, float]]:
    """(id, score) of the retrieved ``items`` (id, text) that ``reply`` drew on, best first, ties in input order."""
    ignore = tuple(ignore)
    scored = [(item_id, usage_score(reply, text, ignore=ignore)) for item_id, text in items]
    used = [(item_id, score) for item_id, score in scored if score > 0.0 and score >= threshold]
    return sorted(used, key=lambda pair: -pair[1])
