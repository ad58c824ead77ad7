"""JSON Schema, checked and normalised: the subset the engine's grammar holds.

    schema = normalise({"type": "object", "properties": {...}}, "output schema")
    validate(answer, schema, "final")          # ValueError "final.city: expected string, got integer"

:func:`normalise` checks a schema once, when it is given (an ``Agent(output=...)``, later a
tool's input), and returns it self-contained and closed: each ``$ref`` to ``#/$defs/<name>`` is
replaced by a copy of that definition (a definition that reaches itself is refused: a recursive
answer cannot be decoded), ``$defs`` is dropped, and an object schema (``"type": "object"``)
(or a list of types with ``"object"`` in it) without ``additionalProperties`` gets
``additionalProperties: false``. Anything wrong is
``AerixError("options", ...)`` naming the JSON path of the bad keyword::

    output schema: properties.city.type: 'strnig' is not a JSON Schema type

The subset, each keyword's value checked:

- ``type``: one of ``string number integer boolean object array null``, or a non-empty list of
  them without repeats;
- ``properties``: an object of schemas; ``required``: a list of distinct property names, each
  one of ``properties``; ``additionalProperties``: a boolean or a schema;
- ``items``: a schema (the list form is refused); ``minItems``, ``maxItems``, ``minLength``,
  ``maxLength``: integers >= 0, a minimum no more than its maximum;
- ``pattern``: a regular expression in the subset the engine's grammar holds
  (:mod:`aerix.patterns`: anchored ``^...$``, no ``\\d``, ...); checked in both modes, since a
  pattern the grammar cannot read fails every request;
- ``minimum``, ``maximum``, ``exclusiveMinimum``, ``exclusiveMaximum``: finite numbers;
- ``enum``: a non-empty list of JSON values; ``const``: a JSON value;
- ``anyOf``, ``oneOf``: non-empty lists of schemas;
- ``$defs`` (at the top only): an object of schemas; ``$ref``: ``#/$defs/<name>`` of one of them,
  beside it only annotations;
- annotations: ``title`` and ``description`` (strings), ``default`` (a JSON value), ``examples``
  (a list of JSON values).

With ``strict`` (a schema a developer wrote) any other keyword is refused, since an answer
could not be checked against it. Without (a pydantic model's generated schema, which pydantic
checks the answer against) other keywords are kept, their values checked as JSON, and those
that hold schemas (``prefixItems``, ``allOf``, ``not``, ...) walked so that the references
(``$ref``) in them are inlined too; only OpenAPI's ``discriminator`` is dropped, since it names
definitions by reference.

Bounds, so that a schema is refused fast rather than crash or hang: at most :data:`MAX_DEPTH`
(32) levels of nesting, schemas and the JSON values in them together, counted after inlining;
at most :data:`MAX_NODES` (5,000) schemas and values after inlining, each ``$ref`` copy counted
(a 2^20 fan-out of references is refused after 5,000, in milliseconds); at most
:data:`MAX_CHARS` (200,000) characters of text in its strings and names.

:func:`validate` checks an answer against a schema :func:`normalise` made in strict mode: every
keyword of the subset is checked (``enum`` and ``const`` compare as JSON, so ``true`` is not
``1``); the grammar of a constrained engine holds most of them already, the rest (a number's
bounds) are caught here and refused, and the model tries again.
"""

from __future__ import annotations

import math
import operator
import re
from typing import Any, Callable, NoReturn

from .errors import AerixError
from .patterns import pattern_problem

__all__ = ["MAX_CHARS", "MAX_DEPTH", "MAX_NODES", "TYPES", "normalise", "validate"]

