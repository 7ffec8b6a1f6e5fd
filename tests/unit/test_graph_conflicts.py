"""The conflict check of graph memories against the notes: superseded and deleted notes withdraw the memories
drawn from their messages (or stating their claim); active notes withdraw nothing; a second run decides nothing."""

from __future__ import annotations

from datetime import timedelta

from events.envelope import PendingEvent, seal
from events.graph_events import GraphMemoryStatusChanged
from events.model import Event, NoteContent, NoteOperation
from projections.decisions.graph_conflicts import note_conflicts, note_evidence
from projections.decisions.graph_consolidate import consolidate
from projections.folds.graph import GraphState
from projections.folds.notes import NoteState, fold
from tests.graph_builders import T0, graph, memory


def day(n: float):
    return T0 + timedelta(days=n)


def add(text: str, terms: tuple[str, ...], source: str, at=T0, **fields) -> NoteOperation:
    return NoteOperation(op="add", source_message_ids=(source,), valid_from=at, reason="stated", decider="rules-v1",
                         note=NoteContent(category="preference", text=text, subject="Atlas", key_terms=terms, **fields))


def update(target: str, text: str, terms: tuple[str, ...], source: str, at, **fields) -> NoteOperation:
    return NoteOperation(op="update", target_note_id=target, source_message_ids=(source,), valid_from=at,
                         reason="contradicts", decider="rules-v1", relation="supersedes",
                         note=NoteContent(category="preference", text=text, subject="Atlas", key_terms=terms, **fields))


def delete(target: str, source: str, at) -> NoteOperation:
    return NoteOperation(op="delete", target_note_id=target, source_message_ids=(source,), valid_from=at,
                         reason="retracted", decider="rules-v1")


def notes(*pairs: tuple[str, Event]) -> NoteState:
    return fold(NoteState(), [seal(PendingEvent("acme", "alice", eid, e), seq, day(seq))
                               for seq, (eid, e) in enumerate(pairs, start=1)])


TEA = add("Atlas prefers green tea in the morning", ("green", "tea", "morn"), "msg-t1")
COFFEE = update("tea", "Atlas switched to coffee", ("coffee",), "msg-t2", day(5))


def atlas_graph() -> GraphState:
    return graph(("m-tea", memory("Atlas", "prefer", "green tea", memory_type="fact", turn="t1")),
                 ("m-coffee", memory("Atlas", "switch", "coffee", turn="t2", at=day(5))),
                 ("m-hike", memory("Atlas", "like", "hiking", memory_type="opinion", turn="t3", at=day(6))))


def changes(state: GraphState, note_state: NoteState) -> list[tuple[str, str, str | None]]:
    return [(c.memory_id, c.status, c.superseded_by) for c in note_conflicts(state, note_state)]


def test_a_superseded_note_supersedes_the_memory_from_its_message_with_a_reason_naming_the_notes():
    [change] = note_conflicts(atlas_graph(), notes(("tea", TEA), ("coffee", COFFEE)))
    assert isinstance(change, GraphMemoryStatusChanged)
    assert (change.memory_id, change.status, change.superseded_by) == ("m-tea", "superseded", "coffee")
    assert "note tea" in change.reason and "superseded by note coffee" in change.reason
    assert "drawn from the same message" in change.reason


def test_active_notes_withdraw_nothing():
    assert note_conflicts(atlas_graph(), notes(("tea", TEA))) == []
    assert note_conflicts(atlas_graph(), NoteState()) == []


def test_a_deleted_note_supersedes_its_memory_without_a_successor():
    state = notes(("hike", add("Atlas likes hiking", ("hik",), "msg-t3", day(6))), ("gone", delete("hike", "msg-t9", day(8))))
    [change] = note_conflicts(atlas_graph(), state)
    assert (change.memory_id, change.status, change.superseded_by) == ("m-hike", "superseded", None)
    assert "note hike" in change.reason and "retracted" in change.reason


def test_only_the_memory_matching_the_closed_note_is_withdrawn_from_a_message_with_two_notes():
    both = graph(("m-tea", memory("Atlas", "prefer", "green tea", memory_type="fact", turn="t1")),
                 ("m-job", memory("Atlas", "work", "Google", memory_type="fact", turn="t1")))
    state = notes(("tea", TEA), ("job", add("Atlas works at Google", ("google",), "msg-t1")), ("coffee", COFFEE))
    [change] = note_conflicts(both, state)
    assert (change.memory_id, change.superseded_by) == ("m-tea", "coffee")
    assert "same message as note tea" in change.reason and "job" not in change.reason


