"""How the system message shows a rich input: one line per field, nested fields indented under
theirs, in the words a flat field's line uses.

    - items (array of objects, required, 1 to 10 items): The order's lines
      - sku (string, required, matching ^[A-Z]{3}$)
      - qty (integer, required, >= 1)
    - note (string or null, at most 200 characters)

A line is ``- name (kind, required, constraints..., one of ..., default ...): description``.
The kind says the JSON type: ``array of integers``, ``string or null``, ``object with integers
as values``; an array's scalar items' constraints follow as ``each ...``. The fields of an
object, of an array's objects, or of the one object choice of an ``anyOf``, follow indented
two spaces; several object choices are shown one after another as ``shape 1:``, ``shape 2:``.
A description is kept on one line. Defaults of ``null`` are not shown (as for flat fields).
:func:`input_signature` says the same in JSON, for the compact layout (:mod:`aerix.turn_format`).
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["input_lines", "input_signature", "kind", "notes", "one_of"]

_PLURAL = {"string", "number", "integer", "boolean", "object", "array", "null"}


def input_lines(schema: dict[str, Any]) -> list[str]:
    """The lines that show a rich input's fields (empty for an input of no fields)."""
    if not schema.get("properties") and isinstance(schema.get("additionalProperties"), dict):
        return _field("(any name)", schema["additionalProperties"], False, 0)
    return _fields(schema, 0)


def _fields(node: dict[str, Any], depth: int) -> list[str]:
    required = node.get("required", [])
    lines: list[str] = []
    for name, sub in node.get("properties", {}).items():
        lines += _field(name, sub, name in required, depth)
    return lines


def _field(name: str, node: dict[str, Any], required: bool, depth: int) -> list[str]:
    words, text = _words(node, required)
    return [f"{'  ' * depth}- {name} ({words})" + (f": {text}" if text else ""), *_inner(node, depth + 1)]


def _words(node: dict[str, Any], required: bool, bare: bool = False) -> tuple[str, str]:
    """A field's kind, required and constraints, and its description on one line."""
    words = [kind(node), *(["required"] if required else []), *notes(node, bare)]
    text = node.get("description")
    return ", ".join(words), " ".join(text.split()) if isinstance(text, str) else ""


def input_signature(schema: dict[str, Any]) -> dict[str, Any]:
    """A rich input as the compact system message shows it, in JSON: each field's words (as its
    line has them, ``"integer, required, >= 1: How many"``, an enum of plain words unquoted); a
    field with fields inside is ``[its words, {its fields}]``, one object per shape."""
    if not schema.get("properties") and isinstance(schema.get("additionalProperties"), dict):
        return {"(any name)": _signature(schema["additionalProperties"], False)}
    required = schema.get("required", [])
    return {name: _signature(sub, name in required) for name, sub in schema.get("properties", {}).items()}


def _signature(node: dict[str, Any], required: bool) -> Any:
    words, text = _words(node, required, bare=True)
    said = f"{words}: {text}" if text else words
    shapes = _shapes(node)
    return [said, *(input_signature(s) for s in shapes)] if shapes else said


def _inner(node: dict[str, Any], depth: int) -> list[str]:
    """The lines under a field: its object's fields, found through arrays and choices."""
    shapes = _shapes(node)
    if len(shapes) == 1:
        return _fields(shapes[0], depth)
    lines: list[str] = []
    for i, shape in enumerate(shapes, 1):
        lines.append(f"{'  ' * depth}shape {i}:")
        lines += _fields(shape, depth + 1)
    return lines


def _shapes(node: dict[str, Any]) -> list[dict[str, Any]]:
    """The objects with fields that a node's value is, or holds (through items and choices)."""
    if node.get("properties"):
        return [node]
    if isinstance(node.get("items"), dict):
        return _shapes(node["items"])
    if isinstance(node.get("additionalProperties"), dict):
        return _shapes(node["additionalProperties"])
    return [s for choice in node.get("anyOf", []) for s in _shapes(choice)]


