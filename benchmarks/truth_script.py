"""The scripted users of :mod:`benchmarks.truth`: three sessions weeks apart, the questions asked between and after.

Seeded, no data file. Each user (English or Chinese) talks with the assistant in three sessions: the first on day 0,
the second 18 to 26 days later, the third 20 to 30 days after that. Every user turn gets an assistant reply. The
first session states every fact (preferences, project decisions, constraints; diet and a disliked ingredient always
in one turn, some other pairs too) among everyday chatter; the later ones change some of them (none, once or twice
each; two changes of one session sometimes in one turn) and state the constraints the first left out. Between the
sessions the user asks things (``reads``: each a context built at that moment, which counts as an access), and two
weeks after the last one the questions are asked.

Every fact keeps, for each of its values, the client ids of the user turns that state it and of the assistant
replies that repeat it: which retrieved line carries which value is read from ids, not guessed from text.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from benchmarks.truth_dialogues import CLOSING, CONSTRAINT, FILLER, GREETING, JOINT, JOINT_ACK, NAMES, PROJECTS, SLOTS

CHANGING = ("drink", "editor", "city", "phone", "hobby", "database", "meeting", "hosting", "launch")
SESSIONS = 3
FIRST_DAY = datetime(2024, 1, 8, tzinfo=UTC)
CHANGES_WEIGHTS = (2, 5, 3)  # a changing slot changes 0, 1 or 2 times
FILLER_PER_SESSION = (7, 9)
READS_AFTER = ((2, 6, 11), (3, 9), (4,))  # days after each session when the user asks things
IN_ORDER = ("launch",)  # slots whose pool is in time order
READS_EACH = 3  # questions asked at each of those moments
ASKED_AFTER = (12, 16)  # days after the last session when the benchmark's questions are asked


@dataclass(frozen=True)
class Fact:
    fact_id: str
    user_id: str
    language: str
    slot: str
    kind: str  # preference, decision, constraint
    values: tuple[str, ...]  # oldest first; the last is current
    keywords: tuple[tuple[str, ...], ...]  # per value: the words that show it in a note's text
    question: str
    read: str  # what the user asks between sessions (a constraint: its task)
    task: str | None  # a constraint: a request whose context should carry it
    stated: tuple[tuple[str, ...], ...]  # per value: client ids of the user turns stating it
    echoed: tuple[tuple[str, ...], ...]  # per value: client ids of the assistant replies repeating it
    multi_clause: bool  # a turn stating one of its values states another fact too

    @property
    def changed(self) -> bool:
        return len(self.values) > 1

    @property
    def current(self) -> str:
        return self.values[-1]


@dataclass(frozen=True)
class Script:
    user_id: str
    language: str
    name: str
    project: str
    sessions: tuple[tuple[dict, ...], ...]  # add_messages input, one tuple per session
    reads: tuple[tuple[tuple[datetime, str], ...], ...]  # after each session: (when, what the user asks)
    asked_at: datetime
    facts: tuple[Fact, ...]


@dataclass
class _Turn:
    slots: tuple[str, ...]
    text: str
    ack: str
    echoes: tuple[str, ...]  # the slots whose value the ack repeats


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:]


def _history(slot: str, rng: random.Random, pool: tuple[str, ...]) -> tuple[list[str], list[int]]:
    """The values of one slot, oldest first, and the session (0-based) that states each."""
    if slot not in CHANGING:
        return [rng.choice(pool)], [0 if rng.random() < 0.7 else 1]
    n = rng.choices((0, 1, 2), weights=CHANGES_WEIGHTS)[0]
    values = rng.sample(pool, n + 1)
    if slot in IN_ORDER:  # a launch slips: each new date later than the last
        values.sort(key=pool.index)
    return values, [0] + ([rng.choice((1, 2))] if n == 1 else [1, 2] if n == 2 else [])


def _turns(language: str, values: dict, sessions: dict, project: str, rng: random.Random) -> list[list[_Turn]]:
    """What the user says about the facts in each session, with the assistant's reply."""
    slots, joint = SLOTS[language], JOINT[language]
    out: list[list[_Turn]] = [[] for _ in range(SESSIONS)]
    done: set[tuple[str, int]] = set()  # (slot, value index) already said

    def fill(template: str, **kw) -> str:
        return template.format(project=project, **kw)

    for (how, a, b), templates in joint.items():
        # "state": both first values; "change": a later value of each, said in the same session
        pairs = [(0, 0)] if how == "state" else [(ia, ib) for ia in range(1, len(values[a]))
                                                 for ib in range(1, len(values[b])) if sessions[a][ia] == sessions[b][ib]]
        for ia, ib in pairs:
            if (a, ia) in done or (b, ib) in done or not (b == "dislike" or rng.random() < 0.6):
                continue
            text = fill(rng.choice(templates), a=values[a][ia], b=values[b][ib], a_old=values[a][ia - 1],
                        a_new=values[a][ia], b_old=values[b][ib - 1], b_new=values[b][ib])
            out[sessions[a][ia]].append(_Turn((a, b), text, rng.choice(JOINT_ACK[language]), ()))
            done |= {(a, ia), (b, ib)}
    for name, slot in slots.items():
        for i, s in enumerate(sessions[name]):
            if (name, i) in done:
                continue
            v = values[name][i]
            text = fill(rng.choice(slot.state), v=v) if i == 0 else fill(
                rng.choice(slot.change), old=values[name][i - 1], new=v)
            ack = rng.choice(slot.ack)
            out[s].append(_Turn((name,), text, _sentence(fill(ack, v=v)), (name,) if "{v}" in ack else ()))
    return out