def test_a_note_refined_by_an_update_that_still_states_the_claim_withdraws_nothing():
    refined = update("tea", "Atlas prefers green tea, sencha above all", ("green", "tea", "sencha"), "msg-t2", day(5))
    assert note_conflicts(atlas_graph(), notes(("tea", TEA), ("sencha", refined))) == []
    negated = update("tea", "Atlas no longer drinks green tea", ("green", "tea"), "msg-t2", day(5), polarity="negative")
    assert changes(atlas_graph(), notes(("tea", TEA), ("no-tea", negated))) == [("m-tea", "superseded", "no-tea")]


def test_a_state_from_elsewhere_with_the_superseded_claim_is_withdrawn_but_not_an_event_or_a_later_statement():
    state = graph(("tool", memory("Atlas", "drink", "green tea", memory_type="fact", at=day(2))),
                  ("event", memory("Atlas", "drink", "green tea", memory_type="event", turn="t4", at=day(3))),
                  ("again", memory("Atlas", "love", "green tea", memory_type="opinion", turn="t7", at=day(9))),
                  ("bob", memory("Bob", "like", "green tea", memory_type="opinion", at=day(2))))
    found = note_conflicts(state, notes(("tea", TEA), ("coffee", COFFEE)))
    assert [(c.memory_id, c.superseded_by) for c in found] == [("tool", "coffee")]
    assert "states the claim of note tea" in found[0].reason


def test_a_second_consolidation_emits_no_repeated_status_change():
    state, note_state = atlas_graph(), notes(("tea", TEA), ("coffee", COFFEE))
    def ids(key: str) -> str:
        return f"u/{key}"

    first = consolidate(state, list(state.memories), new_id=ids, notes=note_state)
    supersessions = [(i, e) for i, e in first if isinstance(e, GraphMemoryStatusChanged)]
    assert [(e.memory_id, e.status) for _, e in supersessions] == [("m-tea", "superseded")]
    assert supersessions[0][0].endswith("/supersede/m-tea") and first[0] == supersessions[0]  # the first step

    after = graph(*first, state=state.copy())
    assert after.memories["m-tea"].status == "superseded" and after.memories["m-tea"].superseded_by == "coffee"
    assert "m-tea" in after.memories  # history kept: a status change, not a removal
    assert consolidate(after, list(after.memories), new_id=ids, notes=note_state) == []
    assert consolidate(after, [], new_id=ids, notes=note_state) == []
    assert note_conflicts(after, note_state) == []


def test_with_nothing_staged_the_note_check_still_runs_when_notes_are_given():
    state = atlas_graph()
    consolidated = graph(*consolidate(state, list(state.memories)), state=state.copy())
    note_state = notes(("tea", TEA), ("coffee", COFFEE))
    assert consolidate(consolidated, []) == []
    [(event_id, change)] = consolidate(consolidated, [], new_id=lambda key: key, notes=note_state)
    assert change.memory_id == "m-tea" and event_id.endswith("/supersede/m-tea")


def test_the_evidence_shipped_to_a_task_decides_alike_and_is_empty_without_closed_notes():
    state, full = atlas_graph(), notes(("tea", TEA), ("coffee", COFFEE))
    assert note_conflicts(state, note_evidence(full)) == note_conflicts(state, full)
    assert note_evidence(full).index.doc_ids == []
    assert note_evidence(notes(("tea", TEA))).notes == {}



def test_a_memory_sharing_no_term_with_its_messages_closed_note_stays_active():
    # "I do my best work early. I prefer green tea in the morning": one note (tea), two memories
    state = graph(("m-early", memory("Atlas", "do", "Atlas's best work early", memory_type="fact", turn="t1")),
                  ("m-tea", memory("Atlas", "prefer", "green tea", memory_type="fact", turn="t1")))
    assert changes(state, notes(("tea", TEA), ("coffee", COFFEE))) == [("m-tea", "superseded", "coffee")]


def test_a_successor_note_naming_what_it_drops_does_not_keep_the_old_claim_alive():
    postgres = add("Decision: use PostgreSQL as the database", ("postgresql", "database"), "msg-t1")
    mysql = update("pg", "Decision: switch to MySQL and drop PostgreSQL", ("mysql", "drop", "postgresql"), "msg-t2",
                   day(5))
    state = graph(("m-pg", memory("Atlas", "decide", "use PostgreSQL", memory_type="fact", turn="t1")))
    assert changes(state, notes(("pg", postgres), ("my", mysql))) == [("m-pg", "superseded", "my")]
    keeps = update("pg", "Decision: use PostgreSQL 16 as the database", ("postgresql", "database"), "msg-t2", day(5))
    assert changes(state, notes(("pg", postgres), ("pg16", keeps))) == []  # a refinement still states it
