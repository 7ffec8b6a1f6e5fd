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


def replacing(path: Path, questions: dict[tuple[str, int], str], name: str) -> dict[tuple[str, int], str]:
    """The overlay's new texts by ``(sample_id, index)``, each checked against the text it replaces in
    ``questions`` (those of the data file called ``name``): an entry pointing at a question the data does not
    have, or at one whose text changed, is refused by name (SystemExit)."""
    wanted: dict[tuple[str, int], str] = {}
    for pos, e in enumerate(read(path)):
        key = (str(e["sample_id"]), int(e["index"]))
        if key not in questions:
            raise SystemExit(f"--questions {path}: questions[{pos}] points at {key[0]}#{key[1]}, which "
                             f"{name} does not have (is it the file the overlay was written for?)")
        if _digest(questions[key].strip()) != e["original_sha256"]:  # as the dataset reads it: stripped
            raise SystemExit(f"--questions {path}: questions[{pos}] was written for another text of "
                             f"{key[0]}#{key[1]} than {name} holds now ({questions[key]!r})")
        wanted[key] = str(e["question"]).strip()
    return wanted


def by_sample(path: Path, samples: list[dict]) -> dict[str, dict[int, str]]:
    """The overlay's checked texts over raw LoCoMo-format ``samples``: ``{sample_id: {index: text}}``."""
    questions = {(str(s["sample_id"]), i): str(q.get("question", ""))
                 for s in samples for i, q in enumerate(s.get("qa") or [])}
    found: dict[str, dict[int, str]] = {}
    for (sample_id, index), text in replacing(path, questions, "the data file").items():
        found.setdefault(sample_id, {})[index] = text
    return found


def apply(data: Dataset, path: Path) -> Dataset:
    """``data`` with only the overlaid questions, their text replaced (checked: :func:`replacing`)."""
    wanted = replacing(path, {(q.sample_id, q.index): q.question for s in data.samples
                              for q in (*s.questions, *s.skipped)}, data.name)
    samples = [
        Sample(s.sample_id, s.messages,
               [replace(q, question=wanted[(q.sample_id, q.index)]) for q in s.questions
                if (q.sample_id, q.index) in wanted], [])
        for s in data.samples
    ]
    return replace(data, name=f"{data.name}+{Path(path).stem}", samples=samples)
