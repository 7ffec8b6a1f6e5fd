"""Input formats: a simple JSONL message format and LoCoMo conversation files.

JSONL: one JSON object per line with the fields of ``RecordMessage``
(``text``, ``occurred_at`` with a timezone offset, optional ``tenant``,
``user_id``, ``conversation_id``, ``role``, ``speaker``, ``client_message_id``,
``turn_id``, ``metadata``). Blank lines and lines starting with ``#`` are skipped.

LoCoMo: see :mod:`palimpsest.locomo`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from events.errors import InvalidInputError
from palimpsest import locomo


def _text(path: Path) -> str:
    """The file's text; a file that is not UTF-8 is refused with the place of the first bad byte."""
    data = path.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise InvalidInputError([(f"{path.name}:{line}", f"byte {exc.start} is not UTF-8; fix: save the file as "
                                  "UTF-8 (e.g. iconv -f latin1 -t utf-8)")], what=f"file {path}") from None


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    records, problems = [], []
    for number, line in enumerate(_text(path).splitlines(), start=1):
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


def read_locomo(path: Path, tenant: str = locomo.TENANT) -> list[dict[str, Any]]:
    """Every turn of every sample as a message (see :mod:`palimpsest.locomo`)."""
    try:
        data = json.loads(_text(path))
    except json.JSONDecodeError as exc:
        raise InvalidInputError([(f"{path.name}:{exc.lineno}", f"not valid JSON ({exc.msg}, column {exc.colno}); "
                                  "fix: a LoCoMo file is one JSON list of samples")], what=f"file {path}") from None
    if not isinstance(data, list) or not all(isinstance(s, dict) and "conversation" in s for s in data):
        raise InvalidInputError([(str(path), "not a LoCoMo file: expected a list of samples with a 'conversation'")])
    stats = locomo.LocomoStats()
    locomo.check_samples(path.name, data)
    return [
        m
        for pos, sample in enumerate(data)
        for m in locomo.sample_messages(str(sample.get("sample_id") or f"sample-{pos}"), sample["conversation"], stats, tenant)
    ]


def detect_format(path: Path) -> str:
    if path.suffix == ".jsonl":
        return "jsonl"
    with path.open(encoding="utf-8", errors="replace") as fh:
        head = fh.read(256).lstrip()[:1]
    return "locomo" if head == "[" else "jsonl"