MAX_DEPTH = 32
MAX_NODES = 5_000
MAX_CHARS = 200_000
TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "number": (int, float),
    "integer": (int,),
    "boolean": (bool,),
    "object": (dict,),
    "array": (list,),
    "null": (type(None),),
}
ANNOTATIONS = ("title", "description", "default", "examples")
_DEFS = "#/$defs/"
# keywords outside the subset whose values are schemas: kept and walked without ``strict``
_ONE_SCHEMA = {"not", "contains", "propertyNames", "if", "then", "else", "unevaluatedItems", "unevaluatedProperties", "additionalItems"}
_SCHEMA_LISTS = {"allOf", "prefixItems"}
_SCHEMA_MAPS = {"patternProperties", "dependentSchemas"}


def normalise(schema: Any, what: str, *, strict: bool = True) -> dict[str, Any]:
    """``schema`` checked, its references inlined, its objects closed (see the module
    docstring); ``what`` starts each error message (``"output schema"``)."""
    if not isinstance(schema, dict):
        raise AerixError("options", f"{what}: a schema must be an object, got {_kind(schema)}")
    defs = schema.get("$defs", {})
    walk = _Walk(what, defs, strict)
    if not isinstance(defs, dict):
        walk.fail("$defs", f"must be an object of schemas, got {_kind(defs)}")
    out = walk.schema(schema, "", 1, ())
    for name in defs:  # a definition no $ref reaches is checked all the same
        if name not in walk.reached:
            walk.schema(defs[name], f"$defs.{name}", 1, (name,))
    return out


