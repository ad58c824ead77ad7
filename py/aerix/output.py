"""Structured output: the shape a final answer must have.

``Agent(output=Model)`` (a pydantic model) or ``Agent(output={...})`` (a JSON Schema): the final
branch of the turn schema becomes ``{"thought", "final": <that schema>}``, so a constrained
engine decodes the answer under it; the system message shows the schema; the answer is
validated (pydantic for a model, the JSON Schema subset below for a dict) and a failing one is
refused and retried like any bad turn. ``answer.output`` is the model instance (or the dict);
the ``final`` event carries ``output`` as plain JSON and ``text`` as that JSON, written out.

The schema sent to the engine is closed and self-contained: ``$ref``s into ``$defs`` are inlined
(a recursive model is refused) and every object gets ``additionalProperties: false``. A JSON
Schema given as a dict may use ``type``, ``properties``, ``required``, ``additionalProperties``,
``items``, ``enum``, ``const``, ``anyOf``, ``minItems``, ``maxItems`` and the annotations
``title``, ``description``, ``default``, ``examples``; anything else is refused when the Agent is
built, since the answer could not be checked against it.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from .errors import AerixError, describe

__all__ = ["Output"]

_CHECKED = {"type", "properties", "required", "additionalProperties", "items", "enum", "const", "anyOf", "minItems", "maxItems"}
_ANNOTATIONS = {"title", "description", "default", "examples", "$defs", "$ref"}
_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "number": (int, float),
    "integer": (int,),
    "boolean": (bool,),
    "object": (dict,),
    "array": (list,),
    "null": (type(None),),
}


class Output:
    """The shape of a final answer (see the module docstring)."""

    def __init__(self, model: Any, schema: dict[str, Any]) -> None:
        self.model = model  # a pydantic model class, or None for a plain JSON Schema
        self.schema = schema

    @classmethod
    def of(cls, value: Any) -> Output | None:
        """An ``Output`` from a pydantic model class, a JSON Schema dict, or ``None``."""
        if value is None:
            return None
        if isinstance(value, type) and hasattr(value, "model_json_schema"):
            try:
                raw = value.model_json_schema()
            except Exception as e:
                raise AerixError("options", f"output model {value.__name__} has a type JSON Schema cannot express: {describe(e)}") from None
            return cls(value, _closed(_inlined(raw, raw.get("$defs", {}), ()), value.__name__))
        if isinstance(value, dict):
            _check_subset(value, "output")
            return cls(None, _closed(_inlined(copy.deepcopy(value), value.get("$defs", {}), ()), "output"))
        raise AerixError("options", f"output must be a pydantic model class or a JSON Schema dict, got {type(value).__name__}")

    def check(self, value: Any) -> tuple[Any, Any]:
        """``(the answer as the developer gets it, as plain JSON)``; ``ValueError`` saying why not."""
        if self.model is not None:
            from pydantic import ValidationError

            try:
                instance = self.model.model_validate(value)
            except ValidationError as e:
                raise ValueError("; ".join(f"{'.'.join(map(str, err['loc'])) or 'final'}: {err['msg']}" for err in e.errors())) from None
            return instance, instance.model_dump(mode="json")
        _validate(value, self.schema, "final")
        return value, value

    def revive(self, plain: Any) -> Any:
        """The developer's value from its plain JSON (a model instance again, for a model)."""
        return plain if self.model is None else self.model.model_validate(plain)

    def text(self) -> str:
        """The schema as the system message shows it."""
        return json.dumps(self.schema, ensure_ascii=False, sort_keys=False)


def _inlined(node: Any, defs: dict[str, Any], seen: tuple[str, ...]) -> Any:
    if isinstance(node, list):
        return [_inlined(v, defs, seen) for v in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str):
        name = ref.rsplit("/", 1)[-1]
        if not ref.startswith("#/$defs/") or name not in defs:
            raise AerixError("options", f"output schema: cannot resolve $ref {ref!r} (only #/$defs/... inside the schema)")
        if name in seen:
            raise AerixError("options", f"output schema: {name!r} refers to itself; a recursive answer cannot be decoded")
        return _inlined(defs[name], defs, seen + (name,))
    return {k: _inlined(v, defs, seen) for k, v in node.items() if k != "$defs"}


def _closed(schema: Any, name: str) -> dict[str, Any]:
    if not isinstance(schema, dict):
        raise AerixError("options", f"{name}: the output schema must be an object")

    def close(node: Any) -> Any:
        if isinstance(node, list):
            return [close(v) for v in node]
        if not isinstance(node, dict):
            return node
        out = {k: close(v) for k, v in node.items()}
        if out.get("type") == "object" and "additionalProperties" not in out:
            out["additionalProperties"] = False
        return out

    closed: dict[str, Any] = close(schema)
    return closed


def _check_subset(node: Any, where: str) -> None:
    if isinstance(node, list):
        for i, v in enumerate(node):
            _check_subset(v, f"{where}[{i}]")
        return
    if not isinstance(node, dict):
        return
    unknown = sorted(set(node) - _CHECKED - _ANNOTATIONS)
    if unknown:
        raise AerixError("options", f"{where}: unsupported JSON Schema keyword(s) {unknown}; supported: {sorted(_CHECKED)}")
    for key, value in node.items():
        if key in ("properties", "$defs") and isinstance(value, dict):
            for name, sub in value.items():
                _check_subset(sub, f"{where}.{key}.{name}")
        elif key in ("items", "anyOf", "additionalProperties"):
            _check_subset(value, f"{where}.{key}")


def _validate(value: Any, schema: dict[str, Any], at: str) -> None:
    """Check ``value`` against the supported subset; ``ValueError`` naming the place."""
    if "anyOf" in schema:
        errors = []
        for option in schema["anyOf"]:
            try:
                _validate(value, option, at)
                break
            except ValueError as e:
                errors.append(str(e))
        else:
            raise ValueError(f"{at}: matches none of the choices ({'; '.join(errors)})")
    kinds = schema.get("type")
    if kinds is not None:
        allowed = [kinds] if isinstance(kinds, str) else list(kinds)
        ok = any(isinstance(value, _TYPES.get(k, ())) and not (k in ("number", "integer") and isinstance(value, bool)) for k in allowed)
        if not ok:
            raise ValueError(f"{at}: expected {' or '.join(allowed)}, got {type(value).__name__}")
    if "const" in schema and value != schema["const"]:
        raise ValueError(f"{at}: must be {schema['const']!r}")
    if "enum" in schema and value not in schema["enum"]:
        raise ValueError(f"{at}: must be one of {schema['enum']!r}")
    if isinstance(value, dict):
        props = schema.get("properties", {})
        for name in schema.get("required", []):
            if name not in value:
                raise ValueError(f"{at}.{name}: missing")
        for name, item in value.items():
            if name in props:
                _validate(item, props[name], f"{at}.{name}")
            elif schema.get("additionalProperties") is False:
                raise ValueError(f"{at}.{name}: not allowed")
    if isinstance(value, list):
        if len(value) < schema.get("minItems", 0) or len(value) > schema.get("maxItems", len(value)):
            raise ValueError(f"{at}: {len(value)} items is out of range")
        if isinstance(schema.get("items"), dict):
            for i, item in enumerate(value):
                _validate(item, schema["items"], f"{at}[{i}]")
