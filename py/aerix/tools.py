"""A tool's life: its definition (three forms), its input check, its run, its result text.
(How a flat input's fields are read and checked is in ``fields.py``; a rich input, a JSON
Schema or nested types, in ``inputs.py``.)

Definitions are checked when made: a bad one raises ``AerixError(kind="options")`` at once.
At run time nothing a tool does ends the run: a failed input check or a throw becomes the
result ``error: <message>``, which the model sees and can act on.
"""

from __future__ import annotations

import copy
import inspect
import json
import re
from dataclasses import dataclass, field
from typing import Any, Callable

from .errors import AerixError, message_of
from .trust import TrustFlag, check_trust
from .fields import Field, nests_deeper, fields_from_function, fields_from_map, fields_from_model, flat_hint, function_params, json_type, model_for, model_is_flat, validation_text
from .inputs import RichInput, from_function, from_model, from_schema, is_json_schema, schema_of_map

__all__ = ["ContextKey", "Decision", "Field", "Tool", "ToolContext", "WaitingForApproval", "check_tools", "run_tool", "tool"]

RESULT_DEPTH = 100  # a tool's value nested deeper than this is an error result, not JSON
NAME = re.compile(r"^[a-z][a-z0-9_]{0,63}$")


@dataclass(frozen=True)
class Decision:
    """A human's answer to an approval; what ``await ctx.approve(...)`` returns."""

    approved: bool
    reason: str | None = None

    def __bool__(self) -> bool:
        return self.approved


class WaitingForApproval(BaseException):
    """Raised through a tool or hook by ``ctx.approve`` to pause a durable run.

    A ``BaseException`` so that the ``except Exception`` that turns a tool's failure into its
    result lets it pass, as it does ``asyncio.CancelledError``."""

    def __init__(self, approval: dict[str, Any]) -> None:
        super().__init__(approval["id"])
        self.approval = approval


@dataclass(frozen=True)
class ContextKey:
    """A name for a value the developer provides to tools and hooks (a client, a session):
    ``Agent(context={key: value})`` or ``agent.provide(key, value)``, read as ``ctx.get(key)``.
    Values are held by reference, never stored or serialised: a resumed run gets what the Agent
    that resumes it provides."""

    name: str

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise AerixError("options", f"ContextKey needs a non-empty name, got {self.name!r}")


@dataclass(frozen=True)
class ToolContext:
    """What a running tool gets besides its input: the call's ``signal`` (aborted when the run
    is aborted or times out, or the tool's own ``timeout_s`` passes), the ``call_id``, and the
    run's ``invoker`` (an :class:`aerix.Invoker`, or ``None``).

    In a durable run (an Agent with a store), ``await ctx.approve(title, body)`` asks a human:
    the run pauses in ``waiting`` and, once answered, the call runs again from its start and
    ``approve`` returns the :class:`Decision`.
    """

    signal: Any
    call_id: str
    tool: str
    approver: Callable[..., Any] | None = field(default=None, repr=False, compare=False)
    invoker: Any = None
    context: dict[ContextKey, Any] = field(default_factory=dict, repr=False, compare=False)
    state: Any = field(default=None, repr=False, compare=False)  # the agent's state (agent_state.py)
    artifacts: Any = field(default=None, repr=False, compare=False)  # the run's artifacts (artifacts.py)
    channels: Any = field(default=None, repr=False, compare=False)  # the agent's channels (channels.py)
    caller: Any = field(default=None, repr=False, compare=False)  # the call, as a run it starts sees it (calls.Caller, subagents.py)

    def get(self, key: ContextKey, default: Any = None) -> Any:
        """The value provided for ``key``, or ``default``."""
        return self.context.get(key, default)

    def get_or_fail(self, key: ContextKey) -> Any:
        """The value provided for ``key``; ``AerixError(kind="options")`` naming it if none was."""
        if key not in self.context:
            known = ", ".join(sorted(k.name for k in self.context)) or "none"
            raise AerixError("options", f"no value provided for context key {key.name!r} (provided: {known}); give the Agent context={{key: value}} or call agent.provide(key, value)")
        return self.context[key]

    async def approve(self, title: str, body: str | None = None, timeout_s: float = 86400) -> Any:
        if self.approver is None:
            raise AerixError("options", "approvals need a durable run: give the Agent a store")
        return await self.approver(title, body, timeout_s)


