"""Rule-based contradiction detector for notes, English and Chinese (``rules-v1``).

The offline fallback for the NLI / LLM judge: given a new statement (an
extracted candidate note or a raw message) and the active notes, it returns
one verdict per note. Pure and deterministic; verdicts are meant to be
recorded once as events (a superseded note gets valid-to and superseded-by,
it is never deleted), so changing a rule means a new detector id.

Rules, tried in this order for each (statement, note) pair; the first that
applies decides:

1. state — both are states or moods ("tense ten days ago" / "relaxed now",
   "主人十天前很紧张" / "主人现在很放松"): both were true at their own times,
   so CHANGE_OVER_TIME, never SUPERSEDES (seed 002). The same state again reinforces.
2. switch — "switch to / replace / migrate to / move from A to B / no longer /
   改用 / 换成 / 不再 / 从A换到B": a note naming A is superseded; so is a note
   naming something of the same kind as B (MySQL and PostgreSQL are both
   databases) — how "we decided to switch to MySQL" supersedes "the project
   uses PostgreSQL" (seed 000).
3. slot — the same one-valued slot with another value ("I live in Paris" →
   "I live in Berlin") or negated supersedes; the same value reinforces.
4. negation — opposite polarity over the same key terms ("I like X" / "I don't
   like X", "我喜欢X" / "我不喜欢X") supersedes.
5. duplicate — same category and polarity, high key-term overlap: REINFORCES (BOOST).
6. otherwise CONSISTENT.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from enum import StrEnum

from projections.rules.extraction import (
    EXCLUSIVE_SLOTS,
    CandidateNote,
    extract_notes,
    key_terms,
    polarity,
    split_statements,
)
from projections.rules.note_rules import EN_SWITCH, KIND_TABLE, STATE_WORDS, TIME, ZH_SWITCH
from projections.rules.term_match import cjk as _cjk
from projections.rules.term_match import covers as _covers
from projections.rules.term_match import hit as _hit
from projections.rules.term_match import index as _index
from projections.rules.term_match import jaccard as _jaccard
from projections.rules.term_match import matches as _matches
from projections.rules.text import has_cjk, text_memo, text_tokens, tokenize

DETECTOR_ID = "rules-v1"
REINFORCE_JACCARD = 0.6  # key-term overlap for a restatement
NEGATION_JACCARD = 0.5  # key-term overlap for "I like X" / "I don't like X"


class Relation(StrEnum):
    SUPERSEDES = "supersedes"  # the new statement replaces the note
    REINFORCES = "reinforces"  # a restatement: boost the note, add nothing
    CONSISTENT = "consistent"  # unrelated or compatible
    CHANGE_OVER_TIME = "change_over_time"  # both true at their own times: keep both


@dataclass(frozen=True)
class ActiveNote:
    """What the detector needs to know about an active note; fields left empty are read from ``text``."""

    note_id: str
    text: str
    category: str | None = None
    key_terms: tuple[str, ...] = ()
    polarity: str | None = None
    slot: str | None = None
    value: str | None = None
    subject: str = "user"

    @classmethod
    def from_candidate(cls, note_id: str, note: CandidateNote) -> ActiveNote:
        """The active note recorded from an extracted candidate, keeping the extractor's analysis."""
        return cls(note_id, note.text, note.category, note.key_terms, note.polarity, note.slot, note.value,
                   note.subject)


@dataclass(frozen=True)
class Verdict:
    """How a new statement relates to one active note, which rule said so, and on which terms."""

    note_id: str
    relation: Relation
    rule: str  # "state", "switch", "slot", "negation", "duplicate" or "none"
    reason: str
    matched_terms: tuple[str, ...]
    confidence: float
    detector: str = DETECTOR_ID


@dataclass(frozen=True)
class _Statement:
    category: str | None
    terms: tuple[str, ...]
    polarity: str
    slot: str | None
    value_terms: tuple[str, ...]
    subject: str
    states: frozenset[str]
    residual: tuple[str, ...]  # key terms that are not states: who or what the state is about
    times: tuple[str, ...]
    switch_from: tuple[str, ...]
    switch_to: tuple[str, ...]
    switch_kinds: frozenset[str]


def _kind_table(table: str, split=tokenize) -> tuple[dict[str, frozenset[str]], frozenset[str]]:
    """Token → kinds, and the tokens that name a kind; words go through the tokenizer so stems match."""
    kinds: dict[str, frozenset[str]] = {}
    nouns: set[str] = set()
    for entry in re.split(r"\n(?=\w+:)", table.strip()):
        kind, words = entry.split(":", 1)
        names, members = words.split("|")
        nouns |= set(split(names))
        for token in split(f"{names} {members}"):
            kinds[token] = kinds.get(token, frozenset()) | {kind}
    return kinds, frozenset(nouns)


