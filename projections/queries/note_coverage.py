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

import re
from collections.abc import Sequence

from projections.rules.extraction import key_terms, split_statements
from projections.rules.text import has_cjk, text_memo

# Every context asks the same turns again for their clauses and terms (which never change): a memo of user text,
# emptied with the rules' other memos when a user is forgotten (``text_memo``).
MEMO = 65_536

# The key terms of the formulas of an exchange (greetings, thanks, farewells, exclamations), English and Chinese: a
# clause of only these states nothing, nor does a name said beside it ("Thanks, Maria").
FORMULA_TERMS = frozenset("""thank thanks bye goodbye hello hey hi yep yeah yes nope awesome cool nice amaz good great
    luck cheer haha hahaha lol omg glad wow congrat congratulation sweet lovely wonderful fantastic incredible
    谢谢 哈哈 哈哈哈 好 太棒了 加油 再见 拜拜 不错 恭喜 嗯 哇""".split())
FORMULA_WORDS = frozenset("hey hi hello thanks thank wow woah whoa oh aw aww bye yep yeah congrats congratulations"
                          .split())
# Whole clauses that keep up a conversation and say nothing of anyone's life: openers and links ("Long time no see",
# "By the way", "Anyway"), sign-offs, reactions to what the other said ("That sounds awesome", "I'm sorry to hear
# that") and thanks for a word or a wish ("Your support means a lot", "Thanks for asking").
FORMULA_CLAUSE = re.compile(
    r"(?:(?:hey|hi|oh|wow|woah|so|well|and|yeah|anyway)\s+)*(?:"
    r"long time no (?:see|talk|chat|speak)|(?:great|good|nice|so good) to (?:hear from you|hear that|see you)"
    r"|great to hear|good to hear|talk (?:to you )?(?:soon|later)|see (?:you|ya)(?: soon| later)?|take care"
    r"|by the way|btw|anyway|anyways|on another note|well|plus|for sure|sure|of course|way to go|keep it up"
    r"|(?:thanks|thank you) (?:so much )?for (?:asking|sharing|the (?:advice|tips?|support|suggestions?|kind words"
    r"|new year's wishes|wishes))|(?:i )?hope (?:you're|you are|all's|all is|everything's|everything is|you've been)"
    r" (?:doing )?(?:good|ok|okay|well|great|fine)|since (?:we last (?:spoke|chatted|talked)|our last (?:chat|talk))"
    r"|(?:(?:that|it|this|that all|that's|it's|this is) )?(?:sounds|looks|seems|is)? ?(?:so |really |absolutely "
    r"|pretty |super |just )?(?:awesome|great|amazing|fantastic|lovely|wonderful|fun|cool|nice|good|incredible"
    r"|gorgeous|stunning|beautiful|like a blast|like fun)|i'm (?:so )?sorry to hear (?:that|this)"
    r"|(?:i )?can't wait|(?:your (?:words|support|kindness|backing)|it|that) (?:really )?means? (?:a lot|so much)"
    r"(?: to me)?|(?:i )?(?:really )?appreciate (?:it|that|your (?:help|support|kind words|words|kindness))"
    r"|no worries|no problem|nice one|you rock|you got this|sure thing|yay|speaking of which"
    r"|check (?:it|this|that) out|(?:take a )?look at (?:this|that)|take a look"
    r")(?:\s+(?:too|though|mate|buddy))?",
    re.IGNORECASE,
)
CAPTION = re.compile(r"^\[image:\s*(.*?)\]?$")  # a picture's caption: its words, not the framing, are what it states
FRAGMENT = " … "  # joins the clauses of a turn its notes leave out (and opens the line: the rest is in the notes)


def _carried(notes: Sequence[str]):
    stated = {t for note in notes for t in key_terms(note)}
    chars = set("".join(notes))
    return lambda term: term in stated or (has_cjk(term) and set(term) <= chars)


def _formula(clause: str, terms: tuple[str, ...]) -> bool:
    """A clause of only exchange formulas and stop words ("That's awesome", "Wow"), or of a formula and one name
    ("Thanks Nate", "Hey Maria")."""
    if FORMULA_CLAUSE.fullmatch(clause):
        return True
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


def content_terms(clause: str) -> tuple[str, ...]:
    """The key terms of what ``clause`` states (of a picture's caption, its words without the framing)."""
    caption = CAPTION.match(clause)
    return key_terms(caption.group(1) if caption else clause)


@text_memo(MEMO)
def _stated(text: str) -> tuple[tuple[tuple[str, tuple[str, ...]], ...], int]:
    """Each clause of what ``text`` states with its content terms, and how many clauses ``text`` has in all."""
    return tuple((c, content_terms(c)) for c in statements(text)), len(split_statements(text))


def carried_share(text: str, notes: Sequence[str]) -> float:
    """The share of the content terms of what ``text`` states (:func:`statements`) that the ``notes`` state (1.0
    when it states nothing)."""
    terms = tuple(dict.fromkeys(t for _, clause_terms in _stated(text)[0] for t in clause_terms))
    if not terms:
        return 1.0
    carried = _carried(notes)
    return sum(1 for t in terms if carried(t)) / len(terms)


def uncarried(text: str, notes: Sequence[str]) -> str | None:
    """What of ``text`` the ``notes`` do not state: ``text`` itself when they carry none of its clauses whole, the
    clauses they do not carry whole (opened and joined by :data:`FRAGMENT`) when they carry some, None when they
    carry all of it. A clause is carried whole when the notes state each of its content terms."""
    stated, clause_count = _stated(text)
    carried = _carried(notes)
    left = [c for c, terms in stated if not all(carried(t) for t in terms)]
    if not left:
        return None
    if len(left) == clause_count:
        return text
    return FRAGMENT.lstrip() + FRAGMENT.join(left)