class Tool:
    """A defined tool. Build one with :func:`tool`; the Agent calls it through :func:`run_tool`.

    A flat input has its ``fields``; a rich one (``rich``: a JSON Schema, nested types) has
    none, and its schema is ``input_schema()``."""

    def __init__(
        self,
        name: str,
        description: str,
        fields: dict[str, Field],
        invoke: Callable[[dict[str, Any], ToolContext], Any],
        validator: Any = None,
        keep_unset: bool = True,
        effect: bool = False,
        effect_key: Callable[[dict[str, Any]], str] | None = None,
        already_applied: Callable[[str, dict[str, Any]], Any] | None = None,
        trust: dict[str, TrustFlag] | None = None,
        timeout_s: float | None = None,
        rich: RichInput | None = None,
        parallel: bool = False,
    ) -> None:
        self.name = name
        self.description = description
        self.fields = fields
        self._invoke = invoke
        self._validator = validator  # a pydantic model class, built lazily for field maps
        self._keep_unset = keep_unset
        self.effect = effect
        self.effect_key = effect_key
        self.already_applied = already_applied
        self.trust = check_trust(name, trust)
        self.timeout_s = timeout_s
        self.rich = rich
        self.parallel = parallel  # its calls may run together with other such calls (parallel.py)

    def __repr__(self) -> str:
        names = list(self.fields) if self.rich is None else list(self.rich.schema.get("properties", {}))
        return f"Tool(name={self.name!r}, fields={names})"

    def input_schema(self) -> dict[str, Any]:
        """The JSON Schema of this tool's input, closed: a flat one lists its fields' types and
        enums only; a rich one is its whole normalised schema (descriptions included)."""
        if self.rich is not None:
            return copy.deepcopy(self.rich.schema)  # a caller's change must not reach the tool's check
        return {
            "type": "object",
            "properties": {name: f.schema() for name, f in self.fields.items()},
            "required": [name for name, f in self.fields.items() if f.required],
            "additionalProperties": False,
        }

    def check(self, input: Any) -> dict[str, Any]:
        """The input, validated by pydantic; raises ``ValueError`` naming each bad field."""
        from pydantic import ValidationError

        if not isinstance(input, dict):
            raise ValueError(f"input must be an object, got {json_type(input)}")
        if self.rich is not None:
            return self.rich.check(input)
        if self._validator is None:
            self._validator = model_for(self.name, self.fields)
        try:
            checked = self._validator.model_validate(input, strict=True)
        except ValidationError as e:
            raise ValueError(validation_text(e)) from None
        dumped: dict[str, Any] = checked.model_dump(exclude_unset=not self._keep_unset)
        return dumped


async def run_tool(tool: Tool, input: Any, ctx: ToolContext) -> tuple[str, bool]:
    """Check the input, run the tool, and give back ``(text, error)``; never raises an Exception."""
    try:
        checked = tool.check(input)
    except ValueError as e:
        return f"error: invalid input for {tool.name}: {e}", True
    try:
        value = tool._invoke(checked, ctx)
        if inspect.isawaitable(value):
            value = await value
    except Exception as e:  # the tool's failure is the model's information, not the run's end
        return f"error: {_message(e)}", True
    if isinstance(value, str):
        return value, False
    if nests_deeper(value, RESULT_DEPTH):  # json.dumps would overflow the stack first in Pyodide
        return f"error: {tool.name} returned a value nested deeper than {RESULT_DEPTH} levels", True
    try:
        return json.dumps(value, ensure_ascii=False), False
    except Exception as e:  # TypeError, ValueError, RecursionError, or a default= that throws
        return f"error: {tool.name} returned a value that is not JSON: {_message(e)}", True


