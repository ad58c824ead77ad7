"""Area ``engine``: a custom model that breaks the model protocol (``aerix.model``).

Each generation follows a drawn plan: the text of a turn as deltas, with out-of-protocol items
mixed in (non-dicts, missing keys, ``text: None``, malformed usage, two ``done`` items or none,
a dict whose ``get`` raises, an object whose ``repr`` raises), then an ending: return, or raise
(an ``AerixError`` of each kind, other exceptions) at the start or mid-stream. The stream is an
async generator, or an iterator whose ``aclose`` raises, is not awaitable or is missing; or
``chat`` itself raises, returns no iterator, or is a coroutine. Sometimes the caller's signal is
aborted mid-stream.
"""

from __future__ import annotations

import random
from typing import Any

from aerix import Abort, AerixError
from aerix.testing import ScriptedModel

from .draw import model_text, pick, string, turn
from .fixtures import INPUTS, agent_options, final, make_agent
from .harness import Case, Probe

__all__ = ["draw"]


class EvilDict(dict):  # type: ignore[type-arg]
    """A dict whose ``get`` raises."""

    def get(self, *args: Any) -> Any:
        raise LookupError("get() refused")


class BadRepr:
    def __repr__(self) -> str:
        raise RuntimeError("repr() refused")


class BadStr(Exception):
    def __str__(self) -> str:
        raise RuntimeError("str() refused")


def _done(usage: Any = "good", finish: Any = "stop") -> dict[str, Any]:
    item: dict[str, Any] = {"type": "done", "finish_reason": finish}
    if usage != "missing":
        item["usage"] = {"prompt_tokens": 10, "completion_tokens": 3, "cached_tokens": 0} if usage == "good" else usage
    return item


_USAGES = ("missing", None, "12", [], {}, {"prompt_tokens": -1}, {"prompt_tokens": 1.5}, {"prompt_tokens": float("nan")},
           {"completion_tokens": float("inf")}, {"prompt_tokens": True}, {"prompt_tokens": 10**30}, {"prompt_tokens": "3"},
           {"cached_tokens": None}, {"prompt_tokens": 2.0}, {"completion_tokens": -0.0})
_ODD_ITEMS = (None, 5, "text", b"bytes", ["type", "text"], ("text", "x"), {}, {"type": "text"}, {"text": "x"}, {"type": "TEXT", "text": "x"},
              {"type": "text", "text": None}, {"type": "text", "text": 5}, {"type": "text", "text": b"x"}, {"type": "text", "text": ["a"]},
              {"type": "tool_call", "name": "echo"}, {"type": None}, {"type": "done", "finish_reason": None, "usage": None})
_FAILURES = ("engine", "output", "abort", "options", "busy", "end", "store", "RuntimeError", "ValueError", "KeyError", "RecursionError",
             "StopAsyncIteration", "BadStr", "TimeoutError", "OSError")
_FORMS = ("generator", "generator", "generator", "iterator", "aclose raises", "aclose not awaitable", "no aclose", "chat raises",
          "chat returns None", "chat returns a list", "async chat")


def _failure(name: str) -> BaseException:
    if name in ("engine", "output", "abort", "options", "busy", "end", "store"):
        return AerixError(name, f"the engine raised {name}")  # type: ignore[arg-type]
    return {"RuntimeError": RuntimeError("engine crashed"), "ValueError": ValueError(""), "KeyError": KeyError("choices"),
            "RecursionError": RecursionError("too deep"), "StopAsyncIteration": StopAsyncIteration(), "BadStr": BadStr(),
            "TimeoutError": TimeoutError(), "OSError": OSError(104, "connection reset")}[name]


