"""A tool's life: its definition (three forms), its input check, its run, its result text.

Definitions are checked when made: a bad one raises ``AerixError(kind="options")`` at once.
At run time nothing a tool does ends the run: a failed input check or a throw becomes the
result ``error: <message>``, which the model sees and can act on.
"""

from __future__ import annotations

import inspect
import json
import re
import typing
from dataclasses import dataclass, field
from typing import Any, Callable, Literal

from .errors import AerixError

__all__ = ["Decision", "Field", "Tool", "ToolContext", "WaitingForApproval", "run_tool", "tool"]

RESULT_DEPTH = 100  # a tool's value nested deeper than this is an error result, not JSON
NAME = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
FIELD_TYPES: dict[str, type] = {"string": str, "number": float, "integer": int, "boolean": bool}
_PY_TYPES = {str: "string", float: "number", int: "integer", bool: "boolean"}
_FIELD_KEYS = {"type", "description", "required", "enum"}
_NO_DEFAULT: Any = inspect.Parameter.empty


@dataclass(frozen=True)
class Field:
    """One input field: a JSON type, and optionally a description, required flag, enum and default."""

    type: str
    description: str | None = None
    required: bool = False
    enum: tuple[Any, ...] | None = None
    default: Any = _NO_DEFAULT

    def schema(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.type}
        if self.enum is not None:
            out["enum"] = list(self.enum)
        return out


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
class ToolContext:
    """What a running tool gets besides its input: the run's ``signal`` and the ``call_id``.

    In a durable run (an Agent with a store), ``await ctx.approve(title, body)`` asks a human:
    the run pauses in ``waiting`` and, once answered, the call runs again from its start and
    ``approve`` returns the :class:`Decision`.
    """

    signal: Any
    call_id: str
    tool: str
    approver: Callable[..., Any] | None = field(default=None, repr=False, compare=False)

    async def approve(self, title: str, body: str | None = None, timeout_s: float = 86400) -> Any:
        if self.approver is None:
            raise AerixError("options", "approvals need a durable run: give the Agent a store")
        return await self.approver(title, body, timeout_s)


class Tool:
    """A defined tool. Build one with :func:`tool`; the Agent calls it through :func:`run_tool`."""

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

    def __repr__(self) -> str:
        return f"Tool(name={self.name!r}, fields={list(self.fields)})"

    def input_schema(self) -> dict[str, Any]:
        """The JSON Schema of this tool's input: flat, closed, required fields listed."""
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
            raise ValueError(f"input must be an object, got {_json_type(input)}")
        if self._validator is None:
            self._validator = _model_for(self.name, self.fields)
        try:
            checked = self._validator.model_validate(input)
        except ValidationError as e:
            raise ValueError(_describe(e)) from None
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
    if _nests_deeper(value, RESULT_DEPTH):  # json.dumps would overflow the stack first in Pyodide
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

    ``@tool(name=..., description=...)`` also works as a decorator with overrides.

    ``effect=True`` marks a tool with a side effect: in a durable run its result is recorded
    under an effect key (``effect_key(input)``, default ``<run id>:<tool>:<sha256 of input>``)
    and a resumed run reuses it instead of running the tool again. If the page died after the
    effect but before the record, ``already_applied(key, input)`` is asked first when given:
    a string (the result) or ``True`` means the effect happened. A throw is not recorded.
    """
    effects = _check_effect(name, effect, effect_key, already_applied)
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
        fields = _fields_from_model(name, input)
        return Tool(name, description, fields, invoke, validator=input, keep_unset=True, **effects)
    fields = _fields_from_map(name, {} if input is None else input)
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


# -- the three ways to describe fields ----------------------------------------------------


def _fields_from_map(tool_name: str, spec: Any) -> dict[str, Field]:
    if not isinstance(spec, dict):
        raise AerixError(
            "options", f"tool {tool_name!r}: input must be a field map (dict) or a pydantic model, got {type(spec).__name__}"
        )
    fields: dict[str, Field] = {}
    for key, f in spec.items():
        where = f"tool {tool_name!r} field {key!r}"
        _check_field_name(where, key)
        if not isinstance(f, dict):
            raise AerixError("options", f"{where} must be a dict like {{'type': 'string'}}, got {type(f).__name__}")
        unknown = sorted(set(f) - _FIELD_KEYS)
        if unknown:
            raise AerixError("options", f"{where} has unknown key(s) {unknown}; known: {sorted(_FIELD_KEYS)}")
        kind = f.get("type")
        if kind not in FIELD_TYPES:
            raise AerixError("options", f"{where}: type must be one of {sorted(FIELD_TYPES)}, got {kind!r}")
        desc = f.get("description")
        if desc is not None and not isinstance(desc, str):
            raise AerixError("options", f"{where}: description must be a string")
        required = f.get("required", False)
        if not isinstance(required, bool):
            raise AerixError("options", f"{where}: required must be true or false, got {required!r}")
        enum = _check_enum(where, kind, f.get("enum"))
        fields[key] = Field(kind, desc, required, enum)
    return fields


def _fields_from_function(tool_name: str, fn: Callable[..., Any]) -> tuple[dict[str, Field], bool]:
    """Fields from a typed function's parameters, and whether it takes ``ctx``."""
    try:
        hints = typing.get_type_hints(fn, include_extras=True)
    except Exception as e:
        raise AerixError("options", f"tool {tool_name!r}: cannot read the type hints: {e}") from None
    fields: dict[str, Field] = {}
    wants_ctx = False
    for p in inspect.signature(fn).parameters.values():
        where = f"tool {tool_name!r} parameter {p.name!r}"
        if p.name == "ctx":
            wants_ctx = True
            continue
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD, p.POSITIONAL_ONLY):
            raise AerixError("options", f"{where}: only plain named parameters can be tool input")
        if p.name not in hints:
            raise AerixError("options", f"{where} needs a type annotation (str, int, float, bool or Literal[...])")
        _check_field_name(where, p.name)
        kind, enum, desc, optional = _field_type(where, hints[p.name])
        if optional and p.default is _NO_DEFAULT:
            raise AerixError("options", f"{where}: an optional type needs a default")
        fields[p.name] = Field(kind, desc, p.default is _NO_DEFAULT, enum, p.default)
    return fields, wants_ctx


