"""The Evolution Dispatcher (``dispatcher-v1``, seed 003 §5–§6): feedback signals in, gradual adjustments out.

Pure: the user's folded memory (earlier signals and adjustments), the new
``feedback_detected`` signal and its time in, ``memory_adjusted`` events out.
The per-layer rules (seed 003 §6):

- **Blame.** A signal names everything in the judged reply's context; the
  dispatcher blames what the reply drew on (the offline usage judge,
  :mod:`projections.rules.usage`, over the recorded reply and the memories'
  texts); a blamed note brings its source turns along (a context shows the
  note instead of them, and they state the same claim). When the reply
  repeats none of them, the whole context is blamed, but only the working
  layer reacts to that. What the user's own turn restates is never blamed
  (``dispatcher-v3``): a correction names the new value ("No, that's
  outdated, I moved to Porto"), and the items holding a term the user added
  to the reply ("Porto") are what the user says is true, not the stale
  memory (on the stale-facts benchmark the usage judge blamed "I moved to
  Porto" along with "I live in Lyon" when a reply repeated "live", and v2
  then invalidated the current fact). A note's subject (the user's name) is
  not content for the usage judge here (:func:`used_items`). An invalidated turn takes along the
  active notes read from it alone (:func:`_notes_read_from`).
- **Working layer (at once).** A negative (or mixed, see below) signal about
  the answer or the reasoning with confidence ≥ ``working_confidence``
  penalises the blamed memories and notes by ``working_factor`` for
  ``working_hours`` (a temporary ranking factor).
- **Penalties are scoped to the question** (``dispatcher-v2``). A rejected
  reply says its memories were wrong *for the question it answered*, not
  that they are wrong: the same turn is often the evidence for another
  question. A penalty records that question (``scope``, from the signal)
  and scales only the scores of queries on the same topic
  (:func:`projections.rules.text.same_topic`); v1 penalised every query,
  and on the feedback benchmark that pushed the evidence of unrelated
  questions out of the top 10.
- **Stable layer (after repeated, consistent, confident signals).** A memory
  or note the reply drew on is invalidated (it leaves default retrieval) when
  the last ``stable_signals`` signals naming it, since its last stable
  adjustment, were all negative with confidence ≥ ``stable_confidence``, all
  blamed it, and all said it is stale (hint ``invalidate``: the user
  contradicted its content, whatever the question, so it leaves retrieval for
  every query); if they did not all say stale, it gets a lasting penalty
  (``stable_factor``) instead, counted over the signals on the new signal's
  question only and scoped to it. A positive signal on a reply that drew on
  it breaks the streak; a neutral one does not count, nor (``dispatcher-v3``)
  does a signal on a reply that did not draw on it — a context holds many
  memories, and "thanks" for the answer about the user's car says nothing
  about the stale pet's name beside it (v2 let it break the streak, so a
  fact corrected twice was never invalidated when other answers came between).
- **Skills.** A style or tool-choice signal with the hint ``prefer`` and
  confidence ≥ ``working_confidence`` writes the next version of that skill:
  the user's words as the preference, its weight growing with each
  confirmation; working layer until ``stable_signals`` signals confirmed it.
- A mixed signal is split (seed §5 ``split_targets``): its style and
  tool-choice parts act as above; its answer part is ambiguous, so only the
  working layer reacts, and it does not count towards the stable layer.

Every adjustment names the signals it aggregates; each is reversible by an
``adjustment_reverted`` event, and the signals an adjustment used are not
counted again after it is reverted.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from events.feedback_events import FeedbackDetected
from events.learning_events import MemoryAdjusted
from projections.folds.feedback import Signal
from projections.folds.state import UserMemory
from projections.rules.extraction import key_terms
from projections.rules.text import same_topic
from projections.rules.usage import judge_usage

DISPATCHER_ID = "dispatcher-v3"
ANSWER_TARGETS = ("final_answer", "reasoning")
SKILL_TARGETS = ("style", "tool_choice")


@dataclass(frozen=True, slots=True)
class DispatchConfig:
    working_confidence: float = 0.6
    stable_confidence: float = 0.8
    stable_signals: int = 2
    working_factor: float = 0.5
    working_hours: float = 24.0
    stable_factor: float = 0.5
    skill_step: float = 0.35  # a confirmation adds this times the signal's confidence to the skill's weight


DEFAULT_DISPATCH = DispatchConfig()


@dataclass(frozen=True, slots=True)
class Blame:
    ids: tuple[str, ...]
    used: bool  # the reply drew on them (False: the whole context, nothing repeated)


def item_text(memory: UserMemory, item_id: str) -> str | None:
    if item_id in memory.notes.notes:
        return memory.notes.notes[item_id].text
    message = memory.messages.by_id.get(item_id)
    return message.text if message is not None else None


def used_items(memory: UserMemory, reply: str, items: list[tuple[str, str]]) -> list[tuple[str, float]]:
    """The usage judge over ``items`` (id, text), best first; a note's subject — the user, whom the note writer
    names for "I" ("en-00 lives in Dublin") — is not content: a reply naming the user (or quoting a context line
    with the user's name) draws on no note for that alone (``dispatcher-v3``)."""
    scored = []
    for item_id, text in items:
        note = memory.notes.notes.get(item_id)
        scored += judge_usage(reply, [(item_id, text)], ignore=(note.subject,) if note and note.subject else ())
    return sorted(scored, key=lambda pair: -pair[1])


def restated(user_input: str, reply: str) -> frozenset[str]:
    """The content terms the user's turn adds to the reply it answers (a correction's new value: "Porto")."""
    return frozenset(key_terms(user_input)) - frozenset(key_terms(reply))


def blame(memory: UserMemory, signal: FeedbackDetected) -> Blame:
    """What the judged reply drew on among the memories and notes of its context (all of them if none), minus
    what the user's turn restates."""
    added = restated(signal.user_input, signal.agent_response)
    items = [(m, text) for m in signal.memory_ids
             if (text := item_text(memory, m)) is not None and not added & frozenset(key_terms(text))]
    used = [m for m, _ in used_items(memory, signal.agent_response, items)]
    chosen = used or [m for m, _ in items]
    out: list[str] = []
    for m in chosen:
        out.append(m)
        note = memory.notes.notes.get(m)
        if note is not None:
            out += [s for s in note.source_message_ids if s in memory.messages.by_id]
    return Blame(tuple(dict.fromkeys(out)), bool(used))


def _signal_blamed(memory: UserMemory, signal_id: str, target: str) -> bool:
    """Whether an earlier signal's working adjustment blamed ``target`` as drawn on by its reply."""
    for adjustment_id in memory.adjustments.by_signal.get(signal_id, ()):
        a = memory.adjustments.adjustments[adjustment_id]
        if a.layer == "working" and target in a.target_ids and "blame:used" in a.reason:
            return True
    return False


def _drew_on(memory: UserMemory, signal: Signal, target: str) -> bool:
    """Whether an earlier signal's reply drew on ``target`` (blamed for it, or repeating it or a note of it)."""
    if _signal_blamed(memory, signal.event_id, target):
        return True
    items = [(target, t) for t in (item_text(memory, target),) if t is not None]
    if target in memory.messages.by_id:
        items += [(n.note_id, n.text) for n in memory.notes.by_source(target)]
    return bool(signal.reply and used_items(memory, signal.reply, items))


def _streak(memory: UserMemory, target: str, config: DispatchConfig,
            topic: str | None = None) -> list[tuple[str, bool]]:
    """The earlier consistent signals about ``target``, newest first: (signal id, said stale).

    With ``topic``, only the signals on replies to a question on that topic count (the others are skipped)."""
    consumed = {s for a in memory.adjustments.about(target) if a.layer == "stable" for s in a.signal_ids}
    last_stable = max((a.seq for a in memory.adjustments.about(target) if a.layer == "stable"), default=0)
    signals = {s.event_id: s for s in memory.feedback.about(target)}
    if target in memory.messages.by_id:  # a context may have named the turn through its note
        for note in memory.notes.by_source(target):
            signals.update((s.event_id, s) for s in memory.feedback.about(note.note_id))
    out: list[tuple[str, bool]] = []
    for s in sorted(signals.values(), key=lambda s: -s.seq):
        if s.seq <= last_stable or s.event_id in consumed:
            break
        if s.type == "neutral" or (topic is not None and (s.query is None or not same_topic(s.query, topic))):
            continue
        if not _drew_on(memory, s, target):
            continue  # its reply did not draw on the target: it says nothing about it
        if s.type != "negative" or s.confidence < config.stable_confidence:
            break
        if not _signal_blamed(memory, s.event_id, target):
            break  # the reply drew on it, yet the user's turn restated it: not stale
        out.append((s.event_id, "invalidate" in s.action_hints))
    return out


def dispatch(
    memory: UserMemory, signal_id: str, signal: FeedbackDetected, at: datetime, new_id: Callable[[], str],
    config: DispatchConfig = DEFAULT_DISPATCH,
) -> list[tuple[str, MemoryAdjusted]]:
    """The adjustments one new signal calls for, given the user's earlier signals and adjustments."""
    if signal.type == "neutral" or signal.confidence < config.working_confidence:
        return []
    out: list[tuple[str, MemoryAdjusted]] = []

    def emit(**fields) -> None:
        out.append((new_id(), MemoryAdjusted(at=at, dispatcher=DISPATCHER_ID, **fields)))

    negative = signal.type in ("negative", "mixed")
    if negative and any(t in ANSWER_TARGETS for t in signal.targets) and signal.memory_ids:
        blamed = blame(memory, signal)
        if blamed.ids:
            emit(action="penalty", layer="working", target_ids=blamed.ids, factor=config.working_factor,
                 until=at + timedelta(hours=config.working_hours), signal_ids=(signal_id,), scope=signal.query,
                 reason=f"{signal.type} feedback ({signal.confidence:.2f}) on the reply; "
                        f"blame:{'used' if blamed.used else 'context'}")
        if signal.type == "negative" and blamed.used and signal.confidence >= config.stable_confidence:
            out += _stable(memory, signal_id, signal, blamed, at, new_id, config)
    if "prefer" in signal.action_hints:
        for skill in (t for t in signal.targets if t in SKILL_TARGETS):
            previous = next((a for a in reversed(list(memory.adjustments.adjustments.values()))
                             if a.action == "prefer" and a.skill == skill and a.reverted_at is None), None)
            version = (previous.version or 0) + 1 if previous else 1
            weight = min(1.0, ((previous.weight or 0.0) if previous else 0.0) + config.skill_step * signal.confidence)
            signals = ((*previous.signal_ids, signal_id) if previous else (signal_id,))
            emit(action="prefer", layer="stable" if len(signals) >= config.stable_signals else "working",
                 skill=skill, preference=signal.user_input.strip()[:300], weight=round(weight, 4), version=version,
                 signal_ids=signals, reason=f"{skill} preference stated ({signal.confidence:.2f}), version {version}")
    return out


def _stable(memory: UserMemory, signal_id: str, signal: FeedbackDetected, blamed: Blame, at: datetime,
            new_id: Callable[[], str], config: DispatchConfig) -> list[tuple[str, MemoryAdjusted]]:
    stale_now = "invalidate" in signal.action_hints
    groups: dict[tuple[str, tuple[str, ...]], list[str]] = {}  # (action, signals) -> targets
    for target in blamed.ids:
        if memory.adjustments.invalidated(target, None) is not None:
            continue
        streak = [(signal_id, stale_now), *_streak(memory, target, config)][: config.stable_signals]
        if len(streak) >= config.stable_signals and all(stale for _, stale in streak):
            action = "invalidate"  # its content was contradicted: whatever the question
        else:  # wrong for this question: the signals on replies to it
            streak = [(signal_id, stale_now), *_streak(memory, target, config, signal.query)][: config.stable_signals]
            action = "penalty"
        if len(streak) < config.stable_signals:
            continue
        signals = tuple(reversed([s for s, _ in streak]))
        groups.setdefault((action, signals), []).append(target)
    out = []
    for (action, signals), targets in groups.items():
        if action == "invalidate":
            targets += _notes_read_from(memory, targets)
        what = "stale (the user corrected it)" if action == "invalidate" else "wrong (the user rejected it)"
        event = MemoryAdjusted(
            action=action, layer="stable", target_ids=tuple(targets),
            factor=config.stable_factor if action == "penalty" else None, signal_ids=signals, at=at,
            scope=signal.query if action == "penalty" else None,
            reason=f"{len(signals)} consistent negative signals (confidence ≥ {config.stable_confidence}) on replies "
                   f"that drew on it: {what}",
            dispatcher=DISPATCHER_ID)
        out.append((new_id(), event))
    return out


def _notes_read_from(memory: UserMemory, targets: list[str]) -> list[str]:
    """The active notes read only from turns now invalidated (``targets``, or earlier): they restate the stale claim.

    A blamed note brings its source turns along; symmetrically (``dispatcher-v3``), an invalidated turn takes
    along the notes that stand for it alone (v2 left the note "lives in Lyon" answering after its turn was gone)."""
    gone = set(targets)
    out: list[str] = []
    for turn in targets:
        for note in memory.notes.by_source(turn):
            if (note.note_id in gone or note.valid_to is not None
                    or memory.adjustments.invalidated(note.note_id, None) is not None):
                continue
            if all(s in gone or memory.adjustments.invalidated(s, None) is not None for s in note.source_message_ids):
                gone.add(note.note_id)
                out.append(note.note_id)
    return out
