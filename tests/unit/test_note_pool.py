"""NotePool: the indexed pool decides exactly what a full scan with ``detect`` decides, and judges far fewer notes."""

from __future__ import annotations

import itertools
import random
from datetime import UTC, datetime, timedelta

import pytest

import projections.rules.note_pool as note_pool
from events.model import MessageRecorded
from projections.decisions.note_ops import decide_note_operations
from projections.rules.contradiction import ActiveNote, Relation, actionable, detect
from projections.rules.extraction import extract_notes

EN = [
    "I live in {city}.", "I moved to {city} last month.", "I don't live in {city} anymore.", "I love {food}.",
    "I don't like {food}.", "I switched from {food} to {other}.", "My favourite food is {food}.",
    "I'm so tired today.", "I feel relaxed now.", "I'm really busy with {thing} this week.",
    "We decided to use {thing} for the project.", "Let's drop {thing} and go with {other}.",
    "My sister works as a {job}.", "I work as a {job} now.", "I bought a new {thing} yesterday.",
]
ZH = [
    "我住在{city}。", "我上个月搬到{city}了。", "我不住在{city}了。", "我喜欢吃{food}。", "我不喜欢{food}。",
    "我从{food}换成了{other}。", "今天我很累。", "我现在很放松。", "我们决定用{thing}做这个项目。", "我最近在忙{thing}。",
]
FILL = {
    "city": ["Berlin", "Lyon", "Porto", "Paris", "杭州", "成都", "上海"],
    "food": ["coffee", "tea", "sushi", "cilantro", "火锅", "咖啡", "茶"],
    "other": ["green tea", "PostgreSQL", "MySQL", "豆浆", "牛奶"],
    "thing": ["PostgreSQL", "Redis", "the garden", "pottery", "数据库", "新电脑"],
    "job": ["nurse", "teacher", "engineer", "counselor"],
}


def _messages(templates: list[str], n: int, seed: int) -> list[tuple[str, MessageRecorded]]:
    rng = random.Random(seed)
    start = datetime(2024, 1, 1, tzinfo=UTC)
    out = []
    for i in range(n):
        text = rng.choice(templates).format(**{k: rng.choice(v) for k, v in FILL.items()})
        out.append((f"m{i}", MessageRecorded(conversation_id="c", role="user", speaker=rng.choice([None, "Ana"]),
                                             text=text, occurred_at=start + timedelta(hours=i),
                                             client_message_id=f"c{i}")))
    return out


def _decide(messages, full_scan: bool, monkeypatch) -> list:
    if full_scan:  # the reference: every comparable note judged, as before the index
        monkeypatch.setattr(note_pool.NotePool, "actionable", lambda self, c: [
            v for v in detect(c, self.pool(c)) if v.relation is not Relation.CONSISTENT])
        monkeypatch.setattr(note_pool.NotePool, "identical", lambda self, c: list(detect(c, [
            n for n in self.pool(c) if (n.text, n.subject) == (c.text, c.subject)])))
    ids = itertools.count()
    try:
        return [(op_id, op.model_dump(mode="json"))
                for op_id, op in decide_note_operations([], messages, lambda: f"op{next(ids)}")]
    finally:
        monkeypatch.undo()


@pytest.mark.parametrize("templates,seed", [(EN, 1), (EN, 2), (ZH, 3), (EN + ZH, 4)])
def test_the_index_decides_what_a_full_scan_decides(templates, seed, monkeypatch):
    messages = _messages(templates, 160, seed)
    indexed = _decide(messages, False, monkeypatch)
    assert indexed == _decide(messages, True, monkeypatch)
    ops = {op["op"] for _, op in indexed}
    assert {"add", "update", "boost"} <= ops  # the stream exercises supersession and reinforcement


def test_a_candidate_meets_only_the_notes_it_can_relate_to(monkeypatch):
    judged = []
    real = note_pool.actionable
    monkeypatch.setattr(note_pool, "actionable", lambda c, notes: judged.append(len(notes)) or real(c, notes))
    notes = [f"I love visiting museum {n}." for n in range(100)]
    messages = [(f"m{i}", MessageRecorded(conversation_id="c", role="user", text=t,
                                           occurred_at=datetime(2024, 1, 1, tzinfo=UTC) + timedelta(minutes=i),
                                           client_message_id=f"c{i}"))
                for i, t in enumerate([*notes, "I love sushi."])]
    assert extract_notes("I love sushi.")
    ops = decide_note_operations([], messages, iter(f"op{i}" for i in range(10_000)).__next__)
    assert sum(op.op == "add" for _, op in ops) == 101  # 100 museum notes held when "sushi" arrives
    assert judged[-1] == 0  # "sushi" shares no term, slot or state with any of them: none is judged


@pytest.mark.parametrize("templates,seed", [(EN, 5), (ZH, 6), (EN + ZH, 7)])
def test_actionable_is_detect_without_the_consistent_verdicts(templates, seed):
    """Every candidate of a stream against every note before it (no index): the same verdicts, in order."""
    candidates = [c for _, m in _messages(templates, 120, seed) for c in extract_notes(m.text, speaker=m.speaker)]
    notes = [ActiveNote.from_candidate(f"n{i}", c) for i, c in enumerate(candidates)]
    relations = set()
    for i, candidate in enumerate(candidates):
        expected = [v for v in detect(candidate, notes[:i]) if v.relation is not Relation.CONSISTENT]
        assert actionable(candidate, notes[:i]) == expected
        relations |= {v.relation for v in expected}
    assert {Relation.SUPERSEDES, Relation.REINFORCES} <= relations  # the term rule and the others fired