class _Walk:
    """One normalisation: the definitions, the budget spent, the definitions reached."""

    def __init__(self, what: str, defs: dict[Any, Any], strict: bool) -> None:
        self.what, self.defs, self.strict = what, defs, strict
        self.nodes = self.chars = 0
        self.reached: set[str] = set()

    def fail(self, at: str, message: str) -> NoReturn:
        at = at if len(at) <= 160 else f"{at[:60]}...{at[-90:]}"  # a path as deep as the bound allows
        raise AerixError("options", f"{self.what}: {at}: {message}" if at else f"{self.what}: {message}")

    def spend(self, at: str, depth: int, chars: int = 0) -> None:
        """One schema or value more, ``depth`` levels down, and ``chars`` of text."""
        self.nodes += 1
        if depth > MAX_DEPTH:
            self.fail(at, f"nests deeper than {MAX_DEPTH} levels")
        if self.nodes > MAX_NODES:
            self.fail(at, f"the schema expands past {MAX_NODES} schemas and values (each $ref copy counted)")
        self.text(at, chars)

    def text(self, at: str, chars: int) -> None:
        self.chars += chars
        if self.chars > MAX_CHARS:
            self.fail(at, f"the schema holds more than {MAX_CHARS} characters of text")

    def schema(self, node: Any, at: str, depth: int, stack: tuple[str, ...]) -> dict[str, Any]:
        self.spend(at, depth)
        if not isinstance(node, dict):
            self.fail(at, f"a schema must be an object, got {_kind(node)}")
        if "$ref" in node:
            return self.ref(node, at, depth, stack)
        out: dict[str, Any] = {}
        for key, value in node.items():
            where = _join(at, key)
            if not isinstance(key, str):
                self.fail(at, f"keyword {key!r} is not a string")
            self.text(where, len(key))
            if key == "$defs":
                if at:
                    self.fail(where, "$defs may stand only at the top of the schema")
                continue
            check = _KEYWORDS.get(key)
            if check is not None:
                out[key] = check(self, value, where, depth, stack)
            elif self.strict:
                self.fail(where, f"unsupported JSON Schema keyword (supported: {', '.join(sorted(_KEYWORDS))})")
            elif key != "discriminator":  # OpenAPI's, not JSON Schema's: its mapping names $defs, which go
                out[key] = self.other(key, value, where, depth, stack)
        self.together(out, at)
        kinds = out.get("type")
        if (kinds == "object" or (isinstance(kinds, list) and "object" in kinds)) and "additionalProperties" not in out:
            out["additionalProperties"] = False
        return out

    def ref(self, node: dict[str, Any], at: str, depth: int, stack: tuple[str, ...]) -> dict[str, Any]:
        ref, where = node["$ref"], _join(at, "$ref")
        name = ref[len(_DEFS) :].replace("~1", "/").replace("~0", "~") if isinstance(ref, str) and ref.startswith(_DEFS) else None
        if name is None or name not in self.defs:
            self.fail(where, f"cannot resolve {ref!r} (only #/$defs/<name> of this schema's $defs)")
        if name in stack:
            self.fail(where, f"{name!r} refers to itself; a recursive answer cannot be decoded")
        beside = sorted(set(node) - {"$ref", *ANNOTATIONS} - ({"$defs"} if not at else set()))
        if beside:
            self.fail(at, f"beside $ref stand only annotations ({', '.join(ANNOTATIONS)}), not {beside}")
        self.reached.add(name)
        out = self.schema(self.defs[name], f"$defs.{name}", depth, (*stack, name))
        for key in sorted(set(node) & set(ANNOTATIONS)):
            out[key] = _KEYWORDS[key](self, node[key], _join(at, key), depth, stack)
        return out

    def together(self, out: dict[str, Any], at: str) -> None:
        """What one keyword says of another: required names properties, minima below maxima."""
        known = out.get("properties", {})
        for name in out.get("required", []):
            if name not in known:
                self.fail(_join(at, "required"), f"{name!r} is not one of properties")
        for low, high in (("minItems", "maxItems"), ("minLength", "maxLength"), ("minimum", "maximum")):
            if low in out and high in out and out[low] > out[high]:
                self.fail(_join(at, low), f"{out[low]} is more than {high} {out[high]}")

    def schemas(self, value: Any, at: str, depth: int, stack: tuple[str, ...]) -> list[dict[str, Any]]:
        if not isinstance(value, list) or not value:
            self.fail(at, f"must be a non-empty list of schemas, got {_short(value)}")
        return [self.schema(v, f"{at}[{i}]", depth + 1, stack) for i, v in enumerate(value)]

    def named(self, value: Any, at: str, depth: int, stack: tuple[str, ...]) -> dict[str, Any]:
        if not isinstance(value, dict):
            self.fail(at, f"must be an object of schemas, got {_short(value)}")
        out = {}
        for name, sub in value.items():
            if not isinstance(name, str):
                self.fail(at, f"name {name!r} is not a string")
            self.text(at, len(name))
            out[name] = self.schema(sub, _join(at, name), depth + 1, stack)
        return out

    def value(self, value: Any, at: str, depth: int) -> Any:
        """A JSON value, copied: strings, finite numbers, booleans, null, lists, objects."""
        self.spend(at, depth, len(value) if isinstance(value, str) else 0)
        if value is None or isinstance(value, (str, bool, int)):
            return value
        if isinstance(value, float):
            if not math.isfinite(value):
                self.fail(at, f"{value!r} is not a JSON number")
            return value
        if isinstance(value, list):
            return [self.value(v, f"{at}[{i}]", depth + 1) for i, v in enumerate(value)]
        if isinstance(value, dict):
            out = {}
            for key, v in value.items():
                if not isinstance(key, str):
                    self.fail(at, f"key {key!r} is not a string")
                self.text(at, len(key))
                out[key] = self.value(v, _join(at, key), depth + 1)
            return out
        self.fail(at, f"{_short(value)} is not a JSON value")

    def other(self, key: str, value: Any, at: str, depth: int, stack: tuple[str, ...]) -> Any:
        """A keyword outside the subset, kept (not strict): a schema walked, anything else copied."""
        if key in _ONE_SCHEMA:
            return value if isinstance(value, bool) else self.schema(value, at, depth + 1, stack)
        if key in _SCHEMA_LISTS:
            return self.schemas(value, at, depth, stack)
        if key in _SCHEMA_MAPS:
            return self.named(value, at, depth, stack)
        return self.value(value, at, depth + 1)


