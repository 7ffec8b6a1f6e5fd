"""Questions asked in another language than the dialogue's: a file that replaces a data file's questions.

    python -m benchmarks.locomo --data ../shared/data/memdaily/memdaily_dev.json \
        --questions benchmarks/data/memdaily_dev_en_questions.json --embedder multilingual-e5-small --out X.json

The file (JSON) names the data file it was written for (``data``) and lists ``questions``, each with the
``sample_id`` and ``index`` of the question it replaces, its new text (``question``) and the first 12 hex digits
of the SHA-256 of the text it replaces (``original_sha256``): a data file whose question changed since is refused
rather than scored against the wrong evidence. Only the listed questions are scored; their evidence, answer and
category stay the data file's. ``benchmarks/data/memdaily_dev_en_questions.json`` holds English questions,
translated by hand, over MemDaily's Chinese dialogues: the cross-lingual case no data file covers.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from pathlib import Path

from benchmarks.dataset import Dataset, Sample

FIELDS = ("sample_id", "index", "question", "original_sha256")


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def read(path: Path) -> list[dict]:
    """The overlay's question entries, each checked for its fields; a clear SystemExit otherwise."""
    try:
        raw = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise SystemExit(f"--questions {path}: cannot read it as JSON ({exc})") from None
    entries = raw.get("questions") if isinstance(raw, dict) else None
    if not isinstance(entries, list) or not entries:
        raise SystemExit(f"--questions {path}: expected an object with a non-empty 'questions' list")
    for pos, entry in enumerate(entries):
        missing = [f for f in FIELDS if not isinstance(entry, dict) or f not in entry]
        if missing:
            raise SystemExit(f"--questions {path}: questions[{pos}] lacks {', '.join(missing)} (each entry needs "
                             f"{', '.join(FIELDS)})")
    return entries


def by_sample(path: Path, samples: list[dict]) -> dict[str, dict[int, str]]:
    """The overlay's questions over raw LoCoMo-format ``samples``: ``{sample_id: {index: text}}``, each checked
    against the text it replaces (a SystemExit naming the entry otherwise)."""
    raw = {(str(s["sample_id"]), i): str(q.get("question", "")) for s in samples for i, q in enumerate(s.get("qa") or [])}
    found: dict[str, dict[int, str]] = {}
    for pos, e in enumerate(read(path)):
        key = (str(e["sample_id"]), int(e["index"]))
        if key not in raw:
            raise SystemExit(f"--questions {path}: questions[{pos}] points at {key[0]}#{key[1]}, which the data "
                             "file does not have (is it the file the overlay was written for?)")
        if _digest(raw[key]) != e["original_sha256"]:
            raise SystemExit(f"--questions {path}: questions[{pos}] was written for another text of "
                             f"{key[0]}#{key[1]} than the data file holds now ({raw[key]!r})")
        found.setdefault(key[0], {})[key[1]] = str(e["question"]).strip()
    return found


def apply(data: Dataset, path: Path) -> Dataset:
    """``data`` with only the overlaid questions, their text replaced.

    An entry pointing at a question the data does not have, or at one whose text changed, is refused by name.
    """
    entries = read(path)
    raw_questions = {(q.sample_id, q.index): q.question for s in data.samples for q in (*s.questions, *s.skipped)}
    wanted: dict[tuple[str, int], str] = {}
    for pos, e in enumerate(entries):
        key = (str(e["sample_id"]), int(e["index"]))
        if key not in raw_questions:
            raise SystemExit(f"--questions {path}: questions[{pos}] points at {key[0]}#{key[1]}, which "
                             f"{data.name} does not have (is it the file the overlay was written for?)")
        if _digest(raw_questions[key]) != e["original_sha256"]:
            raise SystemExit(f"--questions {path}: questions[{pos}] was written for another text of "
                             f"{key[0]}#{key[1]} than {data.name} holds now ({raw_questions[key]!r})")
        wanted[key] = str(e["question"]).strip()
    samples = [
        Sample(s.sample_id, s.messages,
               [replace(q, question=wanted[(q.sample_id, q.index)]) for q in s.questions
                if (q.sample_id, q.index) in wanted], [])
        for s in data.samples
    ]
    return replace(data, name=f"{data.name}+{Path(path).stem}", samples=samples)
