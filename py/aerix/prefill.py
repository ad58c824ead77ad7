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

import inspect
from typing import TYPE_CHECKING, Any

from .abort import Abort
from .calls import until_aborted
from .streams import aside, read_aside

if TYPE_CHECKING:
    from .agent import Agent

__all__ = ["prefill"]


async def prefill(agent: Agent, signal: Any = None) -> dict[str, int] | None:
    """``agent.prefill``: see the module docstring."""
    messages, model, timeout = agent.messages, agent.model, agent.limits.timeout_s

    async def read(abort: Abort) -> Any:
        request = {"max_tokens": 1, "constraint": None, "signal": abort, "generation": dict(agent.generation), "time_left_s": timeout}
        own = getattr(model, "prefill", None)
        if callable(own):
            return await until_aborted(_awaited(own(messages, request)), abort)
        _, done = await read_aside(model, messages, request, abort)
        return None if done is None else done.get("usage")

    usage = await aside(read, signal, timeout, "prefill")
    return dict(usage) if isinstance(usage, dict) else None


async def _awaited(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value