def _type(walk: _Walk, value: Any, at: str, depth: int, stack: tuple[str, ...]) -> Any:
    names = [value] if isinstance(value, str) else value
    if not isinstance(names, list) or not names:
        walk.fail(at, f"must be a type name or a non-empty list of them, got {_short(value)}")
    for name in names:
        if not isinstance(name, str) or name not in TYPES:
            walk.fail(at, f"{name!r} is not a JSON Schema type (one of {', '.join(TYPES)})")
    if len(set(names)) != len(names):
        walk.fail(at, f"names a type twice: {names!r}")
    return value if isinstance(value, str) else list(names)


def _required(walk: _Walk, value: Any, at: str, depth: int, stack: tuple[str, ...]) -> Any:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        walk.fail(at, f"must be a list of property names, got {_short(value)}")
    if len(set(value)) != len(value):
        walk.fail(at, f"names a property twice: {value!r}")
    return list(value)


def _count(walk: _Walk, value: Any, at: str, depth: int, stack: tuple[str, ...]) -> Any:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        walk.fail(at, f"must be an integer >= 0, got {_short(value)}")
    return value


def _number(walk: _Walk, value: Any, at: str, depth: int, stack: tuple[str, ...]) -> Any:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        walk.fail(at, f"must be a finite number, got {_short(value)}")
    return value


def _text(walk: _Walk, value: Any, at: str, depth: int, stack: tuple[str, ...]) -> Any:
    if not isinstance(value, str):
        walk.fail(at, f"must be a string, got {_short(value)}")
    walk.text(at, len(value))
    return value


def _values(walk: _Walk, value: Any, at: str, depth: int, stack: tuple[str, ...], empty_ok: bool = True) -> Any:
    if not isinstance(value, list) or not (value or empty_ok):
        walk.fail(at, f"must be a {'' if empty_ok else 'non-empty '}list of JSON values, got {_short(value)}")
    return walk.value(value, at, depth + 1)


def _pattern(walk: _Walk, value: Any, at: str, depth: int, stack: tuple[str, ...]) -> Any:
    _text(walk, value, at, depth, stack)
    problem = pattern_problem(value)
    if problem is not None:
        walk.fail(at, f"{_short(value)}: {problem}")
    return value


def _additional(walk: _Walk, value: Any, at: str, depth: int, stack: tuple[str, ...]) -> Any:
    return value if isinstance(value, bool) else walk.schema(value, at, depth + 1, stack)


_Check = Callable[[_Walk, Any, str, int, "tuple[str, ...]"], Any]
_KEYWORDS: dict[str, _Check] = {
    "type": _type,
    "properties": lambda w, v, at, d, s: w.named(v, at, d, s),
    "required": _required,
    "additionalProperties": _additional,
    "items": lambda w, v, at, d, s: w.schema(v, at, d + 1, s),
    "minItems": _count,
    "maxItems": _count,
    "minLength": _count,
    "maxLength": _count,
    "pattern": _pattern,
    "minimum": _number,
    "maximum": _number,
    "exclusiveMinimum": _number,
    "exclusiveMaximum": _number,
    "enum": lambda w, v, at, d, s: _values(w, v, at, d, s, empty_ok=False),
    "const": lambda w, v, at, d, s: w.value(v, at, d + 1),
    "anyOf": lambda w, v, at, d, s: w.schemas(v, at, d, s),
    "oneOf": lambda w, v, at, d, s: w.schemas(v, at, d, s),
    "title": _text,
    "description": _text,
    "default": lambda w, v, at, d, s: w.value(v, at, d + 1),
    "examples": _values,
}


