"""Admission control (palimpsest.server.admission): bounded slots per class, a fair bounded queue, a deadline.

The gates are driven directly on an event loop: a request that holds a slot
is an ``enter`` without its ``leave`` yet.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from collections import deque

import pytest

from events.errors import InvalidInputError
from palimpsest.server.admission import GROUP_MAX, READ, WRITE, Admission, AdmissionSettings, Gate, Overloaded
from palimpsest.server.admission_http import mcp_class, request_class, write_group
from tests.admission_clock import FakeClock, run


def test_past_the_slots_and_the_queue_a_request_is_refused_at_once():
    async def scenario():
        gate = Gate(READ, slots=2, queue=0, tenant_share=1.0, retry_after_s=1)
        await gate.enter("acme", 1.0)
        await gate.enter("acme", 1.0)
        t0 = time.perf_counter()
        with pytest.raises(Overloaded) as refused:
            await gate.enter("acme", 1.0)
        return refused.value, time.perf_counter() - t0, gate.state()

    exc, seconds, state = run(scenario())
    assert exc.klass == READ and exc.retry_after_s == 1 and "wait for a slot" in exc.reason
    assert seconds < 0.01  # not after the budget: at once
    assert state == {"slots": 2, "running": 2, "queued": 0, "hold_ms": 0.0, "shared": 0, "refused": 1,
                     "refused_by": {"queue_full": 1, "tenant_share": 0, "predicted_wait": 0, "deadline": 0},
                     "refused_paced": 0}


def test_a_group_s_request_arriving_while_it_runs_waits_and_the_slot_is_free_once_all_sharing_it_are_answered():
    async def scenario():
        gate = Gate(WRITE, slots=1, queue=8, tenant_share=1.0, retry_after_s=1)
        ingest = ("ingest", "acme", "maya")
        first = await gate.enter("acme", 1.0, ingest)
        second = asyncio.ensure_future(gate.enter("acme", 1.0, ingest))  # its group runs: it waits, as any other
        third = asyncio.ensure_future(gate.enter("acme", 1.0, ingest))
        other = asyncio.ensure_future(gate.enter("acme", 1.0, ("ingest", "acme", "li")))  # another user
        await asyncio.sleep(0)
        assert gate.running == 1 and gate.queued == 3 and not second.done()
        gate.leave(first)
        await asyncio.sleep(0)
        assert second.done() and third.done() and second.result() is third.result()  # in together, one slot
        assert not other.done() and gate.running == 1 and gate.queued == 1
        gate.leave(second.result())
        await asyncio.sleep(0)
        assert not other.done()  # the slot is held while one request sharing it runs
        gate.leave(third.result())
        gate.leave(await asyncio.wait_for(other, 1))
        return gate.state()

    state = run(scenario())
    assert state["running"] == 0 and state["queued"] == 0 and state["shared"] == 1 and state["refused"] == 0


def test_the_waiters_of_a_group_go_in_together_when_one_is_given_a_slot_and_a_group_has_a_bound():
    async def scenario():
        gate = Gate(WRITE, slots=1, queue=64, tenant_share=1.0, retry_after_s=1)
        search = await gate.enter("acme", 1.0)  # a write with no group holds the one slot
        ingest = ("ingest", "beta", "maya")
        waiting = [asyncio.ensure_future(gate.enter("beta", 1.0, ingest)) for _ in range(GROUP_MAX + 2)]
        alone = asyncio.ensure_future(gate.enter("beta", 1.0))
        await asyncio.sleep(0)
        assert gate.queued == GROUP_MAX + 3
        gate.leave(search)
        await asyncio.sleep(0)
        went = [w for w in waiting if w.done()]
        assert len(went) == GROUP_MAX and len({id(w.result()) for w in went}) == 1  # one slot, GROUP_MAX requests
        assert not alone.done() and gate.running == 1 and gate.queued == 3
        for w in went:
            gate.leave(w.result())
        rest = await asyncio.wait_for(asyncio.gather(*[w for w in waiting if w not in went]), 1)
        assert len({id(s) for s in rest}) == 1 and not alone.done()
        for s in rest:
            gate.leave(s)
        gate.leave(await asyncio.wait_for(alone, 1))
        return gate.state()

    state = run(scenario())
    assert state["running"] == 0 and state["queued"] == 0 and state["shared"] == GROUP_MAX - 1 + 1


def test_a_request_s_write_group_is_its_tenant_s_ingest_for_its_user():
    assert write_group("POST", "/v1/users/maya/messages", "acme") == ("ingest", "acme", "maya")
    assert write_group("POST", "/v1/users/maya/messages", "beta") != write_group("POST", "/v1/users/maya/messages",
                                                                                 "acme")
    assert write_group("GET", "/v1/users/maya/messages", "acme") is None
    assert write_group("POST", "/v1/users/maya/replies", "acme") is None
    assert write_group("POST", "/v1/users/maya/messages/x", "acme") is None


def test_reads_are_admitted_while_writes_are_saturated():
    async def scenario():
        admission = Admission(AdmissionSettings(read_slots=2, write_slots=1, queue=1, wait_ms=1000))
        await admission.enter(WRITE, "acme")  # the one write slot
        queued = asyncio.create_task(admission.enter(WRITE, "acme"))  # the one place in the write queue
        await asyncio.sleep(0)
        with pytest.raises(Overloaded):
            await admission.enter(WRITE, "beta")
        started = time.perf_counter()
        await admission.enter(READ, "beta")
        read_wait = time.perf_counter() - started
        queued.cancel()
        await asyncio.gather(queued, return_exceptions=True)
        return read_wait, admission.state()

    read_wait, state = run(scenario())
    assert read_wait < 0.01
    assert state[READ]["running"] == 1 and state[WRITE]["refused"] == 1
    assert state[WRITE]["queued"] == 0  # the cancelled waiter left the queue


def test_a_request_that_waits_past_its_budget_is_refused_and_leaves_the_queue():
    async def scenario():
        gate = Gate(WRITE, slots=1, queue=8, tenant_share=1.0, retry_after_s=2)
        entered = await gate.enter("acme", 1.0)
        t0 = time.perf_counter()
        with pytest.raises(Overloaded) as late:
            await gate.enter("acme", 0.05)
        waited = time.perf_counter() - t0
        state = gate.state()
        gate.leave(entered)
        return late.value, waited, state, gate.state()

    exc, waited, during, after = run(scenario())
    assert "no slot within 50 ms" in exc.reason and exc.retry_after_s == 2 and during["refused_by"]["deadline"] == 1
    assert 0.04 <= waited < 0.5
    assert during["queued"] == 0 and during["running"] == 1
    assert after["running"] == 0  # the slot it never got is not given back twice


def test_a_wait_predicted_past_the_budget_is_refused_without_waiting():
    async def scenario():
        gate = Gate(READ, slots=1, queue=8, tenant_share=1.0, retry_after_s=1)
        entered = await gate.enter("acme", 1.0)
        await asyncio.sleep(0.05)
        gate.leave(entered)  # a slot is held ~50 ms: the gate learns it
        await gate.enter("acme", 1.0)
        waiting = asyncio.create_task(gate.enter("acme", 1.0))
        await asyncio.sleep(0)
        t0 = time.perf_counter()
        with pytest.raises(Overloaded) as predicted:  # second in line: ~100 ms predicted, 60 ms allowed
            await gate.enter("acme", 0.06)
        waiting.cancel()
        return predicted.value, time.perf_counter() - t0

    exc, seconds = run(scenario())
    assert "more than its 60 ms budget" in exc.reason and seconds < 0.01


def test_a_client_may_ask_for_a_shorter_budget_never_a_longer_one():
    admission = Admission(AdmissionSettings(wait_ms=100))
    assert admission.budget_s(None) == 0.1
    assert admission.budget_s(20) == 0.02
    assert admission.budget_s(5000) == 0.1


def test_settings_out_of_range_are_refused_naming_the_field_and_the_environment_sets_defaults():
    with pytest.raises(InvalidInputError) as bad:
        AdmissionSettings(read_slots=0, tenant_share=1.5)
    assert {f for f, _ in bad.value.problems} == {"read_slots", "tenant_share"}
    env = {"PALIMPSEST_READ_SLOTS": "3", "PALIMPSEST_ADMISSION_WAIT_MS": "40", "PALIMPSEST_ADMISSION": "off"}
    assert AdmissionSettings.from_env(env) == AdmissionSettings(read_slots=3, wait_ms=40, enabled=False)
    with pytest.raises(InvalidInputError) as nan:
        AdmissionSettings.from_env({"PALIMPSEST_WRITE_SLOTS": "many"})
    assert nan.value.problems[0][0] == "PALIMPSEST_WRITE_SLOTS"


@pytest.mark.parametrize(("method", "path", "klass"), [
    ("POST", "/v1/users/alice/search", READ),
    ("POST", "/v1/users/alice/context", READ),
    ("POST", "/v1/users/alice/items/search", READ),
    ("GET", "/v1/users/alice/notes", READ),
    ("POST", "/v1/users/alice/messages", WRITE),
    ("POST", "/v1/users/alice/reply", WRITE),
    ("POST", "/v1/users/alice/archive", WRITE),
    ("POST", "/v1/users/alice/tools/create_memory", WRITE),
    ("POST", "/v1/chat/completions", "proxy"),
    ("POST", "/v1/responses", "proxy"),
    ("GET", "/health", None),
    ("GET", "/ui/app.js", None),
])


def test_requests_are_classed_by_what_they_do(method, path, klass):
    assert request_class(method, path) == klass


def test_an_mcp_call_is_classed_by_its_tool():
    def call(name, **arguments):
        return json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                           "params": {"name": name, "arguments": {"user_id": "alice", **arguments}}}).encode()

    assert mcp_class(call("add_memory", user_input="hi")) == WRITE
    assert mcp_class(call("retrieve_memory", query="tea")) == READ
    assert mcp_class(call("build_context", query="tea")) == READ
    assert mcp_class(b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}') == READ
    assert mcp_class(b"not json") == READ


def test_the_first_mcp_call_imports_the_mcp_tools_off_the_replicas_loop():
    # a fresh interpreter (the MCP tools not imported yet): the import runs in another thread than the loop's, and
    # the call is classed as before
    script = """
