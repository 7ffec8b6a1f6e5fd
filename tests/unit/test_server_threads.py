"""palimpsest.server.threads: blocking calls from the event loop run on threads kept for the process's life."""

from __future__ import annotations

import asyncio
import contextvars
import threading
import time

from palimpsest.server.threads import in_thread

REQUEST = contextvars.ContextVar("request", default=None)


def _run_forever_loop() -> asyncio.AbstractEventLoop:
    """A loop run forever in a thread of its own, as Ray Serve's replica runs its HTTP server's."""
    loop = asyncio.new_event_loop()
    threading.Thread(target=loop.run_forever, daemon=True).start()
    return loop


def _kept_threads() -> set[threading.Thread]:
    """The pool's live threads, as objects: held, they stay distinct (a thread's ident is reused once it ends)."""
    return {t for t in threading.enumerate() if t.name.startswith("palimpsest-worker")}


def _one_after_another(loop: asyncio.AbstractEventLoop, make_call, calls: int = 10) -> list:
    """Each call from a task of its own, as each request is, a few ms apart (a worker marks itself idle just after
    its answer is handed back: a call sent at once may find none idle yet and start one more thread)."""
    answers = []
    for n in range(calls):
        answers.append(asyncio.run_coroutine_threadsafe(make_call(n), loop).result(5))
        time.sleep(0.01)
    return answers


def test_calls_from_requests_one_after_another_start_no_thread_of_their_own():
    loop = _run_forever_loop()
    try:
        asyncio.run_coroutine_threadsafe(in_thread(int), loop).result(5)  # the pool has a thread (other tests' too)
        before = _kept_threads()
        threads = _one_after_another(loop, lambda _: in_thread(threading.current_thread))
        # the calls ran on the threads already kept (any idle one takes a call): a thread per request would add ten
        assert len(set(threads) - before) <= 1
        assert threading.current_thread() not in threads
    finally:
        loop.call_soon_threadsafe(loop.stop)


def test_the_callers_context_follows_the_call_and_its_result_and_errors_come_back():
    async def call():
        REQUEST.set("req-1")
        seen = await in_thread(REQUEST.get)
        try:
            await in_thread(int, "not a number")
        except ValueError as exc:
            return seen, str(exc)

    seen, error = asyncio.run(call())
    assert seen == "req-1"
    assert "not a number" in error


def test_a_cancelled_caller_waits_for_its_call_to_finish():
    finished = threading.Event()

    def slow() -> None:
        time.sleep(0.2)
        finished.set()

    async def main() -> bool:
        task = asyncio.create_task(in_thread(slow))
        await asyncio.sleep(0.05)
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            return finished.is_set()
        return False

    assert asyncio.run(main()) is True


def test_a_json_routes_synchronous_endpoint_runs_on_the_kept_threads():
    import httpx
    from fastapi import APIRouter, FastAPI

    from palimpsest.server.responses import JsonRoute

    router = APIRouter(route_class=JsonRoute)
    threads: list[threading.Thread] = []

    @router.get("/where/{item}")
    def where(item: str, n: int = 1) -> dict:  # synchronous, as the declared operations' routes are
        threads.append(threading.current_thread())
        return {"item": item, "n": n}

    app = FastAPI()
    app.include_router(router)

    async def ask(n: int) -> dict:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as client:
            answer = await client.get(f"/where/x?n={n}")
            assert answer.status_code == 200
            return answer.json()

    loop = _run_forever_loop()
    try:
        asyncio.run_coroutine_threadsafe(ask(0), loop).result(5)
        before = _kept_threads()
        answers = _one_after_another(loop, ask)
    finally:
        loop.call_soon_threadsafe(loop.stop)
    assert answers == [{"item": "x", "n": n} for n in range(10)]
    assert all(t.name.startswith("palimpsest-worker") for t in threads)  # not a thread started for the request
    assert len(set(threads[1:]) - before) <= 1
