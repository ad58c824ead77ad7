"""A tool input's JSON Schema as a pydantic type, so that pydantic checks the input.

    kind = input_type(normalise(schema, "tool 'order' input"), "tool 'order' input")
    TypeAdapter(kind).validate_python(value, strict=True)   # ValidationError, paths as loc

Built once, when the tool is defined, from a schema :func:`aerix.schema.normalise` made (strict).
Each keyword becomes what pydantic checks (strict: no ``"5"`` for ``5``, no ``true`` for ``1``):

- ``string`` ``str`` with ``minLength``/``maxLength``/``pattern``; ``integer`` ``int`` and
  ``number`` ``float`` (an integer is a number) with ``minimum``/``maximum``/
  ``exclusiveMinimum``/``exclusiveMaximum``, no NaN or infinity; ``boolean``; ``null``;
- ``array`` a ``list`` of ``items`` (any JSON without) with ``minItems``/``maxItems``;
- ``object`` a ``TypedDict`` of its ``properties`` (``required`` ones required), closed
  (``additionalProperties: false``, the default) or open (``true``); with no ``properties``
  and ``additionalProperties`` a schema, a ``dict`` of string to that;
- ``enum``/``const`` compared as JSON (``true`` is not ``1``); a list of types and ``anyOf``
  a union whose choice is made by the value's JSON type (and, when several choices take that
  type, the first one the value passes), so that an error names one choice's problem.

Refused (``AerixError("options")``, naming the keyword's path): ``oneOf`` (pydantic cannot
check "exactly one"; use ``anyOf``), ``anyOf`` with validating keywords beside it, a
type's keyword without that type (``minLength`` with no ``"type": "string"``),
``additionalProperties`` as a schema beside ``properties``, and a ``default`` its schema
refuses.
"""

from __future__ import annotations

import json
from typing import Any, Union

from .errors import AerixError
from .schema import _same

__all__ = ["ANNOTATIONS", "input_type", "kinds_of", "options_of"]

ANNOTATIONS = frozenset({"title", "description", "default", "examples"})
TYPE_KEYWORDS: dict[str, frozenset[str]] = {
    "string": frozenset({"minLength", "maxLength", "pattern"}),
    "number": frozenset({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}),
    "integer": frozenset({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}),
    "array": frozenset({"items", "minItems", "maxItems"}),
    "object": frozenset({"properties", "required", "additionalProperties"}),
    "boolean": frozenset(),
    "null": frozenset(),
}
_BOUNDS = {"minimum": "ge", "maximum": "le", "exclusiveMinimum": "gt", "exclusiveMaximum": "lt"}


def input_type(schema: dict[str, Any], what: str) -> Any:
    """The pydantic type (an annotation for ``TypeAdapter``) that checks values of ``schema``."""
    return _Builder(what).build(schema, "")


def options_of(node: dict[str, Any]) -> list[dict[str, Any]] | None:
    """The choices of a union node (``anyOf``, or a list of two or more types), in the order
    its tags count them; ``None`` for any other node."""
    if "anyOf" in node:
        choices: list[dict[str, Any]] = node["anyOf"]
        return choices
    kinds = node.get("type")
    if isinstance(kinds, list) and len(kinds) > 1:
        return [_one_type(node, k) for k in kinds]
    return None


def kinds_of(node: dict[str, Any]) -> set[str] | None:
    """The JSON types a node's values may have, or ``None`` for any."""
    choices = options_of(node)
    if choices is not None and "anyOf" in node:
        found: set[str] = set()
        for choice in choices:
            kinds = kinds_of(choice)
            if kinds is None:
                return None
            found |= kinds
        return found
    kinds = node.get("type")
    if kinds is not None:
        return {kinds} if isinstance(kinds, str) else set(kinds)
    if "enum" in node or "const" in node:
        return {_json_kind(v) for v in node.get("enum", [node.get("const")])}
    return None


def _one_type(node: dict[str, Any], kind: str) -> dict[str, Any]:
    """The part of a many-typed node that speaks of ``kind`` (its enum applies to the whole)."""
    return {"type": kind, **{k: v for k, v in node.items() if k in TYPE_KEYWORDS[kind]}}


