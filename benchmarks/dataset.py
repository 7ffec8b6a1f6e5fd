"""Parsing a LoCoMo file into Palimpsest messages and scorable questions.

Format: a list of samples, each with ``sample_id``, ``conversation``
(``speaker_a``, ``speaker_b``, ``session_<n>`` = list of turns,
``session_<n>_date_time``) and ``qa`` (``question``, ``answer`` or
``adversarial_answer``, ``evidence``, ``category``). Tolerated quirks: integer
answers, evidence strings holding several ids (``"D8:6; D9:17"``) or a stray
colon (``"D:11:26"``), unparsable or empty evidence (the question is kept
aside, not scored), date keys without a session, sessions without a date.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

TENANT = "locomo"
SESSION_KEY = re.compile(r"^session_(\d+)$")
EVIDENCE_ID = re.compile(r"D:?(\d+)\s*:\s*(\d+)")
DATE_FORMATS = ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y", "%I:%M %p on %B %d, %Y", "%I:%M %p on %d %B %Y")


@dataclass(frozen=True, slots=True)
class Question:
    sample_id: str
    index: int  # position in the sample's ``qa`` list
    question: str
    category: str  # "1".."5" (kept as text so unknown categories survive)
    evidence: frozenset[str]  # normalised dia ids "D<s>:<t>"
    answer: str
    adversarial: bool

    @property
    def user_id(self) -> str:
        return self.sample_id


@dataclass
class Sample:
    sample_id: str
    messages: list[dict[str, Any]]
    questions: list[Question]  # scorable: at least one parsable evidence id
    skipped: list[Question]  # empty/unparsable evidence or empty question text


@dataclass
class DatasetStats:
    sessions: int = 0
    empty_sessions: int = 0
    dates_without_session: int = 0
    sessions_without_date: int = 0
    unparsed_dates: list[str] = field(default_factory=list)
    turns_skipped_blank: int = 0
    evidence_unparsed: list[str] = field(default_factory=list)  # evidence strings with no id in them
    evidence_unknown: list[str] = field(default_factory=list)  # parsed ids naming no turn of the sample

    def to_dict(self) -> dict:
        return {
            "sessions": self.sessions,
            "empty_sessions": self.empty_sessions,
            "dates_without_session": self.dates_without_session,
            "sessions_without_date": self.sessions_without_date,
            "unparsed_dates": self.unparsed_dates,
            "turns_skipped_blank": self.turns_skipped_blank,
            "evidence_unparsed": self.evidence_unparsed,
            "evidence_unknown": self.evidence_unknown,
        }


@dataclass
class Dataset:
    name: str
    samples: list[Sample]
    stats: DatasetStats

    @property
    def messages(self) -> list[dict[str, Any]]:
        return [m for s in self.samples for m in s.messages]

    @property
    def questions(self) -> list[Question]:
        return [q for s in self.samples for q in s.questions]

    @property
    def skipped(self) -> list[Question]:
        return [q for s in self.samples for q in s.skipped]


def parse_session_datetime(value: Any) -> datetime | None:
    """``"1:56 pm on 8 May, 2023"`` -> aware UTC datetime; None if it cannot be read."""
    if not isinstance(value, str):
        return None
    text = " ".join(value.replace("\u202f", " ").split())
    for fmt in DATE_FORMATS:
        try:
            return datetime.strptime(text, fmt).replace(tzinfo=UTC)
        except ValueError:
            continue
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def parse_evidence(evidence: Any) -> tuple[set[str], list[str]]:
    """Every ``D<s>:<t>`` id found in the evidence list, and the strings that held none."""
    items = evidence if isinstance(evidence, list) else [evidence] if evidence else []
    found: set[str] = set()
    unparsed: list[str] = []
    for item in items:
        ids = [f"D{s}:{t}" for s, t in EVIDENCE_ID.findall(str(item))]
        if ids:
            found.update(ids)
        else:
            unparsed.append(str(item))
    return found, unparsed


def _turn_text(turn: dict) -> str:
    text = str(turn.get("text") or "").strip()
    caption = turn.get("blip_caption")
    if caption:
        text = f"{text} [image: {caption}]".strip()
    return text


def _sessions(conv: dict, stats: DatasetStats) -> list[tuple[int, list]]:
    sessions = sorted(
        ((int(m.group(1)), v) for k, v in conv.items() if (m := SESSION_KEY.match(k)) and isinstance(v, list)),
        key=lambda s: s[0],
    )
    numbers = {n for n, _ in sessions}
    stats.dates_without_session += sum(
        1 for k in conv if k.endswith("_date_time") and (m := SESSION_KEY.match(k[: -len("_date_time")]))
        and int(m.group(1)) not in numbers
    )
    return sessions


def _sample_messages(sample_id: str, conv: dict, stats: DatasetStats) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    previous = datetime(1970, 1, 1, tzinfo=UTC)
    for n, turns in _sessions(conv, stats):
        stats.sessions += 1
        raw_date = conv.get(f"session_{n}_date_time")
        when = parse_session_datetime(raw_date)
        if raw_date is None:
            stats.sessions_without_date += 1
        elif when is None:
            stats.unparsed_dates.append(f"{sample_id}:session_{n}: {raw_date!r}")
        if when is None:  # keep the order of sessions: just after the previous one
            when = previous + timedelta(minutes=1)
        previous = when
        if not turns:
            stats.empty_sessions += 1
        for pos, turn in enumerate(turns, start=1):
            text = _turn_text(turn)
            if not text:
                stats.turns_skipped_blank += 1
                continue
            dia_id = str(turn.get("dia_id") or f"D{n}:{pos}")
            message = {
                "user_id": sample_id,
                "conversation_id": f"{sample_id}:session_{n}",
                "role": "user",
                "text": text,
                "occurred_at": when.isoformat(),
                "client_message_id": f"{sample_id}:{dia_id}",
                "turn_id": dia_id,
            }
            if turn.get("speaker"):
                message["speaker"] = str(turn["speaker"])
            messages.append(message)
    return messages


def _questions(sample_id: str, qa: list, turn_ids: set[str], stats: DatasetStats) -> tuple[list, list]:
    scored: list[Question] = []
    skipped: list[Question] = []
    for index, item in enumerate(qa):
        evidence, unparsed = parse_evidence(item.get("evidence"))
        stats.evidence_unparsed.extend(f"{sample_id}#{index}: {u!r}" for u in unparsed)
        stats.evidence_unknown.extend(f"{sample_id}#{index}: {e}" for e in sorted(evidence - turn_ids))
        answer = item.get("answer", item.get("adversarial_answer", ""))
        question = Question(
            sample_id=sample_id,
            index=index,
            question=str(item.get("question") or "").strip(),
            category=str(item.get("category", "unknown")),
            evidence=frozenset(evidence),
            answer="" if answer is None else str(answer),
            adversarial="answer" not in item and "adversarial_answer" in item,
        )
        (scored if evidence and question.question else skipped).append(question)
    return scored, skipped


def load(path: str | Path, limit_samples: int | None = None) -> Dataset:
    """Read a LoCoMo JSON file (a list of samples, or one sample)."""
    path = Path(path)
    data = json.loads(path.read_text(encoding="utf-8"))
    if isinstance(data, dict):
        data = [data]
    if not isinstance(data, list):
        raise ValueError(f"{path}: expected a JSON list of LoCoMo samples, got {type(data).__name__}")
    if limit_samples is not None:
        data = data[:limit_samples]
    stats = DatasetStats()
    samples = []
    for pos, raw in enumerate(data):
        sample_id = str(raw.get("sample_id") or f"sample-{pos}")
        messages = _sample_messages(sample_id, raw.get("conversation") or {}, stats)
        scored, skipped = _questions(sample_id, raw.get("qa") or [], {m["turn_id"] for m in messages}, stats)
        samples.append(Sample(sample_id, messages, scored, skipped))
    return Dataset(name=path.name, samples=samples, stats=stats)