@lru_cache(maxsize=1)
def _tables() -> tuple[dict[str, frozenset[str]], frozenset[str], frozenset[str]]:
    """Kinds by token, the tokens that name a kind, and the state words: built on first use (tokenizing Chinese
    loads jieba's dictionary, which importing this module should not)."""
    kinds, nouns = _kind_table(KIND_TABLE)
    return kinds, nouns, frozenset(tokenize(STATE_WORDS))


def _no_chinese(text: str) -> list[str]:
    return tokenize(text, chinese=lambda run: [])


@lru_cache(maxsize=1)
def _latin_tables() -> tuple[dict[str, frozenset[str]], frozenset[str], frozenset[str]]:
    """:func:`_tables` without the tokens that hold Chinese characters, read without jieba: all a term without
    Chinese can match (a Chinese token matches another only by containment, and a run of Chinese characters
    only ever yields Chinese tokens). A shard that sees no Chinese never loads jieba's dictionary (1.3 s)."""
    kinds, nouns = _kind_table(KIND_TABLE, _no_chinese)
    return kinds, nouns, frozenset(_no_chinese(STATE_WORDS))


def state_words() -> frozenset[str]:
    """The tokens of STATE_WORDS ("busy", "tired", "忙", ...)."""
    return _tables()[2]


_DEGREE = re.compile(r"^(?:很|太|好|真|超|挺|特别|非常|有点|有些|比较)")


@text_memo(65_536)
def _term_kinds(term: str) -> frozenset[str]:
    if not _cjk(term):
        return _latin_tables()[0].get(term, frozenset())
    return frozenset(k for word, kinds in _tables()[0].items() if _hit(word, term) for k in kinds)


def _kinds(terms: Sequence[str]) -> frozenset[str]:
    return frozenset().union(*map(_term_kinds, terms))


@text_memo(65_536)
def _state_words(word: str) -> frozenset[str]:
    # One-character states count only as whole words (after 很/太…): 很累 is a state, 积累 is not.
    word = _DEGREE.sub("", word) or word
    if not _cjk(word):  # a word without Chinese holds no Chinese state: it is one, or none
        return frozenset((word,)) & _latin_tables()[2]
    return frozenset(s for s in _tables()[2] if word == s or (len(s) > 1 and has_cjk(s) and s in word))


def _switch(clause: str) -> tuple[tuple[str, ...], tuple[str, ...], frozenset[str]]:
    """What ``clause`` moves away from, what it moves to, and the kinds involved; empty when it is no switch."""
    for pattern in ZH_SWITCH + EN_SWITCH if has_cjk(clause) else EN_SWITCH:
        if match := pattern.search(clause):
            source, target = match.groupdict().get("f") or "", match.groupdict().get("t") or ""
            # "switch to MySQL and drop PostgreSQL": the target ends at the next clause, which may name the source.
            target, *rest = _NEXT_CLAUSE.split(target, maxsplit=1)
            also_from = _switch(rest[0])[0] if rest else ()
            return (key_terms(source) + also_from, key_terms(target),
                    _kinds(tokenize(target)) | _kinds(key_terms(clause)))
    return (), (), frozenset()


_NEXT_CLAUSE = re.compile(r"\s+(?:and|but)\s+|[,;，；、]\s*|(?:并且|而且|然后|并)")


def _statement(text: str, terms: Sequence[str], category: str | None, pol: str | None, slot: str | None,
               value: str | None, subject: str, clause: str | None = None) -> _Statement:
    states = frozenset().union(*map(_state_words, text_tokens(text)))
    source, target, kinds = _switch(clause) if clause else ((), (), frozenset())
    return _Statement(
        category, tuple(terms), pol or polarity(text), slot, key_terms(value or ""), subject, states,
        tuple(t for t in terms if not _state_words(t)),
        tuple(m.group(0).lower() for m in TIME.finditer(text)), source, target, kinds,
    )


@text_memo(65_536)  # a note is compared with every new statement: read it once (ActiveNote is frozen)
def _from_note(note: ActiveNote) -> _Statement:
    guessed = extract_notes(note.text)
    guess = guessed[0] if len(guessed) == 1 else None  # first-person note texts still yield a slot
    return _statement(
        note.text, note.key_terms or (guess.key_terms if guess else key_terms(note.text)),
        note.category or (guess and guess.category), note.polarity or (guess and guess.polarity),
        note.slot or (guess and guess.slot), note.value or (guess and guess.value), note.subject,
    )


@text_memo(1024)  # a decider reads a candidate twice: for its reach, then for the verdicts
def _candidate_statement(new: CandidateNote) -> _Statement:
    return _statement(new.evidence, new.key_terms, new.category, new.polarity, new.slot, new.value, new.subject,
                      new.evidence)