def kind(node: dict[str, Any]) -> str:
    """The JSON type of a node's values, in words."""
    if "anyOf" in node:
        return " or ".join(dict.fromkeys(kind(c) for c in node["anyOf"]))
    kinds = node.get("type")
    if isinstance(kinds, list):
        return " or ".join(kind({**node, "type": k}) for k in kinds)
    if kinds == "array":
        if isinstance(node.get("prefixItems"), list):
            return f"array [{', '.join(kind(p) for p in node['prefixItems'])}]"
        return f"array of {_plural(kind(node['items']))}" if isinstance(node.get("items"), dict) and node["items"] else "array"
    if kinds == "object":
        extra = node.get("additionalProperties")
        if isinstance(extra, dict) and not node.get("properties"):
            return f"object with {_plural(kind(extra))} as values"
        return "object with any keys" if extra is True and not node.get("properties") else "object"
    if isinstance(kinds, str):
        return kinds
    values = node.get("enum", [node["const"]] if "const" in node else None)
    if isinstance(values, list):
        return " or ".join(dict.fromkeys(_json_kind(v) for v in values))
    return "any value"


def notes(node: dict[str, Any], bare: bool = False) -> list[str]:
    """A node's constraints in words, then its enum or constant, then its default; with
    ``bare``, an enum of plain words without their quotes (:func:`one_of`)."""
    out = _counts(node.get("minLength"), node.get("maxLength"), "character")
    if "pattern" in node:
        out.append(f"matching {node['pattern']}")
    if "format" in node:
        out.append(f"format {node['format']}")
    for key, sign in (("minimum", ">="), ("exclusiveMinimum", ">"), ("maximum", "<="), ("exclusiveMaximum", "<")):
        if key in node:
            out.append(f"{sign} {_json(node[key])}")
    if "multipleOf" in node:
        out.append(f"multiple of {_json(node['multipleOf'])}")
    out += _counts(node.get("minItems"), node.get("maxItems"), "item") if not isinstance(node.get("prefixItems"), list) else []
    if node.get("uniqueItems") is True:
        out.append("no repeats")
    items = node.get("items")
    if isinstance(items, dict) and not _shapes(items):
        out += [f"each {n}" for n in notes(items, bare)]
    for choice in node.get("anyOf", []):
        out += [n for n in notes(choice, bare) if n not in out]
    if "enum" in node:
        out.append(one_of(node["enum"], bare))
    if "const" in node:
        out.append(f"always {_json(node['const'])}")
    if node.get("default") is not None:
        out.append(f"default {_json(node['default'])}")
    return out


_WORD = re.compile(r"[^\s,\"\\][^,\"\\]*(?<!\s)")


def one_of(values: list[Any], bare: bool = False) -> str:
    """``one of "a", "b"``; with ``bare`` and only strings without a comma, quote or backslash
    (nor space at either end), ``one of a, b``: a JSON string holding it escapes no quotes."""
    if bare and all(isinstance(v, str) and _WORD.fullmatch(v) for v in values):
        return "one of " + ", ".join(values)
    return "one of " + ", ".join(_json(v) for v in values)


def _counts(low: Any, high: Any, what: str) -> list[str]:
    if low is None and high is None:
        return []
    if low is not None and high is not None:
        return [f"exactly {low} {what}{'s' if low != 1 else ''}" if low == high else f"{low} to {high} {what}s"]
    if low is not None:
        return [f"at least {low} {what}{'s' if low != 1 else ''}"] if low else []
    return [f"at most {high} {what}{'s' if high != 1 else ''}"]


def _plural(words: str) -> str:
    if words in _PLURAL:
        return words + "s"
    head, _, rest = words.partition(" ")
    if head in _PLURAL and not rest.startswith("or "):
        return f"{head}s {rest}"
    return f"({words})"


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _json_kind(value: Any) -> str:
    names: dict[type, str] = {type(None): "null", bool: "boolean", int: "integer", float: "number", str: "string", list: "array", dict: "object"}
    return names.get(type(value), "value")
