"""Offline note extraction from one message, English and Chinese (``rules-v1``).

A pure, deterministic function of the text (and, optionally, the message
before it): the same input always yields the same candidate notes. The
candidates are meant to be recorded once as events; replay reads the record
and never runs these rules again, so changing a rule (the tables live in
:mod:`projections.rules.note_rules`) means a new extractor id.

How a message is read:

1. Split into sentences; drop questions ("should we use X?", "要不要用X") and
   hypotheticals ("if we decided…", "如果…", "maybe…").
2. Split each sentence into clauses (commas, "… and I …", "但是我…").
3. Try the rules in order (preference, decision, constraint, fact; English,
   then Chinese); the first match of a clause wins.
4. Render a standalone statement in the rule's language — "I prefer X" →
   "The user prefers X", "我们决定改用 X" → "决定：改用 X". Nothing is translated.
5. Keep it only when it has key terms (what it is about). An anaphor ("let's
   go with that", "就用这个") is resolved from a proposal in the previous
   message ("should we use PostgreSQL?"), or the candidate is dropped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import Literal

from projections.rules.note_rules import (
    ANAPHOR,
    EN_RULES,
    EN_TRIGGER,
    GENERIC_WORDS,
    SAFETY_SLOTS,
    SLOT_WORDS,
    HYPOTHETICAL,
    NEGATION,
    PROPOSALS,
    QUESTION,
    THIRD_PERSON,
    ZH_RULES,
    Category,
    Polarity,
    Rule,
)
from projections.rules.graph_chinese import tag_cache_clear
from projections.rules.term_match import cache_clear as term_cache_clear
from projections.rules.text import has_cjk, rule_text, said_text, text_caches_clear, text_tokens, tokenize

EXTRACTOR_ID = "rules-v1"
CATEGORIES: tuple[str, ...] = ("preference", "decision", "constraint", "fact")
# Slots that hold one value at a time: a new value supersedes the old one.
EXCLUSIVE_SLOTS: tuple[str, ...] = ("birthday", "name", "residence", "employer", "occupation", "age", "origin")


@dataclass(frozen=True)
class CandidateNote:
    """A note proposed by the extractor; it becomes a note only when recorded as an event."""

    category: Category
    text: str  # standalone statement in the language of the message
    subject: str  # "user" or the speaker's name
    key_terms: tuple[str, ...]  # what the note is about, e.g. ("postgresql",) or ("数据库",)
    polarity: Polarity
    confidence: float
    language: Literal["en", "zh"]
    evidence: str  # the clause of the message the note was read from
    slot: str | None = None  # e.g. "residence", "favourite:color"; None unless a one-line fact
    value: str | None = None  # the slot's value as written ("Berlin", "三月五日")
    extractor: str = EXTRACTOR_ID


@cache
def generic_terms() -> frozenset[str]:
    """The tokens of GENERIC_WORDS (on first use: tokenizing loads jieba's dictionary, which importing should not)."""
    return frozenset(t for word in GENERIC_WORDS.split() for t in tokenize(word))


@cache
def generic_latin_terms() -> frozenset[str]:
    """The tokens of GENERIC_WORDS' non-Chinese words: all the generic tokens a text without Chinese can hold.

    Read without jieba, so a shard that only sees such texts never loads its dictionary (1.5 s of CPU per
    process). A Chinese word's tokens are Chinese, a non-Chinese word's are not (``tokenize`` splits on
    Chinese runs), so this is exactly ``generic_terms()`` minus the tokens with Chinese characters."""
    return frozenset(t for word in GENERIC_WORDS.split() if not has_cjk(word) for t in tokenize(word))


_GO_LANGUAGE = re.compile(r"(?<![\w.])Go\b(?!\s+(?:with|to|for|ahead|back|on)\b)")  # the language, not the verb
_TIME_TERM = re.compile(r"^(?:\d+|[一二两三四五六七八九十几]+)(?:天|周|个月|年|小时|分钟|星期)(?:前|后)?$")
_SENTENCE = re.compile(r"(?:[^.!?。！？；;\n]|\.(?!\s|$))+[.!?。！？；;]*")  # "Node.js 18.2" is one sentence
_CLAUSE_BREAK = re.compile(r"[,，、]|(?<!\s)\s+(?:but|and|so)\s+(?=(?:i|we|my|let's)\b)|(?:但是|但|而且|并且|所以)(?=我)",
                           re.IGNORECASE)
_EN_TRAILER = re.compile(  # "… too", "… last year": not part of what is stated
    r"(?:\s+(?:too|as\s+well|though|lol|haha|anyway|please|now|today|yesterday|recently|these\s+days"
    r"|(?:last|this)\s+(?:week|month|year|spring|summer|autumn|fall|winter)"
    r"|\w+\s+(?:days?|weeks?|months?|years?)\s+ago))+$",
    re.IGNORECASE,
)
_ZH_TRAILER = re.compile(r"[吧啊呀哦啦嘛了哈的]+$")
_EN_LEAD_SUBJECT = re.compile(r"^(?:(?:we|you|please)\s+)+", re.IGNORECASE)
_ZH_LEAD_SUBJECT = re.compile(r"^(?:我们|咱们|大家|你们|你|请)+")


@lru_cache(maxsize=8192)
def key_terms(text: str) -> tuple[str, ...]:
    """The tokens of ``text`` that say what it is about, in first-seen order (memoised: a message's text is read
    by its classification, its note candidates and the contradiction rules; MemDaily dev: 15,559 calls for
    5,269 messages).

    Stop words, the rules' own verbs ("prefer", "decided", "改用") and time
    words ("now", "十天") are left out; "Go" the language becomes "golang".
    """
    seen: dict[str, None] = {}
    generic = generic_terms() if has_cjk(text) else generic_latin_terms()
    for token in text_tokens(_GO_LANGUAGE.sub("golang", text)):  # memoised: the lexical folds read it again
        if token not in generic and not _TIME_TERM.match(token):
            seen.setdefault(token, None)
    return tuple(seen)


def polarity(text: str) -> Polarity:
    """``negative`` when the text is negated ("don't", "never", "不", "没", "禁止"…), else ``positive``."""
    return "negative" if NEGATION.search(text) else "positive"


def split_statements(text: str) -> tuple[str, ...]:
    """The asserted clauses of ``text``: questions and hypotheticals dropped, end punctuation stripped."""
    clauses: list[str] = []
    for sentence in _SENTENCE.findall(text.replace("’", "'")):
        if QUESTION.search(sentence) or HYPOTHETICAL.search(sentence):
            continue
        for clause in _CLAUSE_BREAK.split(sentence):
            clause = clause.strip(" \t.!。！；;~…")
            if clause:
                clauses.append(clause)
    return tuple(clauses)


def _join(head: str, tail: str) -> str:
    """Concatenate, with a space where Chinese meets Latin ("用" + "PostgreSQL" → "用 PostgreSQL")."""
    if head and tail and has_cjk(head[-1]) != has_cjk(tail[0]) and not head[-1].isspace():
        return f"{head} {tail}"
    return head + tail


def _proposal(previous: str | None) -> str | None:
    for pattern in PROPOSALS if previous else ():
        match = pattern.search(previous)
        if match and key_terms(match.group("x")):
            return match.group("x").strip()
    return None


def _object(rule: Rule, match: re.Match[str]) -> str:
    obj = match.group("o").strip()
    zh = rule.language == "zh"
    if rule.category == "constraint" or (zh and rule.category == "decision"):
        obj = (_ZH_LEAD_SUBJECT if zh else _EN_LEAD_SUBJECT).sub("", obj)  # "我们不能…" → "不能…"
    obj = obj.strip(" \t\"'“”.,!?。，！？；;：:")
    return _ZH_TRAILER.sub("", obj).strip() if zh else _EN_TRAILER.sub("", obj)


def _third_person(obj: str, zh: bool, label: str) -> str:
    """First-person words inside the object, rewritten for a statement about the subject."""
    if zh:
        return re.sub(r"我(?!们)", label, obj)
    for pattern, repl in ((r"\bmy\b", "their"), (r"\bme\b", "them"), (r"\bmyself\b", "themselves")):
        obj = re.sub(pattern, repl, obj, flags=re.IGNORECASE)
    return obj


def _candidate(
    rule: Rule, match: re.Match[str], clause: str, subject: str, previous: str | None, anaphors: list[str]
) -> CandidateNote | None:
    zh = rule.language == "zh"
    label = ("用户" if zh else "The user") if subject == "user" else subject
    obj, confidence = _object(rule, match), rule.confidence
    if anaphor := ANAPHOR.match(obj):
        anaphors.append(obj)
        resolved = _proposal(previous)
        if resolved is None:
            return None  # "let's go with that" says nothing on its own
        obj, confidence = _join(obj[: anaphor.start("a")], resolved), confidence - 0.1
    terms = key_terms(obj)
    if not terms:
        return None  # "I love it here", "我不要了": nothing to remember
    fields = match.groupdict()
    base = re.sub(r"\s+", " ", fields.get("v") or "")
    thing = re.sub(r"\s+", " ", (fields.get("t") or "").strip().lower())
    verb = base if zh else THIRD_PERSON.get(base.lower(), base)
    text = rule.template.format(s=label, o=_third_person(obj, zh, label), v=verb, b=base.lower(), t=thing)
    slot = rule.slot.format(t=thing) if rule.slot else None
    if rule.slot and "{t}" in rule.slot:  # "my favourite colour is blue" is about colour as well as blue
        terms = tuple(dict.fromkeys(key_terms(thing) + terms))
    if rule.slot in SAFETY_SLOTS and (words := SLOT_WORDS[rule.language].get(rule.slot)):  # what it is about
        terms = tuple(dict.fromkeys(terms + tuple(words.split())))
    return CandidateNote(
        category=rule.category, text=text, subject=subject, key_terms=terms,
        polarity=rule.polarity or polarity(obj), confidence=round(confidence, 2), language=rule.language,
        evidence=clause, slot=slot, value=obj if slot else None,
    )


def extract_notes(text: str, *, speaker: str | None = None, previous: str | None = None) -> tuple[CandidateNote, ...]:
    """Candidate notes stated in ``text``, in message order, without duplicates; empty when nothing stable is said.

    ``speaker`` names the subject (default ``"user"``); ``previous`` is the
    message before, used only to resolve "let's go with that" / "就用这个".
    """
    notes, anaphoric = _extract_notes(text, speaker, None)
    if not anaphoric or previous is None:  # the previous message is read only to resolve an anaphor
        return notes
    return _extract_notes(text, speaker, previous)[0]


# A message is read here more than once: by the note decisions when it is recorded, then by the distillation of its
# session (with another message before it, at a session's start), and a note's text each time a new statement is
# compared with it. The result is immutable (frozen notes).
@lru_cache(maxsize=8192)
def _extract_notes(text: str, speaker: str | None, previous: str | None) -> tuple[tuple[CandidateNote, ...], bool]:
    """The notes, and whether a candidate's object was an anaphor (then ``previous`` decided whether it stays)."""
    subject = speaker or "user"
    found: dict[str, CandidateNote] = {}
    anaphors: list[str] = []
    previous = None if previous is None else rule_text(said_text(previous))
    for clause in split_statements(rule_text(said_text(text))):
        for rule, gate in _RULE_SETS[EN_TRIGGER.search(clause) is not None, has_cjk(clause)]:
            if (gate is None or gate.search(clause)) and (match := rule.pattern.search(clause)):
                if note := _candidate(rule, match, clause, subject, previous, anaphors):
                    found.setdefault(note.text, note)
                break
    return tuple(found.values()), bool(anaphors)


_LAZY_HEAD, _TAIL = "(?P<o>.*?", ".+)"


def _gate(rule: Rule) -> re.Pattern[str] | None:
    """For a rule ``(?P<o>.*?X.+)`` ("…不能…", "…改用…", "…必须…"): ``X.``, found in a clause exactly when the rule
    matches it. ``search`` retries the lazy ``.*?`` from every start, so a clause the rule misses (most) costs
    time quadratic in its length, the gate linear: the rule loop over the MemDaily dev file's 6,858 clauses took
    82 ms, 31 ms with the gates (best of 5). None for any other rule."""
    p = rule.pattern.pattern
    # X is one group, "(?:a|b|c)", lookarounds inside it allowed ("(?<!舍)不得(?!不)")
    if p.startswith(_LAZY_HEAD) and p.endswith(_TAIL) and p.count("(") - p.count("(?<") - p.count("(?!") == 2:
        return re.compile(p[len(_LAZY_HEAD):-len(_TAIL)] + ".", rule.pattern.flags)
    return None


_RULE_SETS = {
    (en, zh): tuple((rule, _gate(rule)) for rule in (EN_RULES if en else ()) + (ZH_RULES if zh else ()))
    for en in (True, False) for zh in (True, False)
}


def forget_text_caches() -> None:
    """Empty the memos that hold message texts (:func:`key_terms`, the note extraction, the tokenizer's runs and
    queries, the graph rules' clause tags, the key-term matcher's): an erasure leaves no copy of a forgotten user's
    words in the process."""
    key_terms.cache_clear()
    _extract_notes.cache_clear()
    text_caches_clear()
    tag_cache_clear()
    term_cache_clear()
