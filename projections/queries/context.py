"""Context assembly: the text an agent puts in its prompt, cut to a token budget,
with the provenance of every line kept.

Notes come first, within their share of the budget: the constraints the question
reaches and every health, diet, allergy or safety constraint, then the other
notes the question reaches in the order of the hits they were read from, then
the other constraints and the core notes; the retrieved turns fill the rest in
rank order (a turn shown in part where what it still says puts it). The text
shows the notes by category (a category's header, then its notes) and the turns
by day (a date header, then that day's turns in time order): each header is paid
once, by the first line taken under it. A note read from a hit never takes the
room of a better hit's turn that the budget could show (:func:`reach`): in a
20-token context the note of a turn far down the hits does not stand in for the
turn that matched. A note's line is its category and text, dated only where the
day matters (:func:`dated`); its provenance names its version and its source
turns.

Nothing a turn said is lost to its notes: a turn is left out for its notes only
when they carry all of it (:mod:`projections.queries.note_coverage`), and a turn
they carry in part is shown by the clauses they leave out ("Alice: … I'm
vegetarian" beside the note "Alice hates cilantro"), where what it still says
puts it among the turns: its score weighed by the share of its content its
notes leave out (:func:`_by_worth`). A turn a
later statement superseded (:mod:`projections.queries.stages.supersession`) is
left out when the version in force is in the context, and otherwise shown with
its label (``superseded by "…" on …``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from projections.queries.note_coverage import carried_share, uncarried
from projections.queries.rerank import time_intent
from projections.queries.results import Context, ContextItem, Hit, category_header, day_header


CATEGORY_ORDER: tuple[str, ...] = ("constraint", "decision", "preference", "fact")
# A note's line (:func:`note_line`, :attr:`ContextItem.line`), told apart from a turn's ("[2024-05-03] Maya: …").
NOTE_LINE = re.compile(r"^\[(?:" + "|".join(CATEGORY_ORDER) + r")\] ")
# A category's header in :attr:`Context.text` ("[fact]"), above its notes, told apart from a day's ("[2024-05-03]").
NOTE_HEADER = re.compile(r"^\[(?:" + "|".join(CATEGORY_ORDER) + r")\]$")


@dataclass(frozen=True, slots=True)
class NoteEntry:
    """A note offered to the context, resolved to its source turns by the caller."""

    note_id: str
    category: str
    text: str
    version: int
    valid_from: datetime
    source_ids: tuple[str, ...]
    turn_ids: tuple[str, ...]
    conversation_id: str
    score: float
    offered: bool = False  # offered whatever the question (a constraint or a core note), not read from a hit
    safety: bool = False  # a health, diet, allergy or safety constraint, or a prohibition ("must not", "不能")
    rank: int = 0  # the position (from 1) of the best hit it was read from; 0 when offered


def _tier(note: NoteEntry) -> int:
    """Which notes a context takes first: the constraints the question reaches and every safety constraint, then
    the other notes the question reaches, then the other constraints, then core notes."""
    if note.category == "constraint" and (note.safety or not note.offered):
        return 0
    if not note.offered:
        return 1
    return 2 if note.category == "constraint" else 3


def note_line(note: NoteEntry, dated: bool = False) -> str:
    """A note's line: its category and text (``[preference] Maya switched to coffee``), and with ``dated`` the day
    it holds from (`` (since 2024-04-10)``)."""
    return f"{category_header(note.category)} {note_body(note, dated)}"


def note_body(note: NoteEntry, dated: bool = False) -> str:
    """A note's line under its category's header in :attr:`Context.text`: its text, dated with ``dated``."""
    since = f" (since {note.valid_from.date().isoformat()})" if dated else ""
    return f"{note.text}{since}"


def dated(note: NoteEntry, when_asked: bool) -> bool:
    """Whether a note's line says since when it holds: for a question about time ("when did …?", "什么时候…？")
    and for a note that replaced an earlier version (the day the value changed). Otherwise the day costs about ten
    tokens a turn could use, and the turns in the context carry their own dates."""
    return when_asked or note.version > 1


def format_line(hit: Hit, text: str | None = None) -> str:
    return f"{day_header(hit.occurred_at.date().isoformat())} {body_line(hit, text)}"


def body_line(hit: Hit, text: str | None = None) -> str:
    """A turn's line under its day's header in :attr:`Context.text`: who said it and what (``text``: the part of
    it shown, default all of it; for a superseded turn, by what and when)."""
    who = f"{hit.speaker}: " if hit.speaker else f"{hit.role}: "
    label = hit.breakdown.get("superseded")
    return f"{who}{hit.text if text is None else text}" + (f" ({label})" if label else "")


@dataclass(frozen=True, slots=True)
class _Room:
    """What the notes of a context may take: ``share`` tokens, and no room the ``budget`` needs for the turns of the
    ``kept`` hits (memory id and line size, best first: those it could show whole)."""

    share: int
    budget: int
    kept: tuple[tuple[str, int], ...]

    def leaves_room(self, note: NoteEntry, used: int, stated: set[str]) -> bool:
        """Whether the notes taken, ``note`` (read from the hit ranked ``note.rank``) among them, ``used`` tokens
        that leave room for the turns of the kept hits ranked above it that no note taken stands for (``stated``:
        the turns those notes were read from)."""
        better = sum(size for n, (memory_id, size) in enumerate(self.kept, start=1)
                     if n < note.rank and memory_id not in stated)
        return used + better <= self.budget


def reach(sizes: Sequence[int], budget: int) -> int:
    """How many of the best hits (their lines' ``sizes`` in rank order) a context of ``budget`` tokens could show
    whole, one after the other."""
    used = 0
    for n, size in enumerate(sizes):
        used += size
        if used > budget:
            return n
    return len(sizes)


def _order(note: NoteEntry) -> int:
    """Within a tier, the notes the question reaches go in the order of their hits, the others keep theirs."""
    return note.rank if _tier(note) == 1 else 0


@dataclass(frozen=True, slots=True)
class _NoteCosts:
    """What the notes of a context pay: each its text, and the first note of a category its ``header`` (the
    notes taken: their ``category`` by note id)."""

    header: dict[str, int]
    category: dict[str, str]

    def saving(self, items: Sequence[ContextItem], note: ContextItem) -> int:
        """The tokens dropping ``note`` from ``items`` frees: its text, and its category's header when no other note
        of its category stays."""
        category = self.category[note.memory_id]
        first = next(i for i in items if self.category.get(i.memory_id) == category)
        alone = sum(1 for i in items if self.category.get(i.memory_id) == category) == 1
        paid = self.header[category] if first.memory_id == note.memory_id else 0
        return note.tokens - paid + (self.header[category] if alone else 0)

    def drop(self, items: list[ContextItem], memory_ids: set[str]) -> None:
        """Remove the notes ``memory_ids`` from ``items``; the first note left of a category pays its header."""
        for category in {self.category[m] for m in memory_ids}:
            first = next(i for i in items if self.category.get(i.memory_id) == category)
            if first.memory_id in memory_ids:
                payer = next((n for n, i in enumerate(items) if self.category.get(i.memory_id) == category
                              and i.memory_id not in memory_ids), None)
                if payer is not None:
                    items[payer] = replace(items[payer], tokens=items[payer].tokens + self.header[category])
        items[:] = [i for i in items if i.memory_id not in memory_ids]


def _notes_first(
    notes: Sequence[NoteEntry], room: _Room, count_tokens: Callable[[list[str]], list[int]], costs: _NoteCosts,
    when_asked: bool = False,
) -> list[ContextItem]:
    """The notes that fit in the ``room``, in the order of :func:`_tier`, the notes the question reaches in the
    order of their hits, else by category. A note the question reaches is taken only where it leaves room for
    the turns of the better hits (:meth:`_Room.leaves_room`), and none after a better hit's note that did not fit
    (``when_asked``: the question asks about time, :func:`dated`). A note costs its text, and its category's header
    when it is the first of its category taken (:class:`_NoteCosts`)."""
    rank = {c: i for i, c in enumerate(CATEGORY_ORDER)}
    ordered = sorted(enumerate(notes), key=lambda p: (_tier(p[1]), _order(p[1]), rank.get(p[1].category, len(rank)),
                                                      p[0]))
    bodies = [note_body(n, dated(n, when_asked)) for _, n in ordered]
    headers = list(dict.fromkeys(n.category for _, n in ordered))
    counted = count_tokens(bodies + [category_header(c) for c in headers]) if bodies else []
    costs.header.update(zip(headers, counted[len(bodies):]))
    items, used, stated, missed, headed = [], 0, set(), None, set()
    for (_, note), body, size in zip(ordered, bodies, counted):
        reached = _tier(note) == 1
        if reached and missed is not None and note.rank > missed:
            continue  # a better hit's note did not fit: its turn stands for it, and no weaker hit's note goes first
        size += 0 if note.category in headed else costs.header[note.category]
        if used + size > room.share or (reached and not room.leaves_room(note, used + size, stated)):
            missed = note.rank if reached else missed
            continue
        stated.update(note.source_ids)
        used += size
        headed.add(note.category)
        costs.category[note.note_id] = note.category
        items.append(ContextItem(
            memory_id=note.note_id,
            turn_id=note.turn_ids[0] if note.turn_ids else None,
            conversation_id=note.conversation_id,
            line=f"{category_header(note.category)} {body}",
            tokens=size,
            score=note.score,
            provenance={"note_id": note.note_id, "version": note.version, "turn_ids": list(note.turn_ids),
                        "event_ids": [note.note_id, *note.source_ids]},
        ))
    return items


def _not_stated(hits: list[Hit], items: list[ContextItem], notes: dict[str, NoteEntry],
                coverage: float) -> list[tuple[Hit, str, float]]:
    """The hits the context's notes do not state in full (each hit's notes carry less than ``coverage`` of it),
    each with what to show of it: its text, or the clauses its notes leave out (:func:`uncarried`; ``coverage``
    above 1.0: always the whole text), and the share of its content terms its notes leave out (1.0 without notes)."""
    by_source: dict[str, list[str]] = {}
    for item in items:
        for source in item.provenance["event_ids"][1:]:
            by_source.setdefault(source, []).append(notes[item.memory_id].text)
    shown = []
    for h in hits:
        texts = by_source.get(h.memory_id)
        if texts is None or coverage > 1.0:
            shown.append((h, h.text, 1.0))
            continue
        share = carried_share(h.text, texts)
        if share < coverage:
            shown.append((h, uncarried(h.text, texts) or h.text, 1.0 - share))
    return shown


def _by_worth(shown: list[tuple[Hit, str, float]]) -> list[tuple[Hit, str]]:
    """The hits to show (:func:`_not_stated`) in rank order, but a turn shown in part where what it still says puts it:
    after the turns that keep their place whose score is at least its own weighed by the share of its content terms
    its notes leave out (its notes, in the context already, state the rest). The version in force of a superseded
    turn the question found (breakdown ``supersedes``) keeps its place: the clauses its notes leave out are often the
    value in force ("These days it's hot chocolate" beside the note "Maya stopped drinking oolong tea")."""
    kept = [text == hit.text or "supersedes" in hit.breakdown for hit, text, _ in shown]
    order = []
    for n, (hit, _, left) in enumerate(shown):
        if kept[n]:
            order.append((n, 0.0, n))
            continue
        worth = hit.score * left
        before = next((m for m in range(n + 1, len(shown)) if kept[m] and shown[m][0].score < worth), len(shown))
        order.append((before - 0.5, -worth, n))
    return [shown[n][:2] for *_, n in sorted(order)]


def _current_taken(hit: Hit, taken: set[str]) -> bool:
    """Whether ``hit`` is superseded and the version in force (its note or one of its turns) is already taken."""
    b = hit.breakdown
    return "superseded" in b and (b.get("superseded_by_note") in taken or any(m in taken for m in b["superseded_by"]))


class _Turns:
    """The candidate turns of a context in the order they are offered (:func:`_by_worth`), with their token costs;
    :meth:`fill` takes what fits."""

    def __init__(self, shown: list[tuple[Hit, str]], days: list[str], sizes: list[int], whole_sizes: list[int],
                 header_size: dict[str, int]) -> None:
        self.rows = [(hit, text, day, size) for (hit, text), day, size in zip(shown, days, sizes)]
        self.by_id = {hit.memory_id: (hit, whole) for (hit, _), whole in zip(shown, whole_sizes)}
        self.header_size = header_size
        # the turns taken with all their text (not only the clauses their notes leave) and not labelled superseded
        self.whole: set[str] = set()

    def fill(self, items: list[ContextItem], budget: int) -> None:
        """Append to ``items`` the turns not yet in it that fit, in that order (a day's header is paid by the first
        turn of that day taken); a superseded turn whose version in force is in ``items`` is left out."""
        used = sum(i.tokens for i in items)
        taken = {i.memory_id for i in items}
        shown = {i.day for i in items if i.occurred_at is not None}
        for hit, text, day, size in self.rows:
            if hit.memory_id in taken:
                continue
            cost = size + (0 if day in shown else self.header_size[day])
            if used + cost > budget or _current_taken(hit, taken):
                continue
            taken.add(hit.memory_id)
            if text == hit.text and "superseded" not in hit.breakdown:  # a labelled turn stands for no note in force
                self.whole.add(hit.memory_id)
            used += cost
            shown.add(day)
            items.append(_turn_item(hit, text, cost))

    def widening(self, item: ContextItem) -> int:
        """The tokens a turn taken in part (``item``) adds when shown whole."""
        return self.by_id[item.memory_id][1] - (item.tokens - self._header(item))

    def _header(self, item: ContextItem) -> int:
        """The header tokens ``item`` paid (its day's header, when it was the first of that day taken)."""
        hit, _ = self.by_id[item.memory_id]
        rows = {h.memory_id: size for h, _, _, size in self.rows}
        return item.tokens - rows[hit.memory_id]

    def widen(self, items: list[ContextItem], memory_ids: set[str]) -> None:
        """Show the turns ``memory_ids`` of ``items`` whole (their notes then say nothing they do not)."""
        for n, item in enumerate(items):
            if item.memory_id in memory_ids and item.memory_id not in self.whole:
                hit, whole = self.by_id[item.memory_id]
                items[n] = _turn_item(hit, hit.text, whole + self._header(item))
                self.whole.add(item.memory_id)


def _turn_item(hit: Hit, text: str, tokens: int) -> ContextItem:
    return ContextItem(memory_id=hit.memory_id, turn_id=hit.turn_id, conversation_id=hit.conversation_id,
                       line=format_line(hit, text), tokens=tokens, score=hit.score, provenance=hit.provenance,
                       occurred_at=hit.occurred_at)


def _widen_cheaper(items: list[ContextItem], turns: _Turns, costs: _NoteCosts) -> None:
    """For each note whose every source turn the context took, some in part (none labelled superseded): show those
    turns whole when that costs no more tokens than the note frees (:meth:`_NoteCosts.saving`; the next step then
    drops the note as redundant)."""
    taken = {i.memory_id: i for i in items if i.occurred_at is not None}
    for note in [i for i in items if i.occurred_at is None and len(i.provenance["event_ids"]) > 1]:
        sources = set(note.provenance["event_ids"][1:])
        parts = sources - turns.whole
        if not parts or not sources <= taken.keys() or any("superseded" in turns.by_id[m][0].breakdown for m in parts):
            continue
        if sum(turns.widening(taken[m]) for m in parts) <= costs.saving(items, note):
            turns.widen(items, parts)
            taken = {i.memory_id: i for i in items if i.occurred_at is not None}


def assemble(
    query: str,
    hits: list[Hit],
    budget: int,
    count_tokens: Callable[[list[str]], list[int]],
    notes: Sequence[NoteEntry] = (),
    note_tokens: int = 0,
    note_share: float = 0.25,
    note_coverage: float = 1.0,
) -> Context:
    """Notes first (at most ``note_tokens`` and ``note_share`` of the budget), then turns in rank order (a turn
    shown in part where :func:`_by_worth` puts it).

    A turn whose notes in the context carry at least ``note_coverage`` of its
    content terms is not repeated: the notes state it in fewer tokens and
    their provenance points to the turn; a turn they carry only in part stays,
    shown by the clauses they do not carry whole (``note_coverage`` above 1.0:
    every turn whole), or whole when that costs no more than the note; such a
    turn goes where its score weighed by the share of it they leave out puts it
    among the others (:func:`_by_worth`). A note
    whose every source turn the context took whole is dropped and its tokens
    go to the next turns. A superseded turn whose version in force
    (its note or one of its turns) is in the context is left out. A line that does not fit is skipped and
    smaller ones may follow. The text shows each day's date once, above that
    day's turns (:attr:`Context.text`), so a turn costs its date only when it
    is the first of its day taken.
    """
    days = [h.occurred_at.date().isoformat() for h in hits]
    headers = list(dict.fromkeys(days))
    counted = count_tokens([body_line(h) for h in hits] + [day_header(d) for d in headers]) if hits else []
    whole_size = {h.memory_id: size for h, size in zip(hits, counted)}
    header_size = dict(zip(headers, counted[len(hits):]))
    costs, seen = [], set()  # a hit's line, and its day's header if it is the first of its day
    for h, d in zip(hits, days):
        costs.append(whole_size[h.memory_id] + (0 if d in seen else header_size[d]))
        seen.add(d)
    kept = tuple((h.memory_id, c) for h, c in zip(hits[:reach(costs, budget)], costs))
    room = _Room(min(note_tokens, int(budget * note_share)), budget, kept)
    note_costs = _NoteCosts({}, {})
    items: list[ContextItem] = (_notes_first(notes, room, count_tokens, note_costs, time_intent(query))
                                if room.share > 0 else [])
    shown = _by_worth(_not_stated(hits, items, {n.note_id: n for n in notes}, note_coverage))
    parts = [(h, text) for h, text in shown if text != h.text]  # shown in part: the clauses their notes leave out
    part_size = dict(zip((h.memory_id for h, _ in parts), count_tokens([body_line(h, t) for h, t in parts]) if parts
                         else []))
    whole_sizes = [whole_size[h.memory_id] for h, _ in shown]
    sizes = [part_size.get(h.memory_id, whole_size[h.memory_id]) for h, _ in shown]
    turns = _Turns(shown, [h.occurred_at.date().isoformat() for h, _ in shown], sizes, whole_sizes, header_size)
    turns.fill(items, budget)
    _widen_cheaper(items, turns, note_costs)
    # A note whose every turn the context took whole says nothing the turns do not: its tokens go to the next turns.
    taken = turns.whole
    redundant = {i.memory_id for i in items if i.occurred_at is None and len(i.provenance["event_ids"]) > 1
                 and set(i.provenance["event_ids"][1:]) <= taken}
    if redundant:
        note_costs.drop(items, redundant)
        turns.fill(items, budget)
    used = sum(i.tokens for i in items)
    return Context(query=query, budget=budget, tokens=used, items=tuple(items))