def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    input: Any = None,
    run: Callable[..., Any] | None = None,
    effect: bool = False,
    effect_key: Callable[[dict[str, Any]], str] | None = None,
    already_applied: Callable[[str, dict[str, Any]], Any] | None = None,
    trust: dict[str, TrustFlag] | None = None,
    timeout_s: float | None = None,
    parallel: bool = False,
) -> Any:
    """Define a tool.

    Three forms::

        weather = tool(name="weather", description="Forecast for a city.",
                       input={"city": {"type": "string", "required": True}},
                       run=lambda input, ctx: f"Sunny in {input['city']}")

        @tool
        def weather(city: str, unit: Literal["c", "f"] = "c") -> str:
            '''Forecast for a city.'''

        tool(name="weather", description="...", input=WeatherInput, run=...)  # a pydantic model

        tool(name="order", description="...", run=..., input={           # a JSON Schema
            "type": "object", "required": ["items"],
            "properties": {"items": {"type": "array", "items": {"type": "object", ...}}}})

    ``@tool(name=..., description=...)`` also works as a decorator with overrides. Nested
    types (``list[Item]``, a nested model, a ``TypedDict``, a dataclass, ``tuple[...]``, an
    ``Enum``, ``Field(ge=1)``) work in a model and in a function's parameters; a field map's
    entry may be any property schema plus ``required`` (see :mod:`aerix.inputs`).

    ``effect=True`` marks a tool with a side effect: in a durable run its result is recorded
    under an effect key (``effect_key(input)``, default ``<run id>:<tool>:<sha256 of input>``)
    and a resumed run reuses it instead of running the tool again. If the page died after the
    effect but before the record, ``already_applied(key, input)`` is asked first when given:
    a string (the result) or ``True`` means the effect happened. A throw is not recorded.

    ``trust={"taint": ..., "guard_when_tainted": ...}`` marks where results come from and which
    calls need a person once untrusted content is in the conversation (see :mod:`aerix.trust`).
    ``timeout_s``: a call still running after this many seconds is cancelled (its ``ctx.signal``
    aborted) and its result is ``error: timed out after N s``; the run goes on.
    ``parallel=True``: consecutive calls of such tools in a turn run together, their results fed
    back in the turn's order (:mod:`aerix.parallel`: which calls; events, approvals, checkpoints).
    """
    effects = _check_effect(name, effect, effect_key, already_applied)
    effects["parallel"] = _check_parallel(name, parallel, effect)
    effects["trust"] = check_trust(str(name), trust)
    if timeout_s is not None and (isinstance(timeout_s, bool) or not isinstance(timeout_s, (int, float)) or not timeout_s > 0):
        raise AerixError("options", f"tool {name!r}: timeout_s must be a number of seconds > 0 or None, got {timeout_s!r}")
    effects["timeout_s"] = timeout_s
    if fn is not None:
        if run is not None or input is not None:
            raise AerixError("options", "tool(fn) takes the input from fn's signature; do not pass input= or run=")
        return _from_function(fn, name=name, description=description, **effects)
    if run is None:
        if input is not None:
            raise AerixError("options", f"tool {name!r} has input= but no run=")
        return lambda f: _from_function(f, name=name, description=description, **effects)
    name = _check_name(name)
    description = _check_description(name, description)
    if not callable(run):
        raise AerixError("options", f"tool {name!r}: run must be callable, got {type(run).__name__}")
    invoke = _adapt_run(run)
    if input is not None and isinstance(input, type) and hasattr(input, "model_fields"):
        if not model_is_flat(input):
            return Tool(name, description, {}, invoke, rich=from_model(name, input), **effects)
        fields = fields_from_model(name, input)
        return Tool(name, description, fields, invoke, validator=input, keep_unset=True, **effects)
    schema = input if is_json_schema(input) else schema_of_map(name, input)
    if schema is not None:
        return Tool(name, description, {}, invoke, rich=from_schema(name, schema), **effects)
    fields = fields_from_map(name, {} if input is None else input)
    return Tool(name, description, fields, invoke, keep_unset=False, **effects)