import asyncio, json, sys, threading
from palimpsest.server.admission_http import classify_mcp
assert "palimpsest.server.mcp_tools" not in sys.modules
where = []


class Watch:  # asked first for every module imported: notes which thread imports the MCP tools, finds nothing itself
    @staticmethod
    def find_spec(name, path=None, target=None):
        if name == "palimpsest.server.mcp_tools":
            where.append(threading.get_ident())
sys.meta_path.insert(0, Watch)
body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                   "params": {"name": "add_memory", "arguments": {"user_id": "a", "user_input": "hi"}}}).encode()
async def main():
    first = await classify_mcp(body)
    second = await classify_mcp(body)
    return first, second, threading.get_ident()
first, second, loop_thread = asyncio.run(main())
print(json.dumps({"classes": [first, second], "off_loop": bool(where) and loop_thread not in where}))
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {"classes": [WRITE, WRITE], "off_loop": True}


def test_a_refusal_is_503_with_retry_after_in_the_api_shape_and_openai_shape_for_the_memory_proxy():
    from palimpsest.server.admission_http import overloaded

    api = overloaded(Overloaded(WRITE, "4 requests already wait for a slot", 1))
    body = json.loads(api.body)
    assert api.status_code == 503 and api.headers["retry-after"] == "1"
    assert body["error"] == "overloaded" and "writes" in body["message"] and body["problems"][0]["field"] == "request"
    proxy = overloaded(Overloaded("proxy", "4 requests already wait for a slot", 2))
    error = json.loads(proxy.body)["error"]
    assert proxy.status_code == 503 and proxy.headers["retry-after"] == "2"
    assert error["code"] == "overloaded" and "memory-proxy calls" in error["message"]


