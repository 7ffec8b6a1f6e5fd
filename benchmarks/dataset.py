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
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from palimpsest.locomo import LocomoStats, sample_messages

EVIDENCE_ID = re.compile(r"D:?(\d+)\s*:\s*(\d+)")

# What each category number means, by data set (the file name says which); a file whose questions carry a
# ``question_type`` names its categories itself. LoCoMo's numbering is the one in ../shared/BENCHMARKS.md.
CATEGORY_NAMES: dict[str, dict[str, str]] = {
    "locomo": {"1": "multi-hop", "2": "temporal", "3": "open-domain", "4": "single-hop", "5": "adversarial"},
    "realtalk": {"1": "multi-hop", "2": "temporal", "3": "commonsense"},
    "memdaily": {"1": "aggregative", "2": "comparative", "3": "conditional", "4": "noisy",
                 "5": "post_processing", "6": "simple"},
}


def category_names(file_name: str, raw_samples: list) -> dict[str, str]:
    """Category number -> name: from the questions' ``question_type`` if present, else by the file's data set."""
    known = next((names for key, names in CATEGORY_NAMES.items() if key in file_name.lower()),
                 CATEGORY_NAMES["locomo"])
    named = dict(known)
    for raw in raw_samples:
        for item in (raw.get("qa") or []) if isinstance(raw, dict) else []:
            if item.get("question_type") and "category" in item:
                named[str(item["category"])] = str(item["question_type"])
    return named


@dataclass(frozen=True, slots=True)
class Question:
    sample_id: str
    index: int  # position in the sample's ``qa`` list
    question: str
    category: str  # "1".."5" (kept as text so unknown categories survive)
    evidence: frozenset[str]  # normalised dia ids "D<s>:<t>"
    answer: str
    adversarial: bool
    asked_at: datetime | None = None  # when the question is put: right after the sample's last turn

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
class Dataset:
    name: str
    samples: list[Sample]
    stats: LocomoStats
    category_names: dict[str, str] = field(default_factory=dict)

    @property
    def messages(self) -> list[dict[str, Any]]:
        return [m for s in self.samples for m in s.messages]

    @property
    def questions(self) -> list[Question]:
        return [q for s in self.samples for q in s.questions]

    @property
    def skipped(self) -> list[Question]:
        return [q for s in self.samples for q in s.skipped]


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


def _questions(sample_id: str, qa: list, turn_ids: set[str], stats: LocomoStats) -> tuple[list, list]:
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
    stats = LocomoStats()
    samples = []
    for pos, raw in enumerate(data):
        sample_id = str(raw.get("sample_id") or f"sample-{pos}")
        messages = sample_messages(sample_id, raw.get("conversation") or {}, stats)
        scored, skipped = _questions(sample_id, raw.get("qa") or [], {m["turn_id"] for m in messages}, stats)
        if messages:
            asked_at = max(datetime.fromisoformat(m["occurred_at"]) for m in messages) + timedelta(minutes=1)
            scored = [replace(q, asked_at=asked_at) for q in scored]
        samples.append(Sample(sample_id, messages, scored, skipped))
    return Dataset(name=path.name, samples=samples, stats=stats, category_names=category_names(path.name, data))