class _Builder:
    def __init__(self, what: str) -> None:
        self.what = what
        self.made: dict[str, Any] = {}  # equal schemas (a $ref inlined many times) share one type


    def fail(self, at: str, message: str) -> Any:
        raise AerixError("options", f"{self.what}: {at}: {message}" if at else f"{self.what}: {message}")

    def build(self, node: dict[str, Any], at: str) -> Any:
        key = json.dumps(node, sort_keys=True)
        if key not in self.made:
            self.made[key] = self.fresh(node, at)
        return self.made[key]

    def fresh(self, node: dict[str, Any], at: str) -> Any:
        if "oneOf" in node:
            self.fail(_join(at, "oneOf"), "oneOf is not supported in a tool's input (pydantic cannot check 'exactly one'); use anyOf")
        if "anyOf" in node:
            beside = sorted(set(node) - {"anyOf"} - ANNOTATIONS)
            if beside:
                self.fail(at, f"anyOf with {beside} beside it is not supported in a tool's input; put them in each choice")
            kind = self.union([self.build(c, f"{_join(at, 'anyOf')}[{i}]") for i, c in enumerate(node["anyOf"])], node["anyOf"])
        else:
            kinds = node.get("type")
            names = [kinds] if isinstance(kinds, str) else kinds or []
            for key in sorted(set(node) - ANNOTATIONS - {"type", "enum", "const"}):
                if not any(key in TYPE_KEYWORDS[k] for k in names):
                    self.fail(_join(at, key), f"needs a type it applies to ({' or '.join(t for t in TYPE_KEYWORDS if key in TYPE_KEYWORDS[t])})")
            if len(names) > 1:
                choices = [_one_type(node, k) for k in names]
                kind = self.union([self.single(c, k, at) for c, k in zip(choices, names)], choices)
            else:
                kind = self.single(node, names[0] if names else None, at)
            kind = self.values(node, kind)
        if "default" in node and node["default"] is not None:
            self.check_default(kind, node["default"], _join(at, "default"))
        return kind

    def single(self, node: dict[str, Any], kind: str | None, at: str) -> Any:
        from typing import Annotated

        from pydantic import Field, StringConstraints

        if kind == "string":
            if not TYPE_KEYWORDS["string"] & set(node):
                return str
            return Annotated[str, StringConstraints(min_length=node.get("minLength"), max_length=node.get("maxLength"), pattern=node.get("pattern"))]
        if kind in ("integer", "number"):
            bounds = {_BOUNDS[k]: v for k, v in node.items() if k in _BOUNDS}
            return Annotated[int, Field(**bounds)] if kind == "integer" else Annotated[float, Field(allow_inf_nan=False, **bounds)]
        if kind == "boolean":
            return bool
        if kind == "null":
            return None
        if kind == "array":
            item = self.build(node["items"], _join(at, "items")) if "items" in node else Any
            return Annotated[list[item], Field(min_length=node.get("minItems"), max_length=node.get("maxItems"))]  # type: ignore[valid-type]
        if kind == "object":
            return self.object(node, at)
        return Any

    def object(self, node: dict[str, Any], at: str) -> Any:
        from pydantic import ConfigDict
        from typing_extensions import NotRequired, Required, TypedDict

        props: dict[str, Any] = node.get("properties", {})
        extra = node.get("additionalProperties", False)
        if isinstance(extra, dict):
            if props:
                self.fail(_join(at, "additionalProperties"), "a schema here beside properties is not supported in a tool's input (only true or false)")
            return dict[str, self.build(extra, _join(at, "additionalProperties"))]  # type: ignore[misc]
        required = set(node.get("required", []))
        fields = {name: (Required if name in required else NotRequired)[self.build(sub, _join(_join(at, "properties"), name))] for name, sub in props.items()}
        make: Any = TypedDict  # called with a name and fields made here, which mypy cannot follow
        made = make(f"input_{at or 'top'}".replace(".", "_"), fields)
        made.__pydantic_config__ = ConfigDict(extra="allow" if extra is True else "forbid")
        return made

    def values(self, node: dict[str, Any], kind: Any) -> Any:
        """``kind`` narrowed to the node's ``enum`` or ``const``, compared as JSON."""
        from typing import Annotated, Literal

        from pydantic import AfterValidator
        from pydantic_core import PydanticCustomError

        if "enum" not in node and "const" not in node:
            return kind
        allowed = node["enum"] if "enum" in node else [node["const"]]
        if (kind is Any and all(v is None or isinstance(v, str) for v in allowed)) or (kind is str and all(isinstance(v, str) for v in allowed)):
            return Literal[tuple(allowed)]  # pydantic's own message: "Input should be 'a' or 'b'"
        shown = [json.dumps(v, ensure_ascii=False) for v in allowed]
        expected = shown[0] if len(shown) == 1 else f"{', '.join(shown[:-1])} or {shown[-1]}"

        def one_of(value: Any) -> Any:
            if any(_same(value, v) for v in allowed):
                return value
            raise PydanticCustomError("enum", "Input should be {expected}", {"expected": expected})

        return Annotated[kind, AfterValidator(one_of)]

    def union(self, kinds: list[Any], nodes: list[dict[str, Any]]) -> Any:
        """A union whose choice is made by the value (see the module docstring); its errors
        carry the choice's index as a tag in their path."""
        from typing import Annotated

        from pydantic import Discriminator, Tag

        if len(kinds) == 1:
            return kinds[0]
        accepts = [kinds_of(n) for n in nodes]
        names = list(dict.fromkeys(k for n, a in zip(nodes, accepts) for k in (_ordered(n, a) if a is not None else ["any value"])))
        pick = _Picker(kinds, accepts)
        tagged = tuple(Annotated[k, Tag(str(i))] for i, k in enumerate(kinds))
        message = f"Input should be {' or '.join(names)}"
        return Annotated[Union[tagged], Discriminator(pick, custom_error_type="union", custom_error_message=message)]

    def check_default(self, kind: Any, default: Any, at: str) -> None:
        from pydantic import TypeAdapter, ValidationError

        try:
            TypeAdapter(kind).validate_python(default, strict=True)
        except ValidationError as e:
            first = e.errors(include_url=False)[0]
            self.fail(at, f"{json.dumps(default, ensure_ascii=False)[:60]} does not fit its schema ({first['msg']})")