def test_a_replica_is_idle_only_once_every_class_has_been_free_for_a_while():
    async def scenario():
        admission = Admission(AdmissionSettings())
        entered = await admission.enter(READ, "acme")
        busy = admission.idle_for()
        admission.leave(READ, entered)
        await asyncio.sleep(0.05)
        return busy, admission.idle_for()

    busy, idle = run(scenario())
    assert busy == 0.0 and idle >= 0.04


def test_quiet_consolidation_waits_for_a_quiet_replica_unless_the_lag_grows_too_long():
    from palimpsest.server.quiet import QuietConsolidation

    idle = {"s": 0.0}
    quiet = QuietConsolidation(lambda: idle["s"], every=150, idle_s=1.0, max_lag=20)
    assert not quiet.due(149)  # not enough staged
    assert not quiet.due(150)  # enough, but requests are running
    assert quiet.due(20 * 150)  # the graph's lag is bounded even under load that never pauses
    idle["s"] = 1.5
    assert quiet.due(150) and not QuietConsolidation(lambda: 9.0, every=0).due(10_000)  # 0: on demand only


def test_quiet_consolidation_runs_a_round_in_its_thread_and_stops():
    from palimpsest.server.quiet import QuietConsolidation

    class Staged:  # the two members of palimpsest.Memory the thread uses
        staged_since_consolidation = 200
        rounds = 0

        def consolidate(self):
            self.rounds += 1
            self.staged_since_consolidation = 0

    memory = Staged()
    quiet = QuietConsolidation(lambda: 5.0, every=150, tick_s=0.01)
    quiet.start(lambda: memory)
    deadline = time.monotonic() + 5
    while memory.rounds == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    quiet.stop()
    assert memory.rounds == 1 and quiet.rounds == 1