def _from_new(new: CandidateNote | str, speaker: str | None) -> list[_Statement]:
    # States and time words are read from what was said ("now" is trimmed from a note's text).
    if isinstance(new, CandidateNote):
        return [_candidate_statement(new)]
    found = []
    for clause in split_statements(new):
        notes = extract_notes(clause, speaker=speaker)
        found += [_statement(clause, n.key_terms, n.category, n.polarity, n.slot, n.value, n.subject, clause)
                  for n in notes]
        if not notes:
            found.append(_statement(clause, key_terms(clause), None, None, None, None, speaker or "user", clause))
    return found


def _verdict(relation: Relation, rule: str, reason: str, terms: Sequence[str], confidence: float) -> Verdict:
    return Verdict("", relation, rule, reason, tuple(dict.fromkeys(terms)), confidence)


def _state_rule(new: _Statement, old: _Statement) -> Verdict | None:
    if not (new.states and old.states):
        return None
    if new.residual and old.residual and not _matches(new.residual, old.residual):
        return None  # states of two different people or things
    if new.states == old.states and new.polarity == old.polarity and not new.times:
        return _verdict(Relation.REINFORCES, "state", "the same state restated", sorted(new.states), 0.6)
    when = f"{', '.join(old.times) or 'then'} → {', '.join(new.times) or 'now'}"
    return _verdict(Relation.CHANGE_OVER_TIME, "state", f"a state that changed over time ({when}); both true at "
                    "their own times", sorted(old.states | new.states), 0.75)


def _switch_rule(new: _Statement, old: _Statement) -> Verdict | None:
    if old.polarity == "negative":
        return None  # "never use GCP" is not undone by moving away from GCP
    if not (new.switch_from or new.switch_kinds):
        return None  # nothing moved away from, no kind switched within: neither branch below can fire
    if hit := _matches(new.switch_from, old.terms):
        return _verdict(Relation.SUPERSEDES, "switch", f"moves away from {', '.join(hit)}", hit + new.switch_to, 0.9)
    shared = new.switch_kinds & _kinds(old.terms)
    # What is switched to, of the shared kind: "coffee" of "switched to coffee in the morning" ("morning" is context),
    # "MySQL" of "改用 MySQL 作为数据库" (the kind noun itself is not a target).
    targets = [t for t in new.switch_to if t not in (_tables() if _cjk(t) else _latin_tables())[1] and _kinds([t]) & shared]
    if targets and not _matches(targets, old.terms):
        named = [t for t in old.terms if _kinds([t]) & shared]
        return _verdict(Relation.SUPERSEDES, "switch", f"switches to {', '.join(targets)} in place of "
                        f"{', '.join(named)} (same kind: {', '.join(sorted(shared))})", named + targets, 0.8)
    return None


def _slot_rule(new: _Statement, old: _Statement) -> Verdict | None:
    if not new.slot or new.slot != old.slot or new.subject != old.subject:
        return None
    same_value = _covers(new.value_terms, old.value_terms) or _covers(old.value_terms, new.value_terms)
    if same_value and new.polarity != old.polarity:
        return _verdict(Relation.SUPERSEDES, "slot", f"{new.slot} negated", new.value_terms, 0.85)
    if same_value:
        return _verdict(Relation.REINFORCES, "slot", f"the same {new.slot} restated", new.value_terms, 0.8)
    one_valued = new.slot in EXCLUSIVE_SLOTS or new.slot.startswith("favourite:")
    if one_valued and new.polarity == old.polarity == "positive":
        return _verdict(Relation.SUPERSEDES, "slot", f"{new.slot} has a new value", old.value_terms + new.value_terms,
                        0.85)
    return None


def _term_rule(new: _Statement, old: _Statement, shared: tuple[str, ...]) -> Verdict | None:
    """``shared`` is ``_matches(old.terms, new.terms)``, which :func:`_judge` has just computed."""
    overlap = _jaccard(new.terms, old.terms)
    if new.polarity != old.polarity and shared and overlap >= NEGATION_JACCARD:
        reason = f"a {new.polarity} statement about the same terms"
        return _verdict(Relation.SUPERSEDES, "negation", reason, shared, 0.8)
    compatible = new.category is None or old.category is None or new.category == old.category
    if compatible and new.polarity == old.polarity and overlap >= REINFORCE_JACCARD:
        return _verdict(Relation.REINFORCES, "duplicate", f"near-duplicate (key-term overlap {overlap:.2f})", shared,
                        round(0.5 + 0.4 * overlap, 2))
    return None


_RULES = (_state_rule, _switch_rule, _slot_rule)  # then _term_rule, which takes the shared terms _judge found
_RANK = {Relation.SUPERSEDES: 3, Relation.CHANGE_OVER_TIME: 2, Relation.REINFORCES: 1, Relation.CONSISTENT: 0}


