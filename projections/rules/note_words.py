"""What a note is about besides its own words (``rules-v1``): the words a question about it would use.

"Do I have any food allergies?" asks for "Tom is allergic to kiwi", "which city do I live in?" for "Tom moved to
Denver", "which food do I hate?" for "Tom can't stand olives", "what database does Falcon use?" for "For Falcon we
picked Cassandra". A note's words are those of its slot (:data:`~projections.rules.note_rules.SLOT_WORDS`), of a
dislike (:data:`~projections.rules.note_rules.AVERSION_WORDS`) and of the kinds its key terms are members of
(:data:`~projections.rules.note_rules.KIND_TABLE`: MySQL is a database). They go to the notes' BM25 index and to
the fact key of the note's turns, never to its key terms (two notes sharing "city" are not about one thing). A
pure function of the note's recorded fields, so a replay reads the same words.
"""

from __future__ import annotations

import re
from functools import cache

from projections.rules.note_rules import AVERSION_WORDS, KIND_TABLE, SLOT_WORDS
from projections.rules.text import tokenize


@cache
def _kind_nouns() -> dict[str, str]:
    """A member's token (and a kind noun's) → the nouns that name its kind ("mysql" → "database db 数据库")."""
    out: dict[str, str] = {}
    for entry in re.split(r"\n(?=\w+:)", KIND_TABLE.strip()):
        _, words = entry.split(":", 1)
        names, members = words.split("|")
        for token in tokenize(members):
            out.setdefault(token, " ".join(names.split()))
    return out


def about_words(language: str, slot: str | None, category: str, polarity: str, key_terms: tuple[str, ...]) -> str:
    """The words a note is about besides its text, space-separated ("" for most notes)."""
    words = [SLOT_WORDS.get(language, {}).get(slot or "", "")]
    if category == "preference" and polarity == "negative":
        words.append(AVERSION_WORDS.get(language, ""))
    nouns = _kind_nouns()
    words += dict.fromkeys(nouns[t] for t in key_terms if t in nouns)
    return " ".join(w for w in words if w)