def _gate_holding(clock: FakeClock, slots: int, hold_s: float) -> Gate:
    """A gate that has learnt a slot is held ``hold_s``, all its slots now taken by requests started just now."""
    gate = Gate(READ, slots=slots, queue=32, tenant_share=1.0, retry_after_s=1, clock=clock)
    for _ in range(slots):
        entered = gate._take()
        clock.now += hold_s
        gate.leave(entered)
    for _ in range(slots):
        gate._take()
    return gate


def test_a_sudden_longer_hold_raises_the_predicted_wait_at_once():
    clock = FakeClock()
    gate = Gate(READ, slots=1, queue=8, tenant_share=1.0, retry_after_s=1, clock=clock)
    for held in (0.01, 0.01, 0.2):
        entered = gate._take()
        clock.now += held
        gate.leave(entered)
    gate._take()  # the slot is taken again just now
    assert gate.predicted_wait_s("acme") >= 0.2 > gate.hold_s  # the mean lags; the prediction does not


def test_the_predicted_wait_counts_the_places_ahead_per_slot_and_the_time_the_running_requests_have_held():
    clock = FakeClock()
    gate = _gate_holding(clock, slots=2, hold_s=0.04)
    assert gate.predicted_wait_s("acme") == pytest.approx(0.04)  # first in line: the first slot to free
    clock.now += 0.03
    assert gate.predicted_wait_s("acme") == pytest.approx(0.01)  # they have held 30 of their ~40 ms
    gate.waiting["acme"] = deque([object(), object()])  # two of acme's own ahead
    gate.queued = 2
    assert gate.predicted_wait_s("acme") == pytest.approx(0.05)  # third in line: one round later
    assert gate.predicted_wait_s("beta") == pytest.approx(0.01)  # another tenant's turn comes before acme's next


def test_a_slot_held_past_the_usual_time_is_expected_to_be_held_as_long_again():
    clock = FakeClock()
    gate = _gate_holding(clock, slots=1, hold_s=0.02)
    clock.now += 0.15  # a long write (a compaction) is under way
    assert gate.predicted_wait_s("acme") == pytest.approx(0.15)


def test_while_a_slot_is_held_far_past_the_usual_time_new_requests_are_refused_at_once_not_at_the_deadline():
    async def scenario():
        clock = FakeClock()
        gate = _gate_holding(clock, slots=1, hold_s=0.02)
        first = asyncio.create_task(gate.enter("acme", 0.1))  # ~20 ms predicted: it waits
        await asyncio.sleep(0)
        clock.now += 0.2
        with pytest.raises(Overloaded) as refused:  # the slot has been held 200 ms: refused without a wait
            await gate.enter("beta", 0.1)
        first.cancel()
        await asyncio.gather(first, return_exceptions=True)
        return refused.value, gate.state()

    exc, state = run(scenario())
    assert "its 100 ms budget" in exc.reason
    assert state["refused_by"]["predicted_wait"] == 1 and state["refused_by"]["deadline"] == 0


def test_a_waiter_that_met_a_longer_wait_than_predicted_makes_the_next_predictions_longer():
    async def scenario():
        clock = FakeClock()
        gate = _gate_holding(clock, slots=1, hold_s=0.01)
        first = asyncio.create_task(gate.enter("acme", 1.0))  # first in line: ~10 ms predicted
        await asyncio.sleep(0)
        cutting_in = asyncio.create_task(gate.enter("beta", 1.0))  # nothing waiting for beta: it goes first
        await asyncio.sleep(0)
        for _ in range(2):  # every slot is held 10 ms, as predicted
            clock.now += 0.01
            gate.leave(gate.started[0])
            await asyncio.sleep(0)
        await asyncio.gather(first, cutting_in)
        return gate.hold_high_s, gate.predicted_wait_s("gamma")

    hold, predicted = run(scenario())
    assert hold == pytest.approx(0.01)
    assert predicted == pytest.approx(0.02)  # acme's first in line waited 20 ms, over the 10 ms the holds predict


