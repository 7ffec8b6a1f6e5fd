"""How much of a turn its notes carry: the share of the turn's content terms that its notes state, and what they
leave out.

A context lets a note stand for its source turn only when the notes carry all of the turn
(:func:`projections.queries.context.assemble`): "I'm vegetarian and I hate cilantro" is not stated by the note
"Alice hates cilantro" alone. Content terms are the key terms of the extraction rules
(:func:`projections.rules.extraction.key_terms`: stop words and the rules' own verbs left out, English words
lemmatised, Chinese cut by jieba) of what the turn states: its questions and hypotheticals ("what kind of art
do you do?", "如果…") are not statements a context could lose
(:func:`projections.rules.extraction.split_statements`). A Chinese term counts as carried when each of its characters is in the notes'
text, so that two cuts of the same words ("叫 小 李" and "小 李叫") still match. Greetings, thanks, farewells and
exclamations ("Thanks, Maria!", "Wow, that's awesome", "谢谢", "加油") state nothing either (:func:`statements`).
:func:`uncarried` gives the clauses the notes leave out, so that a context can show those beside the note instead of
the whole turn.
"""

from __future__ import annotations

from collections.abc import Sequence

from projections.rules.extraction import key_terms, split_statements
from projections.rules.text import has_cjk

# The key terms of the formulas of an exchange (greetings, thanks, farewells, exclamations), English and Chinese: a
# clause of only these states nothing, nor does a name said beside it ("Thanks, Maria").
FORMULA_TERMS = frozenset("""thank thanks bye goodbye hello hey hi yep yeah yes nope awesome cool nice amaz good great
    luck cheer haha hahaha lol omg glad wow congrat congratulation sweet lovely wonderful fantastic incredible
    谢谢 哈哈 哈哈哈 好 太棒了 加油 再见 拜拜 不错 恭喜 嗯 哇""".split())
FORMULA_WORDS = frozenset("hey hi hello thanks thank wow bye yep yeah congrats congratulations".split())
FRAGMENT = " … "  # joins the clauses of a turn its notes leave out (and opens the line: the rest is in the notes)


def _carried(notes: Sequence[str]):
    stated = {t for note in notes for t in key_terms(note)}
    chars = set("".join(notes))
    return lambda term: term in stated or (has_cjk(term) and set(term) <= chars)


def _formula(clause: str, terms: tuple[str, ...]) -> bool:
    """A clause of only exchange formulas and stop words ("That's awesome", "Wow"), or of a formula and one name
    ("Thanks Nate", "Hey Maria")."""
    rest = [t for t in terms if t not in FORMULA_TERMS]
    words = clause.split()
    said = any(w.lower().strip("!,.") in FORMULA_WORDS for w in words)
    if not rest:
        return bool(terms) or said
    return (said and len(rest) == 1 and len(words) <= 3
            and any(w[:1].isupper() and w.lower().strip("!,.") == rest[0] for w in words))


def statements(text: str) -> tuple[str, ...]:
    """The clauses of ``text`` that state something: its asserted clauses
    (:func:`~projections.rules.extraction.split_statements`) without the formulas of an exchange ("That's
    awesome", "Thanks Nate") and a lone name beside one ("Thanks, Maria")."""
    clauses = split_statements(text)
    terms = [key_terms(c) for c in clauses]
    formula = [_formula(c, t) for c, t in zip(clauses, terms)]
    out = []
    for n, clause in enumerate(clauses):
        beside = (n > 0 and formula[n - 1]) or (n + 1 < len(clauses) and formula[n + 1])
        if formula[n] or (beside and len(terms[n]) == 1 and " " not in clause and clause[:1].isupper()):
            continue
        out.append(clause)
    return tuple(out)


def carried_share(text: str, notes: Sequence[str]) -> float:
    """The share of the content terms of what ``text`` states (:func:`statements`) that the ``notes`` state (1.0
    when it states nothing)."""
    terms = tuple(dict.fromkeys(t for clause in statements(text) for t in key_terms(clause)))
    if not terms:
        return 1.0
    carried = _carried(notes)
    return sum(1 for t in terms if carried(t)) / len(terms)


def uncarried(text: str, notes: Sequence[str]) -> str | None:
    """What of ``text`` the ``notes`` do not state: ``text`` itself when they carry none of its clauses whole, the
    clauses they do not carry whole (opened and joined by :data:`FRAGMENT`) when they carry some, None when they
    carry all of it. A clause is carried whole when the notes state each of its content terms."""
    clauses = statements(text)
    carried = _carried(notes)
    left = [c for c in clauses if not all(carried(t) for t in key_terms(c))]
    if not left:
        return None
    if len(left) == len(split_statements(text)):
        return text
    return FRAGMENT.lstrip() + FRAGMENT.join(left)
