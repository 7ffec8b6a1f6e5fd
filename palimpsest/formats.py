"""Input formats: a simple JSONL message format and LoCoMo conversation files.

JSONL: one JSON object per line with the fields of ``RecordMessage``
(``text``, ``occurred_at`` with a timezone offset, optional ``tenant``,
``user_id``, ``conversation_id``, ``role``, ``speaker``, ``client_message_id``,
``turn_id``, ``metadata``). Blank lines and lines starting with ``#`` are skipped.

LoCoMo: each sample is one user (tenant ``locomo`` by default, user = the
sample id); each turn a message with its speaker, its text plus the image
caption when there is one, and its session's date-time (read as UTC) as its
time. Turns keep their order through the log's seq.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from events.errors import InvalidInputError

_SESSION_KEY = re.compile(r"^session_(\d+)$")
_DATE_FORMATS = ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y", "%I:%M %p on %B %d, %Y", "%d %B, %Y", "%d %B %Y")


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    records, problems = [], []
    with path.open(encoding="utf-8") as fh:
        for number, line in enumerate(fh, start=1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                problems.append((f"{path.name}:{number}", f"not valid JSON ({exc.msg}); fix: one JSON object per line"))
                continue
            if not isinstance(record, dict):
                problems.append((f"{path.name}:{number}", "expected a JSON object per line"))
                continue
            records.append(record)
    if problems:
        raise InvalidInputError(problems, what=f"file {path}")
    return records


def parse_locomo_datetime(value: str) -> datetime:
    """'1:56 pm on 8 May, 2023' -> 2023-05-08T13:56:00+00:00 (LoCoMo gives no zone; UTC is assumed)."""
    text = " ".join(value.strip().split())
    for fmt in _DATE_FORMATS:
        try:
            return datetime.strptime(text, fmt).replace(tzinfo=UTC)
        except ValueError:
            continue
    raise InvalidInputError([("session date-time", f"cannot parse {value!r}; expected e.g. '1:56 pm on 8 May, 2023'")])


def locomo_sessions(conversation: dict[str, Any]) -> list[tuple[int, datetime, list[dict]]]:
    """(session number, its date-time, its turns) in numeric order; date keys without a session are ignored."""
    out = []
    for key, turns in conversation.items():
        match = _SESSION_KEY.match(key)
        if not match or not isinstance(turns, list):
            continue
        n = int(match.group(1))
        stamp = conversation.get(f"session_{n}_date_time")
        if not stamp:
            raise InvalidInputError([(f"session_{n}_date_time", "missing; every session needs its date-time")])
        out.append((n, parse_locomo_datetime(stamp), turns))
    return sorted(out, key=lambda s: s[0])


def locomo_turn_text(turn: dict[str, Any]) -> str:
    caption = turn.get("blip_caption")
    return f"{turn['text']} [image: {caption}]" if caption else turn["text"]


def locomo_messages(sample: dict[str, Any], tenant: str = "locomo") -> list[dict[str, Any]]:
    sample_id = str(sample["sample_id"])
    messages = []
    for n, when, turns in locomo_sessions(sample["conversation"]):
        for turn in turns:
            messages.append(
                {
                    "tenant": tenant,
                    "user_id": sample_id,
                    "conversation_id": f"{sample_id}:session_{n}",
                    "role": "user",
                    "speaker": turn["speaker"],
                    "text": locomo_turn_text(turn),
                    "occurred_at": when,
                    "client_message_id": f"{sample_id}:{turn['dia_id']}",
                    "turn_id": turn["dia_id"],
                }
            )
    return messages


def read_locomo(path: Path, tenant: str = "locomo") -> list[dict[str, Any]]:
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, list) or not all(isinstance(s, dict) and "conversation" in s for s in data):
        raise InvalidInputError([(str(path), "not a LoCoMo file: expected a list of samples with a 'conversation'")])
    return [m for sample in data for m in locomo_messages(sample, tenant)]


def detect_format(path: Path) -> str:
    if path.suffix == ".jsonl":
        return "jsonl"
    with path.open(encoding="utf-8") as fh:
        head = fh.read(1).strip() or fh.read(64).lstrip()[:1]
    return "locomo" if head == "[" else "jsonl"