def _check_effect(name: Any, effect: Any, effect_key: Any, already_applied: Any) -> dict[str, Any]:
    if not isinstance(effect, bool):
        raise AerixError("options", f"tool {name!r}: effect must be True or False, got {effect!r}")
    for what, fn in (("effect_key", effect_key), ("already_applied", already_applied)):
        if fn is not None and not callable(fn):
            raise AerixError("options", f"tool {name!r}: {what} must be callable")
        if fn is not None and not effect:
            raise AerixError("options", f"tool {name!r}: {what} only applies to effect=True tools")
    return {"effect": effect, "effect_key": effect_key, "already_applied": already_applied}


def _check_parallel(name: Any, parallel: Any, effect: bool) -> bool:
    if not isinstance(parallel, bool):
        raise AerixError("options", f"tool {name!r}: parallel must be True or False, got {parallel!r}")
    if parallel and effect:
        raise AerixError("options", f"tool {name!r}: parallel=True does not apply to effect=True tools (an effect runs alone, in turn order, and is recorded once)")
    return parallel


# -- checks ------------------------------------------------------------------------------


def check_tools(tools: Any) -> tuple[Tool, ...]:
    """An agent's tools, checked: a list of :class:`Tool`, their names unique."""
    if isinstance(tools, Tool) or not isinstance(tools, (list, tuple)):
        raise AerixError("options", f"tools must be a list of tools, got {type(tools).__name__}")
    seen: set[str] = set()
    for t in tools:
        if not isinstance(t, Tool):
            raise AerixError("options", f"tools must hold tools made with tool(), got {type(t).__name__}")
        if t.name in seen:
            raise AerixError("options", f"two tools are named {t.name!r}; tool names must be unique")
        seen.add(t.name)
    return tuple(tools)


def _check_name(name: Any) -> str:
    if not isinstance(name, str) or not NAME.fullmatch(name):
        raise AerixError("options", f"tool name {name!r} must match {NAME.pattern}")
    return name


def _check_description(name: str, description: Any) -> str:
    if not isinstance(description, str) or not description.strip():
        raise AerixError("options", f"tool {name!r} needs a non-empty description")
    return description.strip()


# -- running -----------------------------------------------------------------------------


def _from_function(fn: Callable[..., Any], *, name: str | None, description: str | None, **effects: Any) -> Tool:
    if not callable(fn):
        raise AerixError("options", f"@tool needs a function, got {type(fn).__name__}")
    name = _check_name(name or getattr(fn, "__name__", None))
    description = _check_description(name, description or inspect.getdoc(fn))
    params, _ = function_params(name, fn)
    rich = None
    if all(flat_hint(hint, default) for _, hint, default in params):
        fields, wants_ctx = fields_from_function(name, fn)
    else:
        (rich, wants_ctx), fields = from_function(name, fn), {}

    def invoke(input: dict[str, Any], ctx: ToolContext) -> Any:
        return fn(**input, ctx=ctx) if wants_ctx else fn(**input)

    return Tool(name, description, fields, invoke, keep_unset=True, rich=rich, **effects)


def _adapt_run(run: Callable[..., Any]) -> Callable[[dict[str, Any], ToolContext], Any]:
    """``run(input, ctx)``; a Python ``run(input)`` of one parameter is called without ctx."""
    try:
        params = inspect.signature(run).parameters.values()
    except (TypeError, ValueError):  # a JavaScript function: extra arguments are fine there
        return run
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if len(positional) == 1 and not any(p.kind == p.VAR_POSITIONAL for p in params):
        return lambda input, ctx: run(input)
    return run


def _message(e: BaseException) -> str:
    return message_of(e) or type(e).__name__