class _Picker:
    """The discriminator of a union: the tag of the choice a value goes to, or ``None``."""

    def __init__(self, kinds: list[Any], accepts: list[set[str] | None]) -> None:
        self.kinds, self.accepts = kinds, accepts
        self.adapters: dict[int, Any] = {}
        self.__name__ = "choice"  # pydantic-core names a callable discriminator by it

    def __call__(self, value: Any) -> str | None:
        kind = _json_kind(value)
        fits = [i for i, a in enumerate(self.accepts) if a is None or kind in a or (kind == "integer" and "number" in a)]
        if len(fits) > 1:
            for i in fits:
                if self.passes(i, value):
                    return str(i)
        return str(fits[0]) if fits else None

    def passes(self, i: int, value: Any) -> bool:
        from pydantic import TypeAdapter, ValidationError

        if i not in self.adapters:
            self.adapters[i] = TypeAdapter(self.kinds[i])
        try:
            self.adapters[i].validate_python(value, strict=True)
        except ValidationError:
            return False
        return True


def _ordered(node: dict[str, Any], kinds: set[str]) -> list[str]:
    """``kinds`` in the order the node names them (its ``type`` list first), for messages."""
    named = node.get("type")
    first = [named] if isinstance(named, str) else list(named or [])
    return [k for k in first if k in kinds] + sorted(kinds - set(first))


def _json_kind(value: Any) -> str:
    kinds: dict[type, str] = {type(None): "null", bool: "boolean", int: "integer", float: "number", str: "string", list: "array", dict: "object"}
    return kinds.get(type(value), type(value).__name__)


def _join(at: str, key: str) -> str:
    return f"{at}.{key}" if at else key

