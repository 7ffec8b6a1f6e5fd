"""Offline extraction of graph memories from one dialogue turn, English and Chinese (``graph-rules-v2``).

Seed 001 has an LLM call ``create_memory(subject, memory_type, topic, object,
attributes, importance)``; this module proposes the same memories without
one, by rule, so the graph can be built (and tested) offline:

    "I went to a support group yesterday"  → (Caroline, event, go, support group, time=2023-05-09)
    "My sister adopted a puppy"            → (Caroline's sister, event, adopt, puppy)
                                             + (Caroline, relation, sister, Caroline's sister)
    "I think the new library is great"     → (Caroline, opinion, think, new library, judgement=great)
    "我昨天去了瑜伽课"                      → (小红, event, 去, 瑜伽课, time=2023-05-09)

A pure, deterministic function of (text, speaker, occurred_at). How a turn is read:

1. Split into sentences; drop questions and hypotheticals (the tables of
   :mod:`projections.rules.note_rules`: "?", "did you…", 吗, "if", "maybe", 如果, 打算…).
2. Find the time expressions of each sentence (:mod:`projections.rules.timenorm`,
   against ``occurred_at``) and split the sentence into clauses ("…, and",
   " - ", "but", 然后, "，"). A clause takes the time written in it, else the
   time of a clause that holds only a time ("Last Friday, I went…"), else,
   when it continues the clause before ("… and got a dog"), that one's time.
3. Read each clause with :func:`~projections.rules.graph_english.read_english` or
   :func:`~projections.rules.graph_chinese.read_chinese` (the time cut out first).
   Besides, "<det> <noun> I <past verb>" inside any clause ("This book I read
   …", :mod:`projections.rules.graph_relatives`), and bare gerund items after a
   clause ("I enjoy reading, watching movies, …", :mod:`projections.rules.graph_lists`).
   A shared photo's caption ("[image: a photo of …]") is a ``share`` event of
   what it shows (:mod:`projections.rules.graph_captions`).
4. An event gets ``time`` (the ISO rendering of its time expression) and, when
   not yet done, ``status`` (planned / ongoing). Importance: 0.5 for events
   and facts, 0.7 relations, 0.4 opinions; +0.3 life events (adopt, marry,
   move, 毕业…), +0.1 notable ones (join, visit, 参加…), -0.1 routine events (eat, 吃…).

Memory types follow seed 001: event (happened at a time), fact (stable
state or habit, including likes and dislikes: "小明喜欢打篮球" is a fact in the
seed), relation (between people), opinion (an explicit judgement: "I think",
觉得; a past "I loved the concert" also counts as one). The seed's own
example 讨厌下雨天 → 观点 is read here as a fact, like 喜欢, so that liking
and disliking stay one kind of memory.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from projections.rules.english_lemma import IRREGULAR
from projections.rules.graph_captions import CAPTION, caption_readings
from projections.rules.graph_chinese import read_chinese
from projections.rules.graph_english import LEAD, Reading, read_english
from projections.rules.graph_lists import activity, is_activity, list_item
from projections.rules.graph_relatives import relative_readings
from projections.rules.graph_rules import (
    BASE_IMPORTANCE,
    LIFE_EVENTS,
    PARTNER_EN_RX,
    ROUTINE,
    ZH_LEAD,
)
from projections.rules.note_rules import HYPOTHETICAL, QUESTION
from projections.rules.text import has_cjk, rule_text
from projections.rules.timenorm import TimeMention, normalize_time

EXTRACTOR_ID = "graph-rules-v2"
MemoryType = Literal["event", "fact", "relation", "opinion"]


@dataclass(frozen=True)
class CandidateGraphMemory:
    """A memory proposed from one turn, in the shape of seed 001's ``create_memory`` call."""

    subject: str  # the speaker for "I" / 我, else the person named ("Caroline's sister", "小明")
    memory_type: MemoryType
    topic: str  # the predicate: "go", "adopt", "sign up", "去", "养"; for a relation, the relation ("sister")
    object: str | None  # the noun phrase: "support group", "puppy", "瑜伽课"
    attributes: dict[str, str] = field(default_factory=dict, hash=False)  # time, status, place, with, judgement
    importance: float = 0.5
    evidence: str = ""  # the clause it was read from
    language: Literal["en", "zh"] = "en"
    when: TimeMention | None = None  # the resolved time of an event, if the turn said one
    extractor: str = EXTRACTOR_ID

    def as_tool_arguments(self) -> dict[str, Any]:
        """The arguments of the equivalent ``create_memory`` call (see :mod:`projections.rules.tool_calls`)."""
        arguments: dict[str, Any] = {"subject": self.subject, "memory_type": self.memory_type, "topic": self.topic,
                                     "attributes": dict(self.attributes), "importance": self.importance}
        if self.object:
            arguments["object"] = self.object
        if self.when:
            arguments["occurred_at"] = self.when.start.isoformat()
            arguments["time_expression"] = self.when.expression
        return arguments


