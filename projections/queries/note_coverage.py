"""How much of a turn its notes carry: the share of the turn's content terms that its notes state.

A context lets a note stand for its source turn only when the notes carry all of the turn
(:func:`projections.queries.context.assemble`): "I'm vegetarian and I hate cilantro" is not stated by the note
"Alice hates cilantro" alone. Content terms are the key terms of the extraction rules
(:func:`projections.rules.extraction.key_terms`: stop words and the rules' own verbs left out, English words
lemmatised, Chinese cut by jieba) of what the turn states: its questions and hypotheticals ("what kind of art
do you do?", "如果…") are not statements a context could lose
(:func:`projections.rules.extraction.split_statements`). A Chinese term counts as carried when each of its characters is in the notes'
text, so that two cuts of the same words ("叫 小 李" and "小 李叫") still match.
"""

from __future__ import annotations

from collections.abc import Sequence

from projections.rules.extraction import key_terms, split_statements
from projections.rules.text import has_cjk


def carried_share(text: str, notes: Sequence[str]) -> float:
    """The share of the content terms of what ``text`` states that the ``notes`` state (1.0 when it states
    nothing)."""
    terms = tuple(dict.fromkeys(t for clause in split_statements(text) for t in key_terms(clause)))
    if not terms:
        return 1.0
    stated = {t for note in notes for t in key_terms(note)}
    chars = set("".join(notes))
    carried = sum(1 for t in terms if t in stated or (has_cjk(t) and set(t) <= chars))
    return carried / len(terms)