def script(user_id: str, language: str, n: int, rng: random.Random) -> Script:
    slots = SLOTS[language]
    name, project = NAMES[language][n % len(NAMES[language])], PROJECTS[language][n % len(PROJECTS[language])]
    values, sessions = {}, {}
    for slot_name, slot in slots.items():
        values[slot_name], sessions[slot_name] = _history(slot_name, rng, slot.pool)
    sessions["dislike"] = list(sessions["diet"])  # stated together
    turns = _turns(language, values, sessions, project, rng)

    start = FIRST_DAY + timedelta(days=rng.randrange(0, 300), hours=rng.randrange(8, 19))
    gaps = (0, rng.randint(18, 26), rng.randint(20, 30))
    days = [sum(gaps[: i + 1]) for i in range(SESSIONS)]
    fillers = list(FILLER[language])
    rng.shuffle(fillers)
    stated: dict[tuple[str, int], list[str]] = {}
    echoed: dict[tuple[str, int], list[str]] = {}
    multi: set[str] = set()
    said: dict[str, int] = {}  # slot → how many of its values were said so far
    out_sessions = []
    for s in range(SESSIONS):
        chat = [fillers.pop() for _ in range(rng.randint(*FILLER_PER_SESSION))]
        middle: list[tuple[str, str, _Turn | None]] = [(u, a, None) for u, a in chat]
        middle += [(t.text, t.ack, t) for t in turns[s]]
        rng.shuffle(middle)
        hello, bye = rng.choice(GREETING[language]), rng.choice(CLOSING[language])
        exchanges = [(hello[0], hello[1], None), *middle, (bye[0], bye[1], None)]
        at = start + timedelta(days=days[s], minutes=rng.randrange(0, 120))
        messages = []
        for u, a, turn in exchanges:
            ids = []
            for role, text in (("user", u), ("assistant", a.format(name=name))):
                cid = f"{user_id}-s{s + 1}-{len(messages)}"
                messages.append({"text": text, "occurred_at": at.isoformat(), "role": role,
                                 "speaker": name if role == "user" else "assistant",
                                 "conversation_id": f"{user_id}-s{s + 1}", "client_message_id": cid})
                ids.append(cid)
                at += timedelta(minutes=rng.randint(1, 3))
            if turn is not None:
                for slot_name in turn.slots:
                    key = (slot_name, said.get(slot_name, 0))
                    stated.setdefault(key, []).append(ids[0])
                    if slot_name in turn.echoes:
                        echoed.setdefault(key, []).append(ids[1])
                    said[slot_name] = key[1] + 1
                    if len(turn.slots) > 1:
                        multi.add(slot_name)
        out_sessions.append(tuple(messages))

    facts = []
    for slot_name, slot in slots.items():
        vs = values[slot_name]
        task = rng.choice(slot.tasks).format(project=project) if slot.tasks else None
        facts.append(Fact(
            fact_id=f"{user_id}:{slot_name}", user_id=user_id, language=language, slot=slot_name, kind=slot.kind,
            values=tuple(vs), keywords=tuple(slot.words(v) for v in vs),
            question=slot.question.format(project=project),
            read=task if slot.kind == CONSTRAINT else slot.read.format(project=project), task=task,
            stated=tuple(tuple(stated.get((slot_name, i), ())) for i in range(len(vs))),
            echoed=tuple(tuple(echoed.get((slot_name, i), ())) for i in range(len(vs))),
            multi_clause=slot_name in multi))
    reads = []
    for s, after in enumerate(READS_AFTER):
        moments = []
        for d in after:
            when = start + timedelta(days=days[s] + d, hours=rng.randrange(1, 10), minutes=rng.randrange(60))
            moments += [(when, f.read) for f in rng.sample(facts, READS_EACH)]
        reads.append(tuple(moments))
    asked_at = start + timedelta(days=days[-1] + rng.randint(*ASKED_AFTER), hours=rng.randrange(1, 10),
                                 minutes=rng.randrange(60))
    return Script(user_id, language, name, project, tuple(out_sessions), tuple(reads), asked_at, tuple(facts))


def scripts(seed: int, users: int) -> list[Script]:
    """``users`` English and ``users`` Chinese users, seeded."""
    rng = random.Random(seed)
    return [script(f"{lang}-{i:02d}", lang, i, rng) for lang in ("en", "zh") for i in range(users)]