@dataclass(frozen=True)
class _Clause:
    start: int
    end: int
    continues: bool  # joined to the clause before by "and" / "," / "then" (English), always in Chinese


_SENTENCE = re.compile(r"(?:[^.!?。！？；;\n]|\.(?!\s|$))+[.!?。！？；;]*")
_PAST = "(?:" + "|".join(sorted(set(IRREGULAR) - {"been"}, key=len, reverse=True)) + r"|[a-z]+ed)\b"
_EN_BREAK = re.compile(
    r"\s*[;:()]\s*|\s+[-–—]+\s+|\s*[–—]\s*|(?<=[a-z])-\s+"
    r"|\s*,\s*(?:(?:and\s+then|and|then|but|so|because|though|although|which|while)\b\s*)?"
    r"|\s+(?:but|so|because|although|though|while|whereas|since|after|before|when|until|which)\s+"
    r"|\s+and(?:\s+then)?\s+(?=(?:i|we|it|he|she|they|my|that|this|there|you)\b|" + _PAST + ")",
    re.IGNORECASE,
)
_PARTNER = re.compile(PARTNER_EN_RX)
_ZH_BREAK = re.compile(r"[，,；;：:、]?(?:然后|接着|但是|不过|而且|所以|因为|并且)|[，,；;：:]")
_FILLER = re.compile(r"^[\s,.!?，。！？–—-]*(?:(?:on|in|at|since|around|about|during|by|从|在|于)[\s,.!?，。！？]*)?$",
                     re.IGNORECASE)  # what is left of "On May 7, 2023," once the date is cut out
_WHEN_CLAUSE = re.compile(r"^\W*when\s+(?:i|we|my|our)\b[^?？,]*,[^?？]*$", re.IGNORECASE)  # "When I was young, …"
_CONTINUING = re.compile(r"^[\s,]*(?:and(?:\s+then)?|then)?[\s,]*$", re.IGNORECASE)


def _clauses(sentence: str, zh: bool, mentions: list[TimeMention]) -> list[_Clause]:
    """The clauses of ``sentence``; never split inside a time expression ("May 7, 2023")."""
    out, start, continues = [], 0, False
    for sep in (_ZH_BREAK if zh else _EN_BREAK).finditer(sentence):
        if any(m.span[0] < sep.end() and sep.start() < m.span[1] for m in mentions):
            continue
        if not zh and _PARTNER.fullmatch(sentence[start:sep.start()].strip()) and sep.group().strip() == "and":
            continue  # "Anthony and I went…" is one clause
        if sep.start() > start:
            out.append(_Clause(start, sep.start(), continues))
        start = sep.end()
        continues = zh or (bool(_CONTINUING.match(sep.group())) and sep.group().strip() != "")
    if start < len(sentence):
        out.append(_Clause(start, len(sentence), continues))
    return out


def _tense(mention: TimeMention | None, reference: datetime) -> str | None:
    if mention is None:
        return None
    return "past" if mention.end <= reference else "future" if mention.start > reference else "present"


def _importance(reading: Reading) -> float:
    key = reading.topic.replace(" ", "_")
    score = BASE_IMPORTANCE[reading.memory_type]
    if reading.memory_type in ("event", "fact"):
        score += LIFE_EVENTS.get(key, 0.0)
    if reading.memory_type == "event":  # "I had lunch" is routine; "I have two kids" is not
        score += ROUTINE.get(key, 0.0)
    return round(min(1.0, max(0.1, score)), 2)


