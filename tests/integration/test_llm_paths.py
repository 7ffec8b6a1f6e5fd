"""The LLM-driven steps (note operations, titles, distillation, review, usage) against a real local server.

Every test talks to ``tests.fakes.openai_server.FakeOpenAI`` over a real
socket with scripted replies; a failing server always ends in the offline
rules. The replay test records through the live server, stops it, and gets
the same domain events from ``RecordedLlm``, reading the calls back from a
DuckDB log.
"""

from __future__ import annotations

import itertools
import json
from datetime import UTC, datetime, timedelta

import pytest

from actors.llm import LlmClient, LlmConfig, RecordedLlm
from actors.llm.distill import llm_distill_profile
from actors.llm.memory_ops import llm_note_operations
from actors.llm.review import llm_review_notes
from actors.llm.titles import llm_episode_title
from actors.llm.usage import llm_judge_usage
from events.duckdb_log import DuckDBEventLog
from events.envelope import PendingEvent
from events.errors import InvalidInputError
from events.log import ScanFilter
from events.model import LlmCallRecorded, NoteContent, NoteOperation
from projections.decisions.note_ops import decide_note_operations
from projections.decisions.review import review_notes
from projections.folds.notes import NoteState, fold
from projections.decisions.distill import distill_offline
from projections.rules.text import has_cjk
from projections.rules.usage import judge_usage
from tests.builders import message, stream
from tests.fakes.openai_server import FakeOpenAI, Reply

pytestmark = pytest.mark.integration

T0 = datetime(2024, 5, 1, 9, 0, tzinfo=UTC)
MODEL = "fake-model"


@pytest.fixture
def server():
    with FakeOpenAI() as fake:
        yield fake


def client_for(fake: FakeOpenAI, **overrides) -> LlmClient:
    """Test-sized timeouts and one retry, so a failure costs two requests."""
    settings = dict(timeout_s=0.3, max_retries=1, backoff_base_s=0.01, max_tokens=300) | overrides
    return LlmClient(LlmConfig(base_url=fake.base_url, model=MODEL, **settings))


def ids(prefix: str = "e"):
    """A deterministic id factory: e1, e2, ..."""
    counter = itertools.count(1)
    return lambda: f"{prefix}{next(counter)}"


def added(note_id: str, text: str, category: str = "fact", *, at: datetime = T0) -> tuple[str, NoteOperation]:
    content = NoteContent(category=category, text=text, language="zh" if has_cjk(text) else "en")
    return note_id, NoteOperation(op="add", note=content, source_message_ids=(f"m-{note_id}",), valid_from=at,
                                  reason="seeded", decider="rules-v1")


def said(*texts: str, role: str = "user", start: datetime = T0 + timedelta(days=1)) -> list:
    """(message id, message) pairs one minute apart: m1, m2, ..."""
    return [(f"m{i}", message(t, f"c{i}", role=role, occurred_at=start + timedelta(minutes=i)))
            for i, t in enumerate(texts, 1)]


def op(kind: str, index: int, target=None, text=None, category=None, reason="because") -> dict:
    return {"op": kind, "target_note_id": target, "category": category, "text": text,
            "source_message_index": index, "reason": reason}


# -- note operations ------------------------------------------------------------------


