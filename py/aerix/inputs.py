"""Rich tool inputs: an input given as a JSON Schema, or as a pydantic model or typed function
whose types nest, with its schema (what the engine decodes under) and its check (pydantic's).

    order = tool(name="order", description="Place an order.", run=place, input={
        "type": "object",
        "properties": {"items": {"type": "array", "minItems": 1, "items": {
            "type": "object",
            "properties": {"sku": {"type": "string"}, "qty": {"type": "integer", "minimum": 1}},
            "required": ["sku", "qty"]}}},
        "required": ["items"]})

A tool's ``input`` is read as (see ``tools.tool``):

- a JSON Schema, when it is a dict whose ``"type"`` is a string or list (or that has a
  ``"$ref"``): :func:`aerix.schema.normalise` checks it (strict: a keyword outside the subset
  is an options error naming it), inlines ``$ref``, closes every object; its top must be
  ``"type": "object"``; :mod:`aerix.input_types` makes the pydantic type that checks it;
- a field map whose entries are not all flat (``{"xs": {"type": "array", "items": {...}}}``):
  each entry is a property's JSON Schema plus ``required``, so it is the JSON Schema above;
- a pydantic model, or a function's parameters (``@tool``), with a type a flat field cannot
  hold (a list, a nested model, a ``TypedDict``, a dataclass, a tuple, an ``Enum``, a
  constraint such as ``Field(ge=1)``): the model's own JSON Schema (normalised, not strict,
  its generated titles dropped) is the schema, and the model checks the input.

A flat input (each field a string, number, integer or boolean, an enum of one of them, no
constraints) keeps its flat form (``fields.py``), byte for byte the same schema and system
message as before.

Every input is checked strictly (no ``"5"`` for ``5``) before the tool runs: a JSON Schema by
its pydantic type in Python mode (the run gets that plain JSON back, numbers as floats); a model
or function in JSON mode (so an ``Enum``, a tuple, a dataclass read from JSON), the run getting
``model_dump()`` (a model) or the parameters' values (a function). A bad input raises
``ValueError`` with ``<path>: <message>`` for each problem (at most :data:`MAX_ERRORS`),
the path written ``items[2].qty``.
"""

from __future__ import annotations

import json
import re
from typing import Any, Callable

from .errors import AerixError, describe
from .fields import FIELD_KEYS, FIELD_TYPES, NO_DEFAULT, check_field_name, function_params
from .input_types import input_type, options_of
from .schema import normalise

__all__ = ["MAX_ERRORS", "RichInput", "error_text", "from_function", "from_model", "from_schema", "is_json_schema", "schema_of_map"]

MAX_ERRORS = 10
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# keywords whose values are schemas (or maps or lists of them), where a "title" is one to drop
_ONE = {"items", "additionalProperties", "not", "contains", "propertyNames", "if", "then", "else", "additionalItems", "unevaluatedItems", "unevaluatedProperties"}
_MANY = {"anyOf", "oneOf", "allOf", "prefixItems"}
_NAMED = {"properties", "patternProperties", "dependentSchemas"}


class RichInput:
    """A rich input's JSON Schema (``schema``: normalised, closed, self-contained) and check."""

    def __init__(self, schema: dict[str, Any], check: Callable[[Any], dict[str, Any]]) -> None:
        self.schema = schema
        self._check = check

    def check(self, value: Any) -> dict[str, Any]:
        """The input the run gets; ``ValueError`` naming each problem's path."""
        return self._check(value)


def is_json_schema(spec: Any) -> bool:
    """Whether a tool's ``input`` dict is a JSON Schema rather than a field map (whose values
    are all dicts, so never a string ``type`` or ``$ref``)."""
    return isinstance(spec, dict) and (isinstance(spec.get("type"), (str, list)) or isinstance(spec.get("$ref"), str))


def schema_of_map(tool_name: str, spec: Any) -> dict[str, Any] | None:
    """A field map with an entry that is not flat, as the JSON Schema of an object; ``None``
    for a flat map (or something that is no map, which ``fields_from_map`` refuses)."""
    if not isinstance(spec, dict) or all(_flat_entry(e) for e in spec.values()):
        return None
    properties, required = {}, []
    for key, entry in spec.items():
        where = f"tool {tool_name!r} field {key!r}"
        check_field_name(where, key)
        if not isinstance(entry, dict):
            raise AerixError("options", f"{where} must be a dict like {{'type': 'string'}}, got {type(entry).__name__}")
        wanted = entry.get("required", False)
        if not isinstance(wanted, bool):
            raise AerixError("options", f"{where}: required must be true or false, got {wanted!r}")
        properties[key] = {k: v for k, v in entry.items() if k != "required"}
        if wanted:
            required.append(key)
    return {"type": "object", "properties": properties, "required": required}


def _flat_entry(entry: Any) -> bool:
    return not isinstance(entry, dict) or (entry.get("type") in FIELD_TYPES and set(entry) <= FIELD_KEYS)