def test_while_a_class_refuses_a_request_waits_only_when_its_predicted_wait_is_within_half_its_budget():
    async def scenario():
        clock = FakeClock()
        gate = _gate_holding(clock, slots=1, hold_s=0.04)  # first in line: 40 ms predicted
        calm = asyncio.create_task(gate.enter("acme", 0.07))  # nothing refused lately: the whole budget
        await asyncio.sleep(0)
        queued = gate.queued
        calm.cancel()
        await asyncio.gather(calm, return_exceptions=True)
        with pytest.raises(Overloaded):
            await gate.enter("acme", 0.03)  # past even the whole budget
        with pytest.raises(Overloaded) as refused:  # refusing now: half the budget
            await gate.enter("acme", 0.07)
        gate.last_refused -= 1.5  # a second and more without a refusal
        queued_again = asyncio.create_task(gate.enter("acme", 0.07))
        await asyncio.sleep(0)
        calm_again = gate.queued
        queued_again.cancel()
        await asyncio.gather(queued_again, return_exceptions=True)
        return queued, refused.value, calm_again

    queued, refused, calm_again = run(scenario())
    assert queued == 1 and calm_again == 1
    assert "predicted at 40 ms, more than half of its 70 ms budget" in refused.reason


def test_after_a_quiet_while_the_hold_time_is_mostly_the_new_one():
    clock = FakeClock()
    gate = _gate_holding(clock, slots=1, hold_s=2.0)  # a long batch
    gate.leave(gate.started[0])
    clock.now += 3.0  # nothing for three seconds, then a short request
    slot = gate._take()
    clock.now += 0.02
    gate.leave(slot)
    assert gate.hold_high_s < 0.2 and gate.hold_s < 0.2


def test_a_slot_is_free_once_the_answer_is_sent_though_the_app_goes_on_after_it(monkeypatch):
    """A client's next write must not find its previous one's slot held by what runs after the answer (Ray
    Serve's bookkeeping): with one write slot and no queue it would be refused at once."""
    from palimpsest.server import admission_http

    monkeypatch.setattr(admission_http, "_tenant", lambda scope: "acme")  # the key check is not under test here
    admission = Admission(AdmissionSettings(write_slots=1, queue=0))
    scope = {"type": "http", "method": "POST", "path": "/v1/users/alice/messages", "headers": []}

    async def receive():
        return {"type": "http.request", "body": b""}

    def answering(after: asyncio.Event | None):
        async def app(scope, receive, send):
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await send({"type": "http.response.body", "body": b"{}"})
            if after is not None:
                await after.wait()  # the app's own work after the answer went out
        return app

    async def scenario():
        after, first_sent, second_sent = asyncio.Event(), [], []

        async def first_send(message):
            first_sent.append(message)

        async def second_send(message):
            second_sent.append(message)

        first = asyncio.create_task(admission_http.admit(admission, answering(after), dict(scope), receive, first_send))
        while len(first_sent) < 2:
            await asyncio.sleep(0)
        held_after_answer = admission.gates[WRITE].running
        await admission_http.admit(admission, answering(None), dict(scope), receive, second_send)
        after.set()
        await first
        return held_after_answer, second_sent[0]["status"], admission.gates[WRITE].running

    held, status, running = run(scenario())
    assert held == 0 and status == 200 and running == 0


def test_an_admitted_answer_says_where_its_time_went_unless_the_server_is_told_not_to(monkeypatch):
    from palimpsest import phases
    from palimpsest.server import admission_http

    monkeypatch.setattr(admission_http, "_tenant", lambda scope: "acme")
    scope = {"type": "http", "method": "POST", "path": "/v1/users/alice/search", "headers": []}

    async def receive():
        return {"type": "http.request", "body": b""}

    async def app(scope, receive, send):  # a route timing a phase of its own, in the request's context
        with phases.timed("shard"):
            await asyncio.sleep(0.002)
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"x")]})
        await send({"type": "http.response.body", "body": b"{}"})

    def headers(settings: AdmissionSettings) -> dict:
        sent = []

        async def send(message):
            sent.append(message)

        run(admission_http.admit(Admission(settings), app, dict(scope), receive, send))
        return dict(sent[0]["headers"])

    timed = headers(AdmissionSettings())
    names = [p.split(";dur=")[0] for p in timed[b"server-timing"].decode().split(", ")]
    assert names == ["admit", "shard", "total"] and timed[b"content-type"] == b"x"
    assert float(timed[b"server-timing"].decode().split("shard;dur=")[1].split(",")[0]) >= 2.0
    assert b"server-timing" in headers(AdmissionSettings(enabled=False))  # no admission, still timed
    assert b"server-timing" not in headers(AdmissionSettings(timing=False))
    assert AdmissionSettings.from_env({"PALIMPSEST_SERVER_TIMING": "off"}).timing is False
    assert AdmissionSettings.from_env({}).timing is True