def test_a_valid_reply_becomes_update_boost_and_add_and_folds_to_the_expected_notes(server):
    seeded = [added("n-db", "The project uses PostgreSQL", "decision"), added("n-tea", "The user likes green tea",
                                                                             "preference")]
    state = fold(NoteState(), stream(*seeded))
    messages = said("We switched to MySQL last week.", "Green tea is still my favourite.", "I have a cat named Miso.")
    server.script(Reply.json({"operations": [
        op("add", 2, text="The user has a cat named Miso", category="fact", reason="a new fact"),
        op("update", 0, "n-db", "The project uses MySQL", "decision", "the user replaced PostgreSQL"),
        op("boost", 1, "n-tea", reason="restated"),
    ]}))
    calls, ops = llm_note_operations(client_for(server), state.active(), messages, ids())

    ((call_id, call),) = calls
    assert call_id == "e1" and isinstance(call, LlmCallRecorded) and call.purpose == "note_operations"
    prompt = server.requests[0].body["messages"][1]["content"]
    assert "[n-db] (decision" in prompt and "[n-tea]" in prompt and "[2] " in prompt and "cat named Miso" in prompt
    assert [(i, o.op, o.target_note_id) for i, o in ops] == [
        ("e2", "update", "n-db"), ("e3", "boost", "n-tea"), ("e4", "add", None)]  # dialogue order, not reply order
    for (_, o), (message_id, m) in zip(ops, messages, strict=True):
        assert (o.decider, o.llm_call_id, o.source_message_ids, o.valid_from) == (
            "llm:fake-model", "e1", (message_id,), m.occurred_at)
    assert ops[0][1].note.text == "The project uses MySQL" and ops[0][1].reason == "the user replaced PostgreSQL"
    assert ops[2][1].note.category == "fact" and "miso" in ops[2][1].note.key_terms

    after = fold(NoteState(), stream(*seeded, *ops))
    assert {n.note_id: n.text for n in after.active()} == {
        "n-tea": "The user likes green tea", "e2": "The project uses MySQL", "e4": "The user has a cat named Miso"}
    assert after.notes["n-db"].status == "superseded" and after.notes["n-db"].superseded_by == "e2"
    assert after.notes["n-tea"].boosts == 1 and "m2" in after.notes["n-tea"].source_message_ids
    assert [n.note_id for n in after.history("e2")] == ["n-db", "e2"]


def test_a_chinese_conversation_keeps_chinese_notes_and_a_change_over_time_keeps_both(server):
    seeded = [added("n-mood", "用户十天前很紧张"), added("n-coffee", "用户喜欢喝咖啡", "preference")]
    state = fold(NoteState(), stream(*seeded))
    messages = said("我现在很放松了。", "我不喝咖啡了，改喝茶。")
    server.script(Reply.json({"operations": [
        op("add", 0, text="用户现在很放松", category="fact", reason="状态随时间变化，不是矛盾"),
        op("update", 1, "n-coffee", "用户现在喝茶，不再喝咖啡", "preference", "用户改变了喜好"),
    ]}))
    _, ops = llm_note_operations(client_for(server), state.active(), messages, ids())

    assert "我现在很放松了。" in server.requests[0].body["messages"][1]["content"]
    assert [(o.op, o.note.text, o.note.language) for _, o in ops] == [
        ("add", "用户现在很放松", "zh"), ("update", "用户现在喝茶，不再喝咖啡", "zh")]
    after = fold(NoteState(), stream(*seeded, *ops))
    expected = ["用户十天前很紧张", "用户现在很放松", "用户现在喝茶，不再喝咖啡"]
    assert sorted(n.text for n in after.active()) == sorted(expected)


@pytest.mark.parametrize(
    ("replies", "error"),
    [
        ([Reply.text("Sure! I would add a note about tabs.")] * 2, "did not match the schema"),
        ([Reply.json({"operations": []}, delay_s=1.0)] * 2, "no reply"),
        ([Reply.error(500, "boom")] * 2, "HTTP 500"),
    ],
    ids=["malformed-json", "timeout", "http-500"],
)
def test_a_failed_call_falls_back_to_the_offline_rules_and_says_so(server, replies, error):
    server.script(*replies)
    messages = said("I prefer tabs over spaces.")
    calls, ops = llm_note_operations(client_for(server), [], messages, ids())

    ((call_id, call),) = calls
    assert call.error and error in call.error and call.attempts == 2
    expected = decide_note_operations([], messages, ids("e"))
    expected = [(f"e{int(i[1:]) + 1}", o) for i, o in expected]  # the call took e1
    assert [(i, o.op, o.note, o.decider) for i, o in ops] == [(i, o.op, o.note, o.decider) for i, o in expected]
    assert ops and all(o.decider == "rules-v1" and o.llm_call_id == call_id for _, o in ops)
    for (_, got), (_, offline) in zip(ops, expected, strict=True):
        assert got.reason.startswith("llm unavailable (") and error in got.reason
        assert got.reason.endswith("; offline rules: " + offline.reason)


