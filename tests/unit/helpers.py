"""Small builders for loop tests: turn texts and event summaries."""

from __future__ import annotations

import asyncio
import json
import sys
import time

from aerix.stores import MemoryStore


def final(text: str, thought: str = "done") -> str:
    return json.dumps({"thought": thought, "final": text})


def calls(*pairs: tuple[str, dict], thought: str = "use tools") -> str:
    return json.dumps({"thought": thought, "calls": [{"tool": t, "input": i} for t, i in pairs]})


async def collect(stream) -> list:
    return [ev async for ev in stream]


def kinds(events) -> list[str]:
    """Event types, with the streaming deltas (text, final_delta, output_delta) and usage dropped: the shape of a run."""
    return [e.type for e in events if e.type not in ("text", "final_delta", "output_delta", "usage")]


def endings(events) -> list:
    return [e for e in events if e.type in ("final", "end")]


IN_PYODIDE = sys.platform == "emscripten"


def run_coroutine(coro):
    """Run a coroutine to its end with ``asyncio.run`` on CPython and inside Pyodide alike.

    Pyodide's own loop (WebLoop) cannot block and marks itself running for good, so inside
    Pyodide it is set aside while a loop of our own that only knows timers runs the test (the
    unit tests await nothing from JavaScript).
    """
    if not IN_PYODIDE:
        return asyncio.run(coro)
    import asyncio.events as events

    webloop = events._get_running_loop()
    events._set_running_loop(None)
    try:
        return asyncio.run(coro, loop_factory=_TimersOnlyLoop)
    finally:
        events._set_running_loop(webloop)


class _TimersOnly:
    """A selector with nothing to select: it waits out the next timer, or reports a deadlock."""

    def select(self, timeout=None):
        if timeout is None:
            raise RuntimeError("deadlock: the coroutine waits for something nothing will do")
        time.sleep(timeout)
        return []

    def close(self):
        pass


class _TimersOnlyLoop(asyncio.BaseEventLoop):
    def __init__(self):
        super().__init__()
        self._selector = _TimersOnly()

    def _process_events(self, event_list):
        pass

    def _write_to_self(self):
        pass


class Crash(BaseException):
    """The page dies: nothing after this point runs."""


class CrashingStore(MemoryStore):
    """A store whose n-th write of a kind kills the 'page', right after writing it or before
    (``CrashingStore(at=n, what="save_run"|"put_effect", before=False)``)."""

    def __init__(self, at=None, what="save_run", before=False):
        super().__init__()
        self.at, self.what, self.before, self.count = at, what, before, 0

    async def _maybe_crash(self, what, write):
        if what == self.what:
            self.count += 1
            if self.count == self.at:
                if not self.before:
                    await write()
                self.at = None
                raise Crash(f"{what} #{self.count}")
        return await write()

    async def save_run(self, run, revision=None, holder=None):
        return await self._maybe_crash("save_run", lambda: MemoryStore.save_run(self, run, revision, holder))

    async def put_effect(self, key, result, run_id=None, holder=None):
        return await self._maybe_crash("put_effect", lambda: MemoryStore.put_effect(self, key, result, run_id, holder))
