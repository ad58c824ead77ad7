"""Structured output: the shape a final answer must have.

``Agent(output=Model)`` (a pydantic model) or ``Agent(output={...})`` (a JSON Schema): the final
branch of the turn schema becomes ``{"thought", "final": <that schema>}``, so a constrained
engine decodes the answer under it; the system message shows the schema; the answer is
validated (pydantic for a model, the JSON Schema subset below for a dict) and a failing one is
refused and retried like any bad turn. ``answer.output`` is the model instance (or the dict);
the ``final`` event carries ``output`` as plain JSON and ``text`` as that JSON, written out.

The schema is checked when the Agent is built and sent closed and self-contained, by
:func:`aerix.schema.normalise` (every keyword's value checked, ``$ref`` into ``$defs``
inlined, a recursive one refused, nesting and expansion bounded, every object given
``additionalProperties: false``); anything wrong is ``AerixError("options", ...)`` naming the
JSON path of the bad keyword (``output schema: properties.city.type: 'strnig' is not a JSON
Schema type``). A JSON Schema given as a dict may use only the subset listed there (anything
else is refused, since the answer could not be checked against it), and the answer is checked
by :func:`aerix.schema.validate`. A pydantic model's generated schema is checked the same way,
except that keywords outside the subset are kept, since pydantic checks the answer.
"""

from __future__ import annotations

import json
from typing import Any

from .errors import AerixError, describe
from .schema import normalise, validate

__all__ = ["Output"]


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
            return cls(value, normalise(raw, f"output model {value.__name__}", strict=False))
        if isinstance(value, dict):
            return cls(None, normalise(value, "output schema"))
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
        validate(value, self.schema, "final")
        return value, value

    def revive(self, plain: Any) -> Any:
        """The developer's value from its plain JSON (a model instance again, for a model)."""
        return plain if self.model is None else self.model.model_validate(plain)

    def text(self) -> str:
        """The schema as the system message shows it."""
        return json.dumps(self.schema, ensure_ascii=False, sort_keys=False)
