"""Per-tenant fairness in admission (palimpsest.server.admission, palimpsest.server.admission_pace): a tenant's
share of the queue and of the slots beside another active tenant, ``tenant_slots``, and the pacing of a tenant that
floods beside a modest one.

The gates are driven directly on an event loop, on a fake clock: a request that holds a slot is an ``enter``
without its ``leave`` yet.
"""

from __future__ import annotations

import asyncio
import time

import pytest

from events.errors import InvalidInputError
from palimpsest.server.admission import PROXY, READ, WRITE, Admission, AdmissionSettings, Gate, Overloaded
from palimpsest.server.admission_pace import Pace
from tests.admission_clock import FakeClock, run


def test_a_flooding_tenant_fills_only_its_share_and_the_other_tenant_gets_the_next_slot():
    async def scenario():
        gate = Gate(READ, slots=1, queue=4, tenant_share=0.5, retry_after_s=1)
        first = await gate.enter("flood", 5.0)
        order = []

        async def one(tenant, name):
            await gate.enter(tenant, 5.0)
            order.append(name)

        flood = [asyncio.create_task(one("flood", f"flood-{i}")) for i in range(2)]
        await asyncio.sleep(0)
        with pytest.raises(Overloaded) as own_share:  # its share of the queue (2 of 4) is full
            await gate.enter("flood", 5.0)
        modest = asyncio.create_task(one("modest", "modest"))
        await asyncio.sleep(0)
        entered = first
        for _ in range(3):  # each request that ran gives its slot back: the next in turn gets it
            gate.leave(entered)
            await asyncio.sleep(0)
            entered = gate.started[0]
        await asyncio.gather(*flood, modest)
        return order, own_share.value

    order, refused = run(scenario())
    assert "your tenant already has 2 requests waiting" in refused.reason
    assert order == ["modest", "flood-0", "flood-1"]  # the tenant with nothing waiting first, not arrival order


def test_beside_another_active_tenant_a_tenant_holds_all_slots_but_one_and_the_other_finds_it_free():
    async def scenario():
        clock = FakeClock()
        gate = Gate(READ, slots=3, queue=8, tenant_share=1.0, retry_after_s=1, clock=clock)
        alone = [await gate.enter("flood", 1.0) for _ in range(3)]  # alone, it may take every slot
        for entered in alone:
            gate.leave(entered)
        await gate.enter("modest", 1.0)  # modest asks once: it is active for the next second
        gate.leave(gate.started[0])
        held = [await gate.enter("flood", 1.0) for _ in range(2)]
        third = asyncio.create_task(gate.enter("flood", 1.0))  # all but one slot: it waits
        await asyncio.sleep(0)
        free_for_modest = gate.running == 2 and gate.queued == 1
        started = clock.now
        modest = await gate.enter("modest", 1.0)  # at once, though flood waits
        gate.leave(modest)
        clock.now += 1.5  # modest has been quiet past ACTIVE_S: flood's waiter gets the free slot
        gate.leave(held[0])
        await third
        return free_for_modest, modest.entered - started, gate.running_by

    free_for_modest, modest_waited, running_by = run(scenario())
    assert free_for_modest and modest_waited == 0.0
    assert running_by == {"flood": 2}


def test_a_flooding_tenant_beside_a_modest_one_holds_at_most_tenant_slots_even_with_slots_free():
    async def scenario():
        clock = FakeClock()
        gate = Gate(READ, slots=4, queue=8, tenant_share=1.0, retry_after_s=1, clock=clock, tenant_slots=1)
        gate.leave(await gate.enter("modest", 1.0))  # modest asks once: it is active for the next second
        held = [await gate.enter("flood", 1.0) for _ in range(3)]  # not refused yet: all slots but one
        with pytest.raises(Overloaded):
            await gate.enter("flood", 0.0)  # refused (no budget to wait): flood is flooding, modest is not
        caps = {"flood": gate.cap("flood"), "modest": gate.cap("modest")}
        for entered in held:
            gate.leave(entered)
        again = await gate.enter("flood", 1.0)
        second = asyncio.create_task(gate.enter("flood", 1.0))  # beside modest: it waits with three slots free
        await asyncio.sleep(0)
        waiting_with_free_slots = (gate.running, gate.queued)
        gate._refuse("modest", "deadline", "a modest request refused too")  # now both are flooding
        both_flooding = gate.cap("flood")  # every active tenant refused lately: all but one again
        clock.now += 1.5  # both quiet past ACTIVE_S: flood alone, its waiter gets a free slot
        gate.leave(again)
        await second
        return caps, waiting_with_free_slots, both_flooding, dict(gate.running_by)

    caps, waiting_with_free_slots, both_flooding, running_by = run(scenario())
    assert caps == {"flood": 1, "modest": 3}
    assert waiting_with_free_slots == (1, 1)
    assert both_flooding == 3
    assert running_by == {"flood": 1}


def test_tenant_slots_apply_to_reads_and_writes_not_to_the_memory_proxy():
    admission = Admission(AdmissionSettings(read_slots=4, write_slots=2, proxy_slots=32, tenant_slots=2))
    assert {c: g.flood_cap for c, g in admission.gates.items()} == {READ: 2, WRITE: 1, PROXY: 31}
    assert Admission(AdmissionSettings(tenant_slots=0)).gates[READ].flood_cap == 3  # 0: all but one
    with pytest.raises(InvalidInputError, match="tenant_slots"):
        AdmissionSettings(tenant_slots=-1)
    assert AdmissionSettings.from_env({"PALIMPSEST_TENANT_SLOTS": "3"}).tenant_slots == 3