def from_schema(tool_name: str, schema: dict[str, Any]) -> RichInput:
    """A JSON Schema input, checked and made into its pydantic check once, here."""
    from pydantic import TypeAdapter, ValidationError

    what = f"tool {tool_name!r} input"
    normal = normalise(schema, what)
    if normal.get("type") != "object":
        raise AerixError("options", f'{what}: a tool\'s input schema must be "type": "object", got {json.dumps(normal.get("type"))}')
    kind = input_type(normal, what)
    try:
        adapter = TypeAdapter(kind)
    except Exception as e:  # a bug of ours rather than the schema's: say so as an options error all the same
        raise AerixError("options", f"{what}: pydantic cannot check this schema: {describe(e)}") from None

    def check(value: Any) -> dict[str, Any]:
        try:
            checked: dict[str, Any] = adapter.validate_python(value, strict=True)
        except ValidationError as e:
            raise ValueError(error_text(e, normal)) from None
        return checked

    return RichInput(normal, check)


def from_model(tool_name: str, model: Any, values: Callable[[Any], dict[str, Any]] | None = None, what: str | None = None) -> RichInput:
    """A pydantic model input: its JSON Schema, and the model as the check; the run gets
    ``values(instance)`` (default: ``model_dump()``)."""
    from pydantic import ValidationError

    what = what or f"tool {tool_name!r} input model {model.__name__}"
    try:
        raw = model.model_json_schema()
    except Exception as e:
        raise AerixError("options", f"{what} has a type JSON Schema cannot express: {describe(e)}") from None
    schema = _untitled(normalise(raw, what, strict=False))
    dump = values or (lambda instance: instance.model_dump())

    def check(value: Any) -> dict[str, Any]:
        try:
            text = json.dumps(value, ensure_ascii=False, allow_nan=False)
        except (TypeError, ValueError) as e:
            raise ValueError(f"input is not JSON: {e}") from None
        try:
            instance = model.model_validate_json(text, strict=True)
        except ValidationError as e:
            raise ValueError(error_text(e, None)) from None
        return dump(instance)

    return RichInput(schema, check)


def from_function(tool_name: str, fn: Callable[..., Any]) -> tuple[RichInput, bool]:
    """A typed function's parameters as a model (``ctx`` left out), and whether it takes ``ctx``;
    the run gets each parameter's checked value (a nested model as that model)."""
    from pydantic import ConfigDict, create_model

    params, wants_ctx = function_params(tool_name, fn)
    defs = {name: (_described(hint), ... if default is NO_DEFAULT else default) for name, hint, default in params}
    try:
        # no protected namespaces: a parameter may be called model_name
        model = create_model(f"{tool_name}_input", __config__=ConfigDict(extra="forbid", protected_namespaces=()), **defs)  # type: ignore[call-overload]
    except Exception as e:
        raise AerixError("options", f"tool {tool_name!r}: its parameters' types cannot be checked: {describe(e)}") from None
    names = list(defs)
    rich = from_model(tool_name, model, lambda instance: {k: getattr(instance, k) for k in names}, f"tool {tool_name!r} parameters")
    return rich, wants_ctx


def _described(hint: Any) -> Any:
    """``Annotated[T, "text"]`` as ``Annotated[T, Field(description="text")]``, as a flat field reads it."""
    import typing

    from pydantic import Field

    if typing.get_origin(hint) is not typing.Annotated:
        return hint
    base, *meta = typing.get_args(hint)
    texts = [m for m in meta if isinstance(m, str)]
    if not texts:
        return hint
    return typing.Annotated[(base, *[m for m in meta if not isinstance(m, str)], Field(description=texts[0]))]


def _untitled(node: Any) -> Any:
    """A schema without its ``title`` annotations (pydantic writes one on every field)."""
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "title":
            continue
        if key in _ONE:
            out[key] = _untitled(value)
        elif key in _MANY and isinstance(value, list):
            out[key] = [_untitled(v) for v in value]
        elif key in _NAMED and isinstance(value, dict):
            out[key] = {name: _untitled(v) for name, v in value.items()}
        else:
            out[key] = value
    return out


def error_text(error: Any, schema: dict[str, Any] | None) -> str:
    """pydantic's errors as ``<path>: <message>``, joined by ``; ``. With the JSON Schema the
    type was built from, the union tags in a path are read as choices and left out."""
    problems = error.errors(include_url=False)
    parts = [f"{_path(e['loc'], schema)}: {e['msg']}" for e in problems[:MAX_ERRORS]]
    if len(problems) > MAX_ERRORS:
        parts.append(f"and {len(problems) - MAX_ERRORS} more")
    return "; ".join(parts)


def _path(loc: tuple[Any, ...], schema: dict[str, Any] | None) -> str:
    out, node = "", schema
    for part in loc:
        choices = options_of(node) if node is not None else None
        if choices is not None and isinstance(part, str) and part.isdigit() and int(part) < len(choices):
            node = choices[int(part)]  # a union's tag: which choice, not a step
            continue
        if isinstance(part, int):
            out += f"[{part}]"
            node = node.get("items") if node is not None else None
            continue
        out += (f".{part}" if out else part) if _NAME.fullmatch(str(part)) else f"[{json.dumps(str(part), ensure_ascii=False)}]"
        if node is not None:
            extra = node.get("additionalProperties")
            node = node.get("properties", {}).get(part, extra if isinstance(extra, dict) else None)
    return out or "input"