def test_unknown_targets_bad_categories_and_missing_text_are_dropped_as_skips(server):
    seeded = [added("n-tea", "The user likes green tea", "preference")]
    state = fold(NoteState(), stream(*seeded))
    messages = said("Green tea, always.", "Also I moved to Berlin.")
    server.script(Reply.json({"operations": [
        op("update", 1, "n-nope", "The user lives in Berlin", "fact"),
        op("add", 1, text="The user moved", category="mood"),
        op("add", 1, text=None, category="fact"),
        op("boost", 1, "n-tea", reason="restated"),
        op("delete", 7, "n-tea"),
    ]}))
    _, ops = llm_note_operations(client_for(server), state.active(), messages, ids())

    kinds = [(o.op, o.target_note_id) for _, o in ops]
    assert kinds == [("skip", None), ("skip", None), ("skip", None), ("boost", "n-tea"), ("skip", None)]
    reasons = [o.reason for _, o in ops if o.op == "skip"]
    assert "target_note_id 'n-nope' is not a current note" in reasons[0]
    assert "category 'mood' is not one of" in reasons[1] and "add needs a text" in reasons[2]
    assert "source_message_index 7 names no dialogue line" in reasons[3]
    assert all(r.startswith("rejected llm operation: ") and o.decider == "llm:fake-model"
               for r, (_, o) in zip(reasons, [p for p in ops if p[1].op == "skip"], strict=True))
    after = fold(NoteState(), stream(*seeded, *ops))
    assert [(n.note_id, n.boosts) for n in after.active()] == [("n-tea", 1)]


def test_a_reply_with_nothing_usable_falls_back_to_the_offline_rules(server):
    server.script(Reply.json({"operations": [op("delete", 0, "n-ghost"), op("fly", 0)]}))
    _, ops = llm_note_operations(client_for(server), [], said("I prefer tabs over spaces."), ids())
    ((only_id, only),) = ops
    assert only_id == "e2"  # rejected proposals mint no ids
    assert (only.op, only.decider) == ("add", "rules-v1") and only.note.text == "The user prefers tabs over spaces"
    assert only.reason.startswith("llm reply unusable (2 operation(s) rejected, first: target_note_id 'n-ghost'")


def test_an_empty_reply_changes_nothing_and_assistant_lines_alone_are_not_asked(server):
    server.script(Reply.json({"operations": []}))
    calls, ops = llm_note_operations(client_for(server), [], said("How is the weather?"), ids())
    assert len(calls) == 1 and ops == []
    assert llm_note_operations(client_for(server), [], said("Sunny.", role="assistant"), ids()) == ([], [])
    assert len(server.requests) == 1


# -- titles --------------------------------------------------------------------------


def test_an_episode_title_in_the_conversation_language(server):
    members = said("我们决定把数据库迁移到 MySQL。", "好的，我下周开始迁移。")
    summary = "用户决定迁移到 MySQL。助手下周开始。多余的一句。"
    server.script(Reply.json({"title": "「数据库迁移到 MySQL」", "summary": summary}))
    (call_id, call), titled = llm_episode_title(client_for(server), "ep-1", members, new_id=ids())
    assert call.purpose == "episode_title" and call_id == "e1"
    assert (titled.episode_id, titled.member_ids, titled.titler, titled.llm_call_id) == (
        "ep-1", ("m1", "m2"), "llm:fake-model", "e1")
    assert titled.title == "数据库迁移到 MySQL" and titled.summary == "用户决定迁移到 MySQL。助手下周开始。"


def test_a_long_title_is_cut_to_twelve_words(server):
    server.script(Reply.json({"title": " ".join(f"word{i}" for i in range(20)), "summary": "One. Two. Three."}))
    _, titled = llm_episode_title(client_for(server), "ep-1", said("We talked about many words."))
    assert len(titled.title.split()) == 12 and titled.summary == "One. Two."


@pytest.mark.parametrize(
    "reply",
    [Reply.error(500), Reply.json({"title": "Database migration", "summary": "Moved to MySQL."}),
     Reply.json({"title": "  ", "summary": ""})],
    ids=["http-500", "wrong-language", "blank"],
)
def test_no_title_event_when_the_model_fails(server, reply):
    server.script(reply, reply)
    (_, call), titled = llm_episode_title(client_for(server), "ep-1", said("我们决定迁移到 MySQL。"))
    assert titled is None and isinstance(call, LlmCallRecorded)
    with pytest.raises(InvalidInputError, match="members"):
        llm_episode_title(client_for(server), "ep-1", [])


# -- profile distillation ------------------------------------------------------------

PAGES = said("My name is Ann and I live in Paris.", "I can recommend three hotels near the Louvre.")
PAGES[1] = ("m2", message("I can recommend three hotels near the Louvre.", "c2", role="assistant",
                          occurred_at=T0 + timedelta(days=1, minutes=2)))


