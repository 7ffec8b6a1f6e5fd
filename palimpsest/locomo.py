"""LoCoMo conversation files as Palimpsest messages.

Each sample is one user (tenant ``locomo`` by default, user = the sample id);
each turn a message with its speaker, its text plus ``[image: caption]`` when
it has one, its ``dia_id`` as turn id, and its session's date-time (LoCoMo
gives no zone: read as UTC) as its time; turns keep their order through the
log's seq. Tolerated quirks, counted in :class:`LocomoStats`: date keys without
a session, sessions without (or with an unreadable) date, blank turns.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from events.errors import InvalidInputError

TENANT = "locomo"
SESSION_KEY = re.compile(r"^session_(\d+)$")
DATE_FORMATS = ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y", "%I:%M %p on %B %d, %Y", "%I:%M %p on %d %B %Y")


@dataclass
class LocomoStats:
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


def turn_text(turn: dict) -> str:
    text = str(turn.get("text") or "").strip()
    caption = turn.get("blip_caption")
    if caption:
        text = f"{text} [image: {caption}]".strip()
    return text


def check_samples(name: str, samples: list[dict]) -> None:
    """Refuse sessions that are not lists of turn objects (they would be skipped without a word)."""
    problems = []
    for pos, sample in enumerate(samples):
        conv = sample["conversation"]
        if not isinstance(conv, dict):
            problems.append((f"{name}[{pos}].conversation", "expected an object of session_N lists"))
            continue
        for key, value in conv.items():
            if not SESSION_KEY.match(key):
                continue
            where = f"{name}[{pos}].conversation.{key}"
            if not isinstance(value, list):
                problems.append((where, f"expected a list of turns, got {type(value).__name__}; fix the file"))
            elif not all(isinstance(t, dict) for t in value):
                problems.append((where, "every turn must be an object with 'speaker' and 'text'; fix the file"))
    if problems:
        raise InvalidInputError(problems, what=f"LoCoMo file {name}")


def sessions(conv: dict, stats: LocomoStats) -> list[tuple[int, list]]:
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


def sample_messages(
    sample_id: str, conv: dict, stats: LocomoStats, tenant: str = TENANT
) -> list[dict[str, Any]]:
    """The turns of one sample as message dicts for ``Memory.add_messages``."""
    messages: list[dict[str, Any]] = []
    previous = datetime(1970, 1, 1, tzinfo=UTC)
    for n, turns in sessions(conv, stats):
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
            text = turn_text(turn)
            if not text:
                stats.turns_skipped_blank += 1
                continue
            dia_id = str(turn.get("dia_id") or f"D{n}:{pos}")
            message = {
                "tenant": tenant,
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