def _plan(rng: random.Random) -> dict[str, Any]:
    """One generation's plan: items to yield, then how it ends, and in what form."""
    text = turn(rng, INPUTS) if rng.random() < 0.6 else model_text(rng, INPUTS)
    step = rng.randint(1, 30)
    items: list[Any] = [{"type": "text", "text": text[i : i + step]} for i in range(0, len(text), step)]
    broken = rng.random() < 0.6
    if broken:
        for _ in range(rng.randint(1, 3)):
            odd = pick(rng, (*_ODD_ITEMS, "evil", "bad repr", "usage", "huge"))
            odd = {"evil": EvilDict(type="text", text="x"), "bad repr": BadRepr(), "usage": _done(pick(rng, _USAGES)),
                   "huge": {"type": "text", "text": "z" * 200_000}}.get(odd, odd) if isinstance(odd, str) else odd
            items.insert(rng.randint(0, len(items)), odd)
    done = pick(rng, ("one", "one", "none", "two", "text after")) if broken else "one"
    finish = pick(rng, ("stop", "stop", "length", None, "weird", 5)) if broken else "stop"
    if done != "none":
        items.append(_done(finish=finish))
    if done == "two":
        items.append(_done())
    if done == "text after":
        items.append({"type": "text", "text": "more"})
    fail = pick(rng, _FAILURES) if rng.random() < 0.25 else None
    return {
        "items": items,
        "fail": fail,
        "fail_at": rng.randint(0, len(items)) if fail else None,
        "abort_at": rng.randint(0, len(items)) if rng.random() < 0.08 else None,
        "form": pick(rng, _FORMS) if rng.random() < 0.3 else "generator",
    }


class Stream:
    """A model's stream that is not a generator: ``__anext__`` and (maybe) an odd ``aclose``."""

    def __init__(self, source: Any, close: str) -> None:
        self.source, self.close = source, close
        if close == "aclose raises":
            self.aclose = self._raising_close
        elif close == "aclose not awaitable":
            self.aclose = lambda: None
        elif close == "iterator":
            self.aclose = self._fine_close

    def __aiter__(self) -> Stream:
        return self

    async def __anext__(self) -> Any:
        return await self.source.__anext__()

    async def _raising_close(self) -> None:
        raise RuntimeError("cannot close the stream")

    async def _fine_close(self) -> None:
        await self.source.aclose()


class BrokenModel:
    """Plays one plan per ``chat`` call (a good final once they run out); records what it was sent."""

    def __init__(self, plans: list[dict[str, Any]], signal: Abort) -> None:
        self.plans, self.signal = list(plans), signal
        self.sent: list[list[dict[str, Any]]] = []

    def chat(self, messages: list[dict[str, Any]], options: dict[str, Any]) -> Any:
        self.sent.append([dict(m) for m in messages])
        plan = self.plans.pop(0) if self.plans else {"items": [{"type": "text", "text": final()}, _done()], "fail": None, "fail_at": None, "abort_at": None, "form": "generator"}
        form = plan["form"]
        if form == "chat raises":
            raise _failure(plan["fail"] or "RuntimeError")
        if form == "chat returns None":
            return None
        if form == "chat returns a list":
            return list(plan["items"])
        if form == "async chat":
            return self._coroutine(plan)
        stream = self._play(plan)
        return stream if form == "generator" else Stream(stream, form)

    async def _coroutine(self, plan: dict[str, Any]) -> Any:
        return self._play(plan)

    async def _play(self, plan: dict[str, Any]) -> Any:
        for i, item in enumerate([*plan["items"], None]):
            if i == plan["abort_at"]:
                self.signal.abort("the user pressed stop")
            if i == plan["fail_at"]:
                raise _failure(plan["fail"])
            if item is not None or i < len(plan["items"]):
                yield item


def draw(rng: random.Random) -> Case:
    options = agent_options(rng)
    plans = [_plan(rng) for _ in range(rng.randint(1, 5))]
    question = "Q: " + string(rng)
    inputs = {"prompt": question, "plans": plans, **options}

    async def play(probe: Probe) -> None:
        signal = Abort()
        model = BrokenModel(plans, signal)
        agent = make_agent(model, options)
        await probe.run("run", lambda: agent.run(question, signal=signal))
        if agent.store is not None:
            probe.check_records("run", await agent.store.list_runs())
        agent.model = good = ScriptedModel([final()])
        await probe.again("second run", lambda: agent.run("And now?"))
        probe.check_sent([*model.sent, *(c.messages for c in good.calls)])

    return Case(inputs, play)
