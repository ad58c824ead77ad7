"""Reading an agent's prompt ahead of its first question (``Agent.prefill``).

    agent = Agent(model=page_model(), instructions="...", tools=tools)
    task = asyncio.ensure_future(agent.prefill())   # while the person types
    ...
    async for ev in agent.run(question): ...          # reads only the question

A new agent's first generation reads its whole system message before its first token: about 430
tokens for the demo's five tools, some ten seconds of a 135M model in the page on two threads
(``bench/README.md``). The engines aerix drives keep the prompt they last read and reuse its
longest common prefix with the next one (llama.cpp's prompt cache: in the page, and
``llama-server``; vLLM's prefix caching; OpenAI's prompt caching). ``prefill`` sends the
conversation as the next run will begin it (the system message, and any turns kept so far) as a
generation of one token with no constraint, and discards that token: the engine has read the
prompt, and the run that follows reads only its new message. The engine runs its generations one
at a time (web/generation.mjs), so a run sent while a prefill is reading waits for it and then
reuses what it read.

A model may do this its own way: an optional ``prefill(messages, options)`` method (an awaitable
of the usage, or ``None``) is called instead of ``chat`` (``ScriptedModel`` has one that moves its
simulated cache and consumes no reply). Returns the generation's ``usage`` (``prompt_tokens``,
``cached_tokens``, ``completion_tokens``), or ``None`` where the model gave none.

Errors: the signal or the agent's ``Limits.timeout_s`` stopping it is ``abort``; an engine failure
is ``engine``. It is not a run: no events, no trace, no limits counted, and the conversation stays
as it was.
"""

from __future__ import annotations

import asyncio
import inspect
from contextlib import aclosing
from typing import TYPE_CHECKING, Any

from .abort import Abort
from .calls import StepInterrupted, until_aborted
from .errors import AerixError, describe
from .streams import iterate

if TYPE_CHECKING:
    from .agent import Agent

__all__ = ["prefill"]


async def prefill(agent: Agent, signal: Any = None) -> dict[str, int] | None:
    """``agent.prefill``: see the module docstring."""
    messages = agent.messages
    abort = Abort.following(signal)
    timeout = agent.limits.timeout_s
    timer = None if timeout is None else asyncio.get_running_loop().call_later(timeout, abort.abort, f"prefill ran past the agent's timeout_s ({timeout:g} s)")
    request = {"max_tokens": 1, "constraint": None, "signal": abort, "generation": dict(agent.generation), "time_left_s": timeout}
    try:
        return await _read(agent.model, messages, request, abort)
    finally:
        if timer is not None:
            timer.cancel()
        abort.close()


async def _read(model: Any, messages: list[dict[str, str]], request: dict[str, Any], abort: Abort) -> dict[str, int] | None:
    usage: dict[str, int] | None = None
    try:
        own = getattr(model, "prefill", None)
        if callable(own):
            got = own(messages, request)
            usage = await until_aborted(got if inspect.isawaitable(got) else _now(got), abort)
        else:
            usage = await _drain(model, messages, request, abort)
    except StepInterrupted:
        pass
    except AerixError:
        if not abort.aborted:
            raise
    except Exception as e:
        if not abort.aborted:
            raise AerixError("engine", f"engine failed: {describe(e)}") from e
    if abort.aborted:
        raise AerixError("abort", abort.reason or "prefill was aborted")
    return usage


async def _now(value: Any) -> Any:
    return value


async def _drain(model: Any, messages: list[dict[str, str]], request: dict[str, Any], abort: Abort) -> dict[str, int] | None:
    """One generation of the model's own ``chat``, its text discarded; the usage of its ``done``."""
    async with aclosing(iterate(model.chat(messages, request))) as deltas:
        while True:
            try:
                delta = await until_aborted(deltas.__anext__(), abort)
            except StopAsyncIteration:
                return None
            kind = delta.get("type") if isinstance(delta, dict) else None
            if kind == "done":
                usage = delta.get("usage")
                return dict(usage) if isinstance(usage, dict) else None
            if kind not in ("text", "logprobs"):
                raise AerixError("engine", f"engine failed: the model yielded {delta!r} out of protocol")