async def _refused(gate: Gate, tenant: str) -> bool:
    with pytest.raises(Overloaded):
        await gate.enter(tenant, 0.0)  # no budget to wait: refused
    return True


def _paced_gates(clock: FakeClock, rest: float = 1.0) -> tuple[Gate, Gate]:
    pace = Pace(1, rest, clock)
    read = Gate(READ, slots=4, queue=8, tenant_share=1.0, retry_after_s=1, clock=clock, tenant_slots=1, pace=pace)
    write = Gate(WRITE, slots=1, queue=8, tenant_share=1.0, retry_after_s=1, clock=clock, tenant_slots=1, pace=pace)
    return read, write


def test_a_flooding_tenant_beside_a_modest_one_takes_turns_between_its_reads_and_writes_and_rests_after_each():
    async def scenario():
        clock = FakeClock()
        read, write = _paced_gates(clock)
        read.leave(await read.enter("modest", 1.0))  # modest searches: active for the next second
        first, *more = [await read.enter("flood", 1.0) for _ in range(3)]  # all slots but one
        refused_once = await _refused(read, "flood")
        held_after_one = read.pace.held("flood")  # one refusal in four requests: not held
        for _ in range(3):
            await _refused(read, "flood")  # most of its requests refused beside modest: held
        for extra in more:
            read.leave(extra)  # held no time: no rest
        held = read.pace.held("flood"), read.pace.held("modest")
        its_write = asyncio.create_task(write.enter("flood", 1.0))  # the write slot is free: its read runs
        await asyncio.sleep(0)
        write_waits_for_its_read = write.running == 0 and write.queued == 1
        clock.now += 0.02
        read.leave(first)  # held 20 ms: it rests 20 ms before its next request takes a slot
        await asyncio.sleep(0)
        resting = not its_write.done() and write.running == 0
        modest = await read.enter("modest", 1.0)  # the modest tenant is not held: a slot at once
        read.leave(modest)
        clock.now += 0.021
        read.pace.dispatch()  # what the rest's timer does when it ends
        await asyncio.sleep(0)
        return (refused_once, held_after_one), held, write_waits_for_its_read, resting, its_write.done(), dict(
            write.running_by)

    once, held, write_waits, resting, written, running = run(scenario())
    assert once == (True, False)
    assert held == (True, False)
    assert write_waits and resting and written
    assert running == {"flood": 1}


def test_a_held_tenant_s_request_that_cannot_wait_out_the_rest_is_refused_up_front_and_pacing_ends_with_the_modest():
    async def scenario():
        clock = FakeClock()
        read, write = _paced_gates(clock, rest=4.0)
        read.leave(await read.enter("modest", 1.0))
        first, *more = [await read.enter("flood", 1.0) for _ in range(3)]
        for _ in range(4):
            await _refused(read, "flood")
        for extra in more:
            read.leave(extra)
        clock.now += 0.05
        read.leave(first)  # held 50 ms: it rests 200 ms
        predicted = read.predicted_wait_s("flood")
        t0 = time.perf_counter()
        with pytest.raises(Overloaded) as refused:
            await write.enter("flood", 0.1)  # a 100 ms budget cannot cover the rest: refused at once
        seconds = time.perf_counter() - t0
        clock.now += 1.5  # modest quiet past ACTIVE_S: flood is no longer held, no rest, no shared cap
        alone = [await read.enter("flood", 1.0) for _ in range(4)] + [await write.enter("flood", 1.0)]
        return predicted, refused.value.reason, seconds, len(alone), read.pace.held("flood")

    predicted, reason, seconds, taken, still_held = run(scenario())
    assert predicted == pytest.approx(0.2) or predicted > 0.2
    assert "predicted" in reason and seconds < 0.05
    assert taken == 5 and not still_held


def test_the_read_and_write_gates_share_one_pace_the_memory_proxy_has_none():
    admission = Admission(AdmissionSettings(tenant_rest=0.5))
    assert admission.gates[READ].pace is admission.gates[WRITE].pace is not None
    assert admission.gates[PROXY].pace is None
    assert admission.gates[READ].pace.rest == 0.5 and admission.gates[READ].pace.limit == 1
    assert Admission(AdmissionSettings(tenant_slots=0)).gates[READ].pace.limit is None
    with pytest.raises(InvalidInputError, match="tenant_rest"):
        AdmissionSettings(tenant_rest=-1)
    assert AdmissionSettings.from_env({"PALIMPSEST_TENANT_REST": "0.25"}).tenant_rest == 0.25


def test_tenants_of_like_size_past_capacity_are_not_paced_only_a_heavy_one_beside_a_light_one():
    async def scenario():
        clock = FakeClock()
        read, _ = _paced_gates(clock)
        for _ in range(3):
            read.leave(await read.enter("light", 1.0))  # three requests, none refused
        taken = [await read.enter("heavy", 1.0) for _ in range(3)]
        for _ in range(4):
            await _refused(read, "heavy")  # most of seven refused, but not four times light's three
        like_size = read.pace.held("heavy")
        clock.now += 0.05  # past the modest tenants' freshness
        for _ in range(6):
            await _refused(read, "heavy")  # thirteen now: more than four times light's three
        return like_size, read.pace.held("heavy"), read.pace.held("light"), len(taken)

    like_size, heavy, light, _ = run(scenario())
    assert not like_size
    assert heavy and not light