def test_distillation_reads_the_model_answer(server):
    server.script(Reply.json({"traits": {"name": "Ann", "residence": "Paris", "age": 31, "": "x", "pets": None},
                              "user_knowledge": ["The user lives in Paris.", " The user lives in  Paris ", ""],
                              "assistant_knowledge": ["The assistant recommended three hotels near the Louvre."]}))
    at = T0 + timedelta(days=2)
    (call_id, call), event = llm_distill_profile(client_for(server), "s-1", PAGES, 7.5, at, new_id=ids())
    assert call.purpose == "profile_distillation" and "My name is Ann" in call.messages_json
    assert event.traits == {"name": "Ann", "residence": "Paris", "age": "31"}
    assert event.user_knowledge == ("The user lives in Paris.",)
    assert event.assistant_knowledge == ("The assistant recommended three hotels near the Louvre.",)
    assert (event.session_id, event.page_ids, event.heat, event.at, event.distiller, event.llm_call_id) == (
        "s-1", ("m1", "m2"), 7.5, at, "llm:fake-model", call_id)


def test_distillation_falls_back_to_the_offline_distiller(server):
    server.script(Reply.error(503), Reply.error(503))
    (call_id, call), event = llm_distill_profile(client_for(server), "s-1", PAGES, 7.5, T0, new_id=ids())
    traits, user_knowledge, assistant_knowledge = distill_offline(PAGES)
    assert call.error and "HTTP 503" in call.error
    assert (event.traits, event.user_knowledge, event.assistant_knowledge) == (
        traits, user_knowledge, assistant_knowledge)
    assert (event.distiller, event.llm_call_id) == ("rules-v1", call_id)


# -- note review ---------------------------------------------------------------------


def review_state() -> tuple[list, NoteState, datetime]:
    """Note "hot" due a promotion review and note "cold" due a retraction review, both at day 115."""
    day = lambda n: T0 + timedelta(days=n)  # noqa: E731
    events = [added("cold", "The user once visited a bakery", at=day(0)),
              added("hot", "The user prefers dark mode", "preference", at=day(110))]
    events += [(f"b{i}", NoteOperation(op="boost", target_note_id="hot", valid_from=day(110 + i), reason="again",
                                       decider="rules-v1")) for i in range(1, 6)]
    return events, fold(NoteState(), stream(*events)), day(115)


def test_review_decisions_come_from_the_model_for_the_offline_triggers(server):
    events, state, now = review_state()
    assert [(r.note_id, r.trigger) for r in review_notes(state, now)] == [("cold", "retraction"), ("hot", "promotion")]
    server.script(Reply.json({"reviews": [{"note_id": "hot", "decision": "PROMOTE", "reason": "a stable preference"},
                                          {"note_id": "cold", "decision": "keep", "reason": "still a nice memory"}]}))
    calls, reviews = llm_review_notes(client_for(server), state, now, new_id=ids())
    assert [c.purpose for _, c in calls] == ["note_review"]
    assert "[hot] promotion review, importance 2.500" in server.requests[0].body["messages"][1]["content"]
    assert [(r.note_id, r.decision, r.reviewer, r.llm_call_id) for r in reviews] == [
        ("cold", "keep", "llm:fake-model", "e1"), ("hot", "promote", "llm:fake-model", "e1")]
    assert reviews[1].reason == "importance 2.500 ≥ promotion threshold: a stable preference"
    after = fold(NoteState(), stream(*events, *[(f"r{i}", r) for i, r in enumerate(reviews)]))
    assert after.notes["hot"].lifecycle == "core" and after.notes["cold"].status == "active"


def test_review_falls_back_per_note_and_per_call(server):
    _, state, now = review_state()
    offline = {r.note_id: r for r in review_notes(state, now)}
    server.script(Reply.json({"reviews": [{"note_id": "cold", "decision": "promote", "reason": "why not"}]}))
    _, reviews = llm_review_notes(client_for(server), state, now, new_id=ids())
    for r in reviews:
        assert (r.decision, r.reviewer) == (offline[r.note_id].decision, "rules-v1")
    assert reviews[0].reason.startswith("llm gave no usable decision (decision 'promote' is not allowed in a "
                                        "retraction review); offline rules: importance")
    assert reviews[1].reason.startswith("llm gave no usable decision (no answer for this note)")

    server.script(*[Reply.error(500)] * 4)  # two calls (one note each), two attempts each
    calls, reviews = llm_review_notes(client_for(server), state, now, new_id=ids(), notes_per_call=1)
    assert len(calls) == 2 and server.remaining() == 0
    assert all(r.reason.startswith("llm unavailable (HTTP 500") and r.reviewer == "rules-v1" for r in reviews)
    assert [r.decision for r in reviews] == [offline["cold"].decision, offline["hot"].decision]
    assert llm_review_notes(client_for(server), NoteState(), now) == ([], [])


