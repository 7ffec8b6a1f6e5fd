"""What the admission tests share: a clock a test moves by hand, and a coroutine run to its end."""

from __future__ import annotations

import asyncio


def run(coro):
    return asyncio.run(coro)


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now