def _fields_from_model(tool_name: str, model: Any) -> dict[str, Field]:
    fields: dict[str, Field] = {}
    for key, info in model.model_fields.items():
        where = f"tool {tool_name!r} model field {key!r}"
        _check_field_name(where, key)
        kind, enum, desc, _ = _field_type(where, info.annotation)
        default = _NO_DEFAULT if info.is_required() else info.default
        fields[key] = Field(kind, info.description or desc, info.is_required(), enum, default)
    return fields


def _field_type(where: str, hint: Any) -> tuple[str, tuple[Any, ...] | None, str | None, bool]:
    """``(json type, enum, description, optional)`` of an annotation, or an options error."""
    desc = None
    if typing.get_origin(hint) is typing.Annotated:
        hint, *meta = typing.get_args(hint)
        for m in meta:
            if isinstance(m, str):
                desc = m
            elif getattr(m, "description", None):
                desc = m.description
    optional = False
    args = typing.get_args(hint)
    if type(None) in args and len(args) == 2:  # Optional[T] / T | None
        hint = next(a for a in args if a is not type(None))
        optional = True
    if hint in _PY_TYPES:
        return _PY_TYPES[hint], None, desc, optional
    if typing.get_origin(hint) is Literal:
        values = typing.get_args(hint)
        kinds = {_PY_TYPES.get(type(v)) for v in values}
        if len(kinds) != 1 or None in kinds:
            raise AerixError("options", f"{where}: Literal values must all be str, int, float or bool")
        return kinds.pop(), tuple(values), desc, optional  # type: ignore[return-value]
    raise AerixError("options", f"{where}: type {hint!r} is not allowed; use str, int, float, bool or Literal[...]")


# -- checks ------------------------------------------------------------------------------


def _check_name(name: Any) -> str:
    if not isinstance(name, str) or not NAME.match(name):
        raise AerixError("options", f"tool name {name!r} must match {NAME.pattern}")
    return name


def _check_description(name: str, description: Any) -> str:
    if not isinstance(description, str) or not description.strip():
        raise AerixError("options", f"tool {name!r} needs a non-empty description")
    return description.strip()


def _check_field_name(where: str, key: Any) -> None:
    if not isinstance(key, str) or not re.match(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$", key):
        raise AerixError("options", f"{where}: a field name must be an identifier of at most 64 characters")


def _check_enum(where: str, kind: str, enum: Any) -> tuple[Any, ...] | None:
    if enum is None:
        return None
    if not isinstance(enum, (list, tuple)) or not enum:
        raise AerixError("options", f"{where}: enum must be a non-empty list")
    py = FIELD_TYPES[kind]
    for v in enum:
        ok = isinstance(v, py) and not (isinstance(v, bool) and py is not bool)
        if kind == "number":
            ok = isinstance(v, (int, float)) and not isinstance(v, bool)
        if not ok:
            raise AerixError("options", f"{where}: enum value {v!r} is not a {kind}")
    if len(set(enum)) != len(enum):
        raise AerixError("options", f"{where}: enum values repeat")
    return tuple(enum)


# -- running -----------------------------------------------------------------------------


def _from_function(fn: Callable[..., Any], *, name: str | None, description: str | None, **effects: Any) -> Tool:
    if not callable(fn):
        raise AerixError("options", f"@tool needs a function, got {type(fn).__name__}")
    name = _check_name(name or getattr(fn, "__name__", None))
    description = _check_description(name, description or inspect.getdoc(fn))
    fields, wants_ctx = _fields_from_function(name, fn)

    def invoke(input: dict[str, Any], ctx: ToolContext) -> Any:
        return fn(**input, ctx=ctx) if wants_ctx else fn(**input)

    return Tool(name, description, fields, invoke, keep_unset=True, **effects)


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


def _model_for(name: str, fields: dict[str, Field]) -> Any:
    from pydantic import ConfigDict, create_model

    defs: dict[str, Any] = {}
    for key, f in fields.items():
        py: Any = Literal[f.enum] if f.enum is not None else FIELD_TYPES[f.type]
        if f.required:
            defs[key] = (py, ...)
        else:
            defs[key] = (py, None if f.default is _NO_DEFAULT else f.default)
    # strict: the model's JSON must have the declared types ("3" is not an integer)
    config = ConfigDict(extra="forbid", strict=True)
    return create_model(f"{name}_input", __config__=config, **defs)


def _describe(error: Any) -> str:
    parts = []
    for e in error.errors(include_url=False):
        loc = ".".join(str(x) for x in e["loc"]) or "input"
        parts.append(f"{loc}: {e['msg']}")
    return "; ".join(parts)


def _nests_deeper(value: Any, limit: int) -> bool:
    """Whether lists, tuples and dicts in ``value`` nest deeper than ``limit``, without recursion."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (list, tuple, dict)):
            if depth > limit:
                return True
            stack.extend((v, depth + 1) for v in (item.values() if isinstance(item, dict) else item))
    return False


def _json_type(value: Any) -> str:
    return {list: "an array", str: "a string", bool: "a boolean", int: "a number", float: "a number"}.get(
        type(value), "null" if value is None else type(value).__name__
    )


def _message(e: BaseException) -> str:
    text = str(e).strip()
    return text if text else type(e).__name__
