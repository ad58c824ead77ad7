"""A tool's flat input: its fields from a field map, a typed function or a pydantic model, and
the pydantic model that checks an input against them.

A field is flat when it is a string, number, integer or boolean (``Optional`` of one, or an enum
of one: ``Literal[...]``), without constraints; :func:`flat_hint` and :func:`model_is_flat`
say which annotations are. An input with any other field is rich (``inputs.py``).
A bad field definition raises ``AerixError(kind="options")`` when the tool is defined.
"""

from __future__ import annotations

import inspect
import re
import typing
from dataclasses import dataclass
from typing import Any, Callable, Literal

from .errors import AerixError

__all__ = [
    "FIELD_KEYS", "FIELD_TYPES", "Field", "NO_DEFAULT", "fields_from_function", "fields_from_map", "fields_from_model",
    "flat_hint", "function_params", "json_type", "model_for", "model_is_flat", "nests_deeper", "validation_text",
]

FIELD_TYPES: dict[str, type] = {"string": str, "number": float, "integer": int, "boolean": bool}
_PY_TYPES = {str: "string", float: "number", int: "integer", bool: "boolean"}
FIELD_KEYS = frozenset({"type", "description", "required", "enum"})
NO_DEFAULT: Any = inspect.Parameter.empty


@dataclass(frozen=True)
class Field:
    """One input field: a JSON type, and optionally a description, required flag, enum and default."""

    type: str
    description: str | None = None
    required: bool = False
    enum: tuple[Any, ...] | None = None
    default: Any = NO_DEFAULT

    def schema(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.type}
        if self.enum is not None:
            out["enum"] = list(self.enum)
        return out


def fields_from_map(tool_name: str, spec: Any) -> dict[str, Field]:
    if not isinstance(spec, dict):
        raise AerixError(
            "options", f"tool {tool_name!r}: input must be a field map (dict) or a pydantic model, got {type(spec).__name__}"
        )
    fields: dict[str, Field] = {}
    for key, f in spec.items():
        where = f"tool {tool_name!r} field {key!r}"
        check_field_name(where, key)
        if not isinstance(f, dict):
            raise AerixError("options", f"{where} must be a dict like {{'type': 'string'}}, got {type(f).__name__}")
        unknown = sorted(set(f) - FIELD_KEYS)
        if unknown:
            raise AerixError("options", f"{where} has unknown key(s) {unknown}; known: {sorted(FIELD_KEYS)}")
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


def fields_from_function(tool_name: str, fn: Callable[..., Any]) -> tuple[dict[str, Field], bool]:
    """Fields from a typed function's parameters, and whether it takes ``ctx``."""
    params, wants_ctx = function_params(tool_name, fn)
    fields: dict[str, Field] = {}
    for name, hint, default in params:
        where = f"tool {tool_name!r} parameter {name!r}"
        kind, enum, desc, optional = _field_type(where, hint)
        if optional and default is NO_DEFAULT:
            raise AerixError("options", f"{where}: an optional type needs a default")
        fields[name] = Field(kind, desc, default is NO_DEFAULT, enum, default)
    return fields, wants_ctx


def function_params(tool_name: str, fn: Callable[..., Any]) -> tuple[list[tuple[str, Any, Any]], bool]:
    """A typed function's input parameters as ``(name, annotation, default)``, and whether it
    takes ``ctx``; a parameter that cannot be input is an options error."""
    try:
        hints = typing.get_type_hints(fn, include_extras=True)
    except Exception as e:
        raise AerixError("options", f"tool {tool_name!r}: cannot read the type hints: {e}") from None
    params: list[tuple[str, Any, Any]] = []
    wants_ctx = False
    for p in inspect.signature(fn).parameters.values():
        where = f"tool {tool_name!r} parameter {p.name!r}"
        if p.name == "ctx":
            wants_ctx = True
            continue
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD, p.POSITIONAL_ONLY):
            raise AerixError("options", f"{where}: only plain named parameters can be tool input")
        if p.name not in hints:
            raise AerixError("options", f"{where} needs a type annotation (str, int, float, bool, Literal[...], a list, a model...)")
        check_field_name(where, p.name)
        params.append((p.name, hints[p.name], p.default))
    return params, wants_ctx


def flat_hint(hint: Any, default: Any = NO_DEFAULT) -> bool:
    """Whether a parameter or model field of this annotation (and default) is a flat field."""
    from pydantic.fields import FieldInfo

    if isinstance(default, FieldInfo):
        return False
    if typing.get_origin(hint) is typing.Annotated:
        hint, *meta = typing.get_args(hint)
        if any(not isinstance(m, str) and not (isinstance(m, FieldInfo) and not m.metadata) for m in meta):
            return False  # a constraint (Field(ge=1), annotated_types.Len, ...) needs the rich form
    args = typing.get_args(hint)
    if type(None) in args and len(args) == 2:
        hint = next(a for a in args if a is not type(None))
    if isinstance(hint, type) and hint in _PY_TYPES:
        return True
    if typing.get_origin(hint) is Literal:
        kinds = {_PY_TYPES.get(type(v)) for v in typing.get_args(hint)}
        return len(kinds) == 1 and None not in kinds
    return False


def model_is_flat(model: Any) -> bool:
    """Whether every field of a pydantic model is flat (no constraint, no nesting)."""
    return all(flat_hint(info.annotation) and not info.metadata for info in model.model_fields.values())


def fields_from_model(tool_name: str, model: Any) -> dict[str, Field]:
    fields: dict[str, Field] = {}
    for key, info in model.model_fields.items():
        where = f"tool {tool_name!r} model field {key!r}"
        check_field_name(where, key)
        kind, enum, desc, _ = _field_type(where, info.annotation)
        default = NO_DEFAULT if info.is_required() else info.default
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


def check_field_name(where: str, key: Any) -> None:
    if not isinstance(key, str) or not re.fullmatch(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$", key):
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


def model_for(name: str, fields: dict[str, Field], *, nullable: bool = False) -> Any:
    """A strict pydantic model of the fields; an optional field left out is ``None`` unless it
    has a default. A tool's input (``nullable=False``) refuses an explicit ``null`` there, as its
    schema does; a state document (``nullable=True``) takes it, since its dump keeps a field left
    out as ``null`` and must read back."""
    from pydantic import ConfigDict, create_model

    defs: dict[str, Any] = {}
    for key, f in fields.items():
        py: Any = Literal[f.enum] if f.enum is not None else FIELD_TYPES[f.type]
        default = None if f.default is NO_DEFAULT else f.default
        if f.required:
            defs[key] = (py, ...)
        else:
            defs[key] = (py | None if nullable and default is None else py, default)
    # strict: the model's JSON must have the declared types ("3" is not an integer)
    config = ConfigDict(extra="forbid", strict=True)
    return create_model(f"{name}_input", __config__=config, **defs)


def validation_text(error: Any) -> str:
    parts = []
    for e in error.errors(include_url=False):
        loc = ".".join(str(x) for x in e["loc"]) or "input"
        parts.append(f"{loc}: {e['msg']}")
    return "; ".join(parts)


def json_type(value: Any) -> str:
    return {list: "an array", str: "a string", bool: "a boolean", int: "a number", float: "a number"}.get(
        type(value), "null" if value is None else type(value).__name__
    )


def nests_deeper(value: Any, limit: int) -> bool:
    """Whether lists, tuples and dicts in ``value`` nest deeper than ``limit``, without recursion."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (list, tuple, dict)):
            if depth > limit:
                return True
            stack.extend((v, depth + 1) for v in (item.values() if isinstance(item, dict) else item))
    return False