def _join(at: str, key: str) -> str:
    return f"{at}.{key}" if at else key


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def validate(value: Any, schema: dict[str, Any], at: str) -> None:
    """Check ``value`` against a schema :func:`normalise` made (strict); ``ValueError`` naming
    the place (``at``, then ``.name`` and ``[i]`` down) and why."""
    for key in ("anyOf", "oneOf"):
        if key in schema:
            errors, matched = [], 0
            for option in schema[key]:
                try:
                    validate(value, option, at)
                    matched += 1
                except ValueError as e:
                    errors.append(str(e))
            if matched == 0:
                why = "; ".join(errors)
                raise ValueError(f"{at}: matches none of the choices ({why if len(why) <= 500 else why[:497] + '...'})")
            if key == "oneOf" and matched > 1:
                raise ValueError(f"{at}: matches {matched} of the choices, and must match exactly one")
    kinds = schema.get("type")
    if kinds is not None:
        allowed = [kinds] if isinstance(kinds, str) else kinds
        if not any(_is(value, k) for k in allowed):
            raise ValueError(f"{at}: expected {' or '.join(allowed)}, got {_json_kind(value)}")
    if "const" in schema and not _same(value, schema["const"]):
        raise ValueError(f"{at}: must be {_short(schema['const'])}")
    if "enum" in schema and not any(_same(value, v) for v in schema["enum"]):
        raise ValueError(f"{at}: must be one of {_short(schema['enum'])}")
    if isinstance(value, dict):
        _validate_object(value, schema, at)
    elif isinstance(value, list):
        _validate_array(value, schema, at)
    elif isinstance(value, str):
        if not schema.get("minLength", 0) <= len(value) <= schema.get("maxLength", len(value)):
            raise ValueError(f"{at}: {len(value)} characters is out of range")
        if "pattern" in schema and re.fullmatch(schema["pattern"][1:-1], value) is None:
            raise ValueError(f"{at}: does not match {schema['pattern']}")
    elif _is(value, "number"):
        _validate_number(value, schema, at)


def _validate_object(value: dict[str, Any], schema: dict[str, Any], at: str) -> None:
    props = schema.get("properties", {})
    for name in schema.get("required", []):
        if name not in value:
            raise ValueError(f"{at}.{name}: missing")
    extra = schema.get("additionalProperties", True)
    for name, item in value.items():
        if name in props:
            validate(item, props[name], f"{at}.{name}")
        elif extra is False:
            raise ValueError(f"{at}.{name}: not allowed")
        elif isinstance(extra, dict):
            validate(item, extra, f"{at}.{name}")


def _validate_array(value: list[Any], schema: dict[str, Any], at: str) -> None:
    if not schema.get("minItems", 0) <= len(value) <= schema.get("maxItems", len(value)):
        raise ValueError(f"{at}: {len(value)} items is out of range")
    if "items" in schema:
        for i, item in enumerate(value):
            validate(item, schema["items"], f"{at}[{i}]")


def _validate_number(value: float, schema: dict[str, Any], at: str) -> None:
    for key, sign in (("minimum", ">="), ("maximum", "<="), ("exclusiveMinimum", ">"), ("exclusiveMaximum", "<")):
        bound = schema.get(key)
        if bound is not None and not _BOUNDS[sign](value, bound):
            raise ValueError(f"{at}: must be {sign} {bound}")


_BOUNDS: dict[str, Callable[[float, float], bool]] = {">=": operator.ge, "<=": operator.le, ">": operator.gt, "<": operator.lt}


def _is(value: Any, kind: str) -> bool:
    """Whether ``value`` is of JSON type ``kind`` (a boolean is no number)."""
    return isinstance(value, TYPES[kind]) and not (kind in ("number", "integer") and isinstance(value, bool))


def _json_kind(value: Any) -> str:
    return next((k for k in ("null", "boolean", "integer", "number", "string", "array", "object") if _is(value, k)), type(value).__name__)


def _same(a: Any, b: Any) -> bool:
    """Equal as JSON: ``true`` is not ``1``, ``1`` is ``1.0``."""
    if isinstance(a, bool) or isinstance(b, bool) or a is None or b is None:
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b