_UNRELATED = Verdict("", Relation.CONSISTENT, "none", "no rule relates them", (), 0.6)
_SILENT = Verdict("", Relation.CONSISTENT, "none", "the message asserts nothing", (), 0.6)


def _judge(new: _Statement, old: _Statement, terms_of_consistent: bool = True) -> Verdict:
    """The first rule's verdict; ``terms_of_consistent=False`` (for :func:`actionable`, which drops CONSISTENT
    verdicts) returns the shared :data:`_UNRELATED` instead of naming the shared terms of a pair no rule relates."""
    if not (new.switch_from or new.switch_kinds or (new.states and old.states) or (new.slot and new.slot == old.slot)):
        same, nested, grams = _index(new.terms)
        # no shared term either: none alike, and no Chinese term inside another (no common bigram, see _index)
        if same.isdisjoint(old.terms) and (not nested or grams.isdisjoint(_index(old.terms)[2])):
            return _UNRELATED
    shared = _matches(old.terms, new.terms)
    if not (shared or (new.states and old.states) or new.switch_from or new.switch_kinds
            or (new.slot and new.slot == old.slot)):
        # No rule can fire: each needs shared terms (REINFORCE_JACCARD and NEGATION_JACCARD are above 0, and _hit
        # is symmetric), states on both sides, a switch, or the same slot. Most pairs end here.
        return _UNRELATED
    for rule in _RULES:
        if (found := rule(new, old)) is not None:
            return found
    if (found := _term_rule(new, old, shared)) is not None:
        return found
    if not terms_of_consistent:  # most judged pairs end here (MemDaily dev: 27,551 of 28,779), to be dropped
        return _UNRELATED
    return _verdict(Relation.CONSISTENT, "none", "no rule relates them", shared, 0.6)


def detect(new: CandidateNote | str, notes: Sequence[ActiveNote], *, speaker: str | None = None) -> tuple[Verdict, ...]:
    """One verdict per active note, in the order given; same input, same verdicts.

    ``new`` is an extracted candidate or a raw message. A message is read
    clause by clause (questions and hypotheticals assert nothing) and each note
    keeps its strongest verdict over the clauses: SUPERSEDES, then
    CHANGE_OVER_TIME, then REINFORCES, then CONSISTENT.
    """
    statements = _from_new(new, speaker)
    return tuple(_named(note, _best(statements, _from_note(note))) for note in notes)


def actionable(new: CandidateNote, notes: Sequence[ActiveNote]) -> list[Verdict]:
    """``[v for v in detect(new, notes) if v.relation is not CONSISTENT]``, without naming the verdicts it drops
    (most pairs a decider judges end CONSISTENT, and a frozen dataclass costs ~1 µs to build)."""
    statements = _from_new(new, None)
    judged = ((note, _best(statements, _from_note(note), False)) for note in notes)
    return [_named(note, best) for note, best in judged if best.relation is not Relation.CONSISTENT]


def _best(statements: list[_Statement], old: _Statement, terms_of_consistent: bool = True) -> Verdict:
    if len(statements) == 1:  # a candidate note: one statement
        return _judge(statements[0], old, terms_of_consistent)
    return max((_judge(s, old, terms_of_consistent) for s in statements),
               key=lambda v: (_RANK[v.relation], v.confidence), default=_SILENT)


def _named(note: ActiveNote, best: Verdict) -> Verdict:
    return Verdict(note.note_id, best.relation, best.rule, best.reason, best.matched_terms, best.confidence,
                   best.detector)


@dataclass(frozen=True, slots=True)
class Reach:
    """What can relate a statement to a note, as :func:`_judge` reads it (see :mod:`projections.rules.note_pool`).

    A pair with no shared exact term, no Chinese containment, no common slot,
    no states on both sides and no switch is always "no rule relates them".
    """

    terms: frozenset[str]
    grams: frozenset[str]  # character bigrams of the Chinese terms of two or more characters (containment, _index)
    slot: str | None
    states: bool
    switch: bool  # a switch ("moved from X to Y") may relate it to any note


def _reach(s: _Statement) -> Reach:
    return Reach(frozenset(s.terms), _index(s.terms)[2], s.slot, bool(s.states),
                 bool(s.switch_from or s.switch_kinds))


def reach_of_note(note: ActiveNote) -> Reach:
    return _reach(_from_note(note))


def reach_of_candidate(new: CandidateNote) -> Reach:
    return _reach(_candidate_statement(new))


def memory_operation(verdicts: Sequence[Verdict]) -> str:
    """The seed 002 operation the verdicts call for: ``"update"`` (supersede), ``"boost"`` (restated) or ``"add"``."""
    relations = {v.relation for v in verdicts}
    if Relation.SUPERSEDES in relations:
        return "update"
    return "boost" if Relation.REINFORCES in relations else "add"