# -- usage ---------------------------------------------------------------------------

ITEMS = [("a", "The user likes cats"), ("b", "The user is tense")]


def test_usage_is_judged_by_the_model_paraphrase_and_all(server):
    reply = "Don't be so wound up, take a breath."
    server.script(Reply.json({"used_ids": ["b", "zzz"]}))
    (_, call), used = llm_judge_usage(client_for(server), reply, ITEMS)
    assert call.purpose == "usage_judge" and used == ["b"]
    assert judge_usage(reply, ITEMS) == []  # the offline judge misses the paraphrase


def test_usage_falls_back_to_the_offline_judge(server):
    server.script(Reply.text("maybe?"), Reply.text("maybe?"))
    (_, call), used = llm_judge_usage(client_for(server), "Cats are lovely; do you still like cats?", ITEMS)
    assert call.error and used == ["a"]
    with pytest.raises(InvalidInputError, match="items"):
        llm_judge_usage(client_for(server), "hello", [])


# -- replay ----------------------------------------------------------------------------


def run_all(client, new_id):
    """Every step once, in a fixed order: (call records, domain events)."""
    seeded = [added("n-tea", "The user likes green tea", "preference")]
    notes = fold(NoteState(), stream(*seeded)).active()
    _, state, now = review_state()
    calls, domain = [], []
    got_calls, ops = llm_note_operations(client, notes, said("Green tea again.", "I moved to Berlin."), new_id)
    calls += got_calls
    domain += ops
    call, titled = llm_episode_title(client, "ep-1", said("We migrated to MySQL."), new_id=new_id)
    calls.append(call)
    domain.append((new_id(), titled))
    call, distilled = llm_distill_profile(client, "s-1", PAGES, 3.0, now, new_id=new_id)
    calls.append(call)
    domain.append((new_id(), distilled))
    got_calls, reviews = llm_review_notes(client, state, now, new_id=new_id)
    calls += got_calls
    domain += [(new_id(), r) for r in reviews]
    call, used = llm_judge_usage(client, "Enjoy the tea!", ITEMS, new_id=new_id)
    calls.append(call)
    return calls, domain, used


def test_replay_gives_the_same_domain_events_without_the_server(server, tmp_path):
    server.script(
        Reply.json({"operations": [op("boost", 0, "n-tea"), op("add", 1, text="The user lives in Berlin",
                                                               category="fact")]}),
        Reply.json({"title": "MySQL migration", "summary": "The team moved to MySQL."}),
        Reply.json({"traits": {"name": "Ann"}, "user_knowledge": [], "assistant_knowledge": []}),
        Reply.error(500), Reply.error(500),  # the review falls back: a failure replays as a failure
        Reply.json({"used_ids": ["a"]}),
    )
    live_calls, live_domain, live_used = run_all(client_for(server), ids())
    assert server.remaining() == 0 and live_domain[-1][1].reviewer == "rules-v1"
    log = DuckDBEventLog(tmp_path / "log.duckdb")
    log.append([PendingEvent("acme", "alice", i, e) for i, e in [*live_calls, *live_domain]])
    log.close()
    server.stop()

    reopened = DuckDBEventLog(tmp_path / "log.duckdb")
    envelopes = list(reopened.scan(ScanFilter()))
    reopened.close()
    recorded = RecordedLlm(envelopes)
    replay_calls, replay_domain, replay_used = run_all(recorded, ids())
    assert replay_calls == live_calls and replay_domain == live_domain and replay_used == live_used
    stored = {(e.event_id, json.dumps(e.event.model_dump(mode="json"), sort_keys=True))
              for e in envelopes if e.kind != "llm_call_recorded"}
    assert stored == {(i, json.dumps(e.model_dump(mode="json"), sort_keys=True)) for i, e in replay_domain}