def _candidate(reading: Reading, evidence: str, zh: bool, mention: TimeMention | None) -> CandidateGraphMemory:
    attributes, event = dict(reading.attributes), reading.memory_type == "event"
    if event and mention is not None:
        attributes["time"] = mention.iso
    if event and reading.status:
        attributes["status"] = reading.status
    return CandidateGraphMemory(
        subject=reading.subject, memory_type=reading.memory_type, topic=reading.topic, object=reading.object,
        attributes=attributes, importance=_importance(reading), evidence=evidence, language="zh" if zh else "en",
        when=mention if event else None,
    )


def _sentence_memories(sentence: str, speaker: str, occurred_at: datetime) -> list[CandidateGraphMemory]:
    zh, mentions, found = has_cjk(sentence), normalize_time(sentence, occurred_at), []
    subject: str | None = speaker  # a sentence may open without one: "Lost my job yesterday"
    carried: TimeMention | None = None  # the time of a clause that held nothing else ("Last Friday,")
    previous_time: TimeMention | None = None
    lead: Reading | None = None  # the last activity read ("I enjoy reading"): later bare items share its verb
    pending: CandidateGraphMemory | None = None  # a bare activity ("- running,") kept if another one follows
    for clause in _clauses(sentence, zh, mentions):
        own = [m for m in mentions if clause.start <= m.span[0] < clause.end]
        body, cut = "", clause.start
        for mention in own:  # cut the time out: what is left is who did what
            body += sentence[cut:mention.span[0]] + ("" if zh else " ")
            cut = mention.span[1]
        body = (body + sentence[cut:clause.end]).strip()
        if _FILLER.match((ZH_LEAD if zh else LEAD).sub("", body)):
            carried = own[0] if own else carried
            continue
        time = own[0] if own else carried or (previous_time if clause.continues else None)
        inherited = subject if clause.continues or clause.start == 0 or carried else None
        read = read_chinese if zh else read_english
        readings, subject = read(body, speaker=speaker, inherited=inherited, tense=_tense(time, occurred_at))
        evidence = sentence[clause.start:clause.end].strip(" ,.!?;，。！？；")
        if not zh:
            readings = readings + relative_readings(body, speaker)
            item = None if readings else activity(body)
            if item and clause.continues and (lead or pending):
                if pending:  # a second bare item: the first was a list item too
                    found.append(pending)
                readings = [list_item(lead, item, speaker)]
            pending = _candidate(list_item(None, item, speaker), evidence, zh, time) if item and not readings else None
            lead = next((r for r in readings if is_activity(r)), None) if readings or not item else lead
        found.extend(_candidate(r, evidence, zh, time) for r in readings)
        previous_time, carried = time, None
    return found


def extract_graph_memories(text: str, *, speaker: str | None, occurred_at: datetime) -> tuple[CandidateGraphMemory, ...]:
    """Candidate graph memories stated in one turn, in turn order, without duplicates.

    ``speaker`` is the subject of "I" / 我 (``"user"`` when None);
    ``occurred_at`` is the turn's time, timezone-aware, against which "yesterday"
    is resolved. Questions and hypotheticals yield nothing.
    """
    who = speaker or "user"
    found: dict[tuple[str, str, str, str | None], CandidateGraphMemory] = {}
    text = rule_text(text).replace("’", "'")
    for match in _SENTENCE.finditer(CAPTION.sub(" ", text)):
        sentence = match.group().strip()
        question = QUESTION.search(sentence) and not _WHEN_CLAUSE.match(sentence)
        if not sentence or question or HYPOTHETICAL.search(sentence):
            continue
        for memory in _sentence_memories(sentence, who, occurred_at):
            found.setdefault((memory.subject, memory.memory_type, memory.topic, memory.object), memory)
    for reading, caption in caption_readings(text, who):
        memory = _candidate(reading, caption, False, None)
        found.setdefault((memory.subject, memory.memory_type, memory.topic, memory.object), memory)
    return tuple(found.values())
