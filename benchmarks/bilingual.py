"""A bilingual dev file: each user's memory holds an English chat and a Chinese one, asked in both languages.

    python -m benchmarks.bilingual --out /tmp/bilingual_dev.json
    python -m benchmarks.locomo --data /tmp/bilingual_dev.json --embedder multilingual-e5-small --out X.json

No dev file has a user who speaks two languages: LoCoMo and REALTALK are
English, MemDaily Chinese on both sides. This one is made from them (in LoCoMo
format, written where ``--out`` says; nothing is copied into the repository):
user *i* gets MemDaily haystack *i* and one third of LoCoMo conversation
*i* mod 5 (by sessions, LoCoMo's first), its sessions and dialogue ids
renumbered so the two do not collide. Its questions, each category named by
``question_type``:

- ``en→en`` (category 1): LoCoMo's questions whose evidence lies in that third;
- ``zh→zh`` (2): MemDaily's questions;
- ``en→zh`` (3): MemDaily's questions that ``--questions`` translates
  (default: ``benchmarks/data/memdaily_dev_en_questions.json``, English by hand);
- ``zh→en`` (4): LoCoMo's questions of that third that ``--zh-questions``
  translates (default: ``benchmarks/data/locomo_dev_zh_questions.json``,
  Chinese by hand, seven per user).

A search that reads only one language well shows it here: English questions
about the Chinese turns, and each language's own questions beside turns of the
other.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

from benchmarks import question_overlay
from benchmarks.dataset import EVIDENCE_ID

HERE = Path(__file__).resolve().parent
DATA = HERE.parent.parent / "shared" / "data"
SESSION = re.compile(r"^session_(\d+)$")
PARTS = 3  # each LoCoMo conversation is shared by this many users, a run of its sessions each
CATEGORIES = {"en→en": 1, "zh→zh": 2, "en→zh": 3, "zh→en": 4}


def _sessions(conv: dict) -> list[int]:
    return sorted(int(m.group(1)) for k in conv if (m := SESSION.match(k)))


def _evidence_sessions(item: dict) -> set[int]:
    return {int(s) for s, _ in EVIDENCE_ID.findall(json.dumps(item.get("evidence", [])))}


def _renumber(evidence, session: dict[int, int]) -> list[str]:
    """Evidence ids with their session numbers mapped through ``session``."""
    return [f"D{session[int(s)]}:{t}" for s, t in EVIDENCE_ID.findall(json.dumps(evidence))]


def _copy_session(conv: dict, source: dict, old: int, new: int) -> None:
    """``source``'s session ``old`` (its turns' dialogue ids renumbered, its date) as ``conv``'s session ``new``."""
    conv[f"session_{new}"] = [dict(t, dia_id=re.sub(r"^D\d+:", f"D{new}:", str(t.get("dia_id", ""))))
                              for t in source[f"session_{old}"]]
    if f"session_{old}_date_time" in source:
        conv[f"session_{new}_date_time"] = source[f"session_{old}_date_time"]


def merge(english: dict, part: int, chinese: dict, translated: dict[int, str], to_chinese: dict[int, str]) -> dict:
    """One bilingual user: ``part`` of ``english``'s sessions, then ``chinese``'s sessions after them;
    ``translated``: English texts of ``chinese``'s questions by index, ``to_chinese``: Chinese texts of
    ``english``'s."""
    conv_en, conv_zh = english["conversation"], chinese["conversation"]
    numbers = _sessions(conv_en)
    size = -(-len(numbers) // PARTS)
    kept = numbers[part * size:(part + 1) * size]
    conv: dict = {"speaker_a": conv_en.get("speaker_a"), "speaker_b": conv_en.get("speaker_b")}
    english_to = {old: new for new, old in enumerate(kept, start=1)}
    chinese_to = {n: n + len(kept) for n in _sessions(conv_zh)}
    for source, mapping in ((conv_en, english_to), (conv_zh, chinese_to)):
        for old, new in mapping.items():
            _copy_session(conv, source, old, new)
    qa = []
    for index, item in enumerate(english.get("qa") or []):
        sessions = _evidence_sessions(item)
        if sessions and sessions <= set(kept):
            evidence = _renumber(item["evidence"], english_to)
            qa.append(dict(item, evidence=evidence, category=CATEGORIES["en→en"], question_type="en→en"))
            if index in to_chinese:
                qa.append(dict(item, question=to_chinese[index], evidence=evidence, category=CATEGORIES["zh→en"],
                               question_type="zh→en"))
    for index, item in enumerate(chinese.get("qa") or []):
        evidence = _renumber(item.get("evidence", []), chinese_to)
        qa.append(dict(item, evidence=evidence, category=CATEGORIES["zh→zh"], question_type="zh→zh"))
        if index in translated:
            qa.append(dict(item, question=translated[index], evidence=evidence, category=CATEGORIES["en→zh"],
                           question_type="en→zh"))
    return {"sample_id": f"bilingual-{chinese['sample_id']}", "conversation": conv, "qa": qa}


def build(locomo: Path, memdaily: Path, overlay: Path, zh_overlay: Path | None = None) -> list[dict]:
    english = json.loads(locomo.read_text(encoding="utf-8"))
    chinese = json.loads(memdaily.read_text(encoding="utf-8"))
    to_english = question_overlay.by_sample(overlay, chinese)
    to_chinese = question_overlay.by_sample(zh_overlay, english) if zh_overlay is not None else {}
    users = min(len(chinese), len(english) * PARTS)
    return [merge(english[i % len(english)], i // len(english), chinese[i],
                  to_english.get(chinese[i]["sample_id"], {}),
                  to_chinese.get(english[i % len(english)]["sample_id"], {})) for i in range(users)]


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks.bilingual", description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True, type=Path, help="where to write the bilingual LoCoMo-format file")
    p.add_argument("--locomo", type=Path, default=DATA / "locomo" / "locomo10_dev.json")
    p.add_argument("--memdaily", type=Path, default=DATA / "memdaily" / "memdaily_dev.json")
    p.add_argument("--questions", type=Path, default=HERE / "data" / "memdaily_dev_en_questions.json",
                   help="English questions over the MemDaily file (benchmarks.question_overlay format)")
    p.add_argument("--zh-questions", type=Path, default=HERE / "data" / "locomo_dev_zh_questions.json",
                   help="Chinese questions over the LoCoMo file (benchmarks.question_overlay format)")
    args = p.parse_args(argv)
    for name in ("locomo", "memdaily", "questions", "zh_questions"):
        if not getattr(args, name).is_file():
            p.error(f"--{name.replace('_', '-')} {getattr(args, name)}: no such file")
    samples = build(args.locomo, args.memdaily, args.questions, args.zh_questions)
    args.out.write_text(json.dumps(samples, ensure_ascii=False), encoding="utf-8")
    counts: dict[str, int] = {}
    for s in samples:
        for q in s["qa"]:
            counts[q["question_type"]] = counts.get(q["question_type"], 0) + 1
    turns = sum(len(v) for s in samples for k, v in s["conversation"].items() if SESSION.match(k))
    print(f"wrote {args.out}: {len(samples)} users, {turns} turns, questions " +
          ", ".join(f"{k} {v}" for k, v in counts.items()))


if __name__ == "__main__":
    main()
