"""How a turn is written: the knobs of the turn contract, and what each one changes.

    agent = Agent(model=model, tools=tools, turn_format=TurnFormat(thought="last", system="compact"))

:class:`TurnFormat` is a keyword-only value object; its defaults write the contract as it has
always been (the bundled model was trained on it: ``tests/unit/golden/system.txt`` and
``schema.json`` stay byte for byte the same); only how a turn is read changed once, by the
numbers of ``make bfcl``: ``duplicate_calls`` became ``"drop"`` (2026-12-04). Each knob, and where it acts:

- ``thought``: ``"first"`` (default), ``"last"`` or ``"none"``. The turn schema's branches list
  their keys in this order, thought required where it is (llama.cpp's JSON-Schema-to-grammar
  writes the required properties in the order ``properties`` gives them, so the grammar makes
  the model write ``thought`` before ``calls``/``final``, after them, or not at all); the system
  message's shapes show the same order, and the full layout says ``Write "thought" first.`` /
  ``last.`` (nothing for ``"none"``; the compact one lets the shapes say it). The parser
  accepts a turn with or without a thought, its keys in any order, in every format.
- ``system``: ``"full"`` (default: the contract in words, each tool's fields one line each) or
  ``"compact"`` (a shorter contract, and each tool one line of JSON, ``{"tool", "description",
  "input"}``, ``input`` mapping each field to the words its full line has: ``{"city": "string,
  required: City name"}``; see :func:`tool_line`). Fewer characters; how many fewer prompt
  tokens, and at what accuracy, is what ``make bfcl`` measures (``bench/README.md``).
- ``call_keys``: ``"tool_first"`` (default: ``{"tool": ..., "input": ...}``) or ``"input_first"``,
  in the schema's call shapes and in the system message.
- ``example``: ``False`` (default) or ``True``: one line more in the system message of an agent
  with tools, a turn that calls its first tool with its required fields (``"<name>"`` for a
  string, ``1`` for a number, an enum's first value...), in the format's key order.
- ``duplicate_calls``: ``"drop"`` (default) or ``"keep"``. With ``"drop"`` a call with the same
  tool and input (canonical JSON) as an earlier call of the same turn is dropped when the turn
  is read. It gets no id and no ``call`` event (the ``turn`` event lists the calls kept, and in
  ``dropped`` the tool names of those dropped), and the turn's results message carries
  ``"note"`` after ``"results"`` (:func:`dropped_note`). With ``"keep"`` every call of the turn
  is a call, and the repeat guard (``Limits.repeat_calls``) answers a repeat from the earlier
  result. This knob is not in the system message.
- ``instructions``: ``"first"`` (default: the agent's instructions open the system message, as
  both trained models saw them) or ``"last"`` (they close it, under ``# Instructions`` in the
  full layout and ``Instructions:`` in the compact one, after the tools and the output schema).
  The engine reuses the longest prefix of the prompt it already holds, so with ``"last"`` agents
  with the same tools and format but other instructions share everything before them: the
  page reads only their instructions on a new agent's first turn (``bench/README.md``).
- ``results``: ``"full"`` (default: each result as ``{"id", "tool", "result"}``, as both trained
  models saw them) or ``"compact"`` (``{"tool", "result"}``: results come back in call order, so
  the call's id says nothing the order does not; 8 prompt tokens fewer a result on SmolLM2, what
  it costs in accuracy is measured in ``bench/README.md``). Not in the system message, like
  ``duplicate_calls``: a run resumed under another value feeds its next results the new way.

Every knob but ``duplicate_calls`` and ``results`` changes the system message, so a durable run or a kept
conversation is refused to an Agent of another format, as to one of other instructions or tools.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, fields
from typing import Any, Sequence, TypeVar

from .errors import AerixError
from .fields import NO_DEFAULT, Field
from .input_view import input_signature, one_of
from .tools import Tool

__all__ = ["TurnFormat", "call_keys", "dropped_note", "example_turn", "shapes", "split_repeats", "tool_line", "turn_keys"]

_CHOICES = {
    "thought": ("first", "last", "none"),
    "system": ("full", "compact"),
    "call_keys": ("tool_first", "input_first"),
    "duplicate_calls": ("keep", "drop"),
    "instructions": ("first", "last"),
    "results": ("full", "compact"),
}


@dataclass(frozen=True, kw_only=True)
class TurnFormat:
    """How a turn is written (see the module docstring); each knob's default is today's contract."""

    thought: str = "first"
    system: str = "full"
    call_keys: str = "tool_first"
    example: bool = False
    duplicate_calls: str = "drop"
    instructions: str = "first"
    results: str = "full"

    def __post_init__(self) -> None:
        for name, allowed in _CHOICES.items():
            value = getattr(self, name)
            if value not in allowed:
                raise AerixError("options", f"TurnFormat.{name} must be one of {', '.join(map(repr, allowed))}, got {value!r}")
        if not isinstance(self.example, bool):
            raise AerixError("options", f"TurnFormat.example must be True or False, got {self.example!r}")

    @classmethod
    def of(cls, value: TurnFormat | dict[str, Any] | None) -> TurnFormat:
        """A ``TurnFormat`` from itself, a dict of its fields, or ``None`` (the defaults)."""
        if value is None:
            return cls()
        if isinstance(value, cls):
            return value
        if not isinstance(value, dict):
            raise AerixError("options", f"turn_format must be a TurnFormat or a dict of its fields, got {type(value).__name__}")
        known = [f.name for f in fields(cls)]
        unknown = sorted(set(value) - set(known))
        if unknown:
            raise AerixError("options", f"unknown TurnFormat field(s) {unknown}; known: {known}")
        return cls(**value)


def turn_keys(fmt: TurnFormat, key: str) -> list[str]:
    """The keys of a turn whose body is ``key`` (``"calls"`` or ``"final"``), in order."""
    return {"first": ["thought", key], "last": [key, "thought"], "none": [key]}[fmt.thought]


def call_keys(fmt: TurnFormat) -> list[str]:
    return ["tool", "input"] if fmt.call_keys == "tool_first" else ["input", "tool"]


# the placeholders of the shapes the system message shows, in each layout
_WORDS = {
    "full": {"thought": '"<your reasoning>"', "tool": '"<tool name>"', "input": "{<the tool's input>}", "final": '"<your answer>"',
             "output": '<your answer as JSON, as described under "Your answer">'},
    "compact": {"thought": '"<reasoning>"', "tool": '"<tool name>"', "input": "{<its input>}", "final": '"<answer>"', "output": "<JSON, as below>"},
}  # fmt: skip


def shapes(fmt: TurnFormat, structured: bool) -> tuple[str, str]:
    """The shapes of a turn of calls and of a final, as the system message shows them."""
    words = _WORDS[fmt.system]
    call = "{" + ", ".join(f'"{k}": {words[k]}' for k in call_keys(fmt)) + "}"
    parts = {"thought": f'"thought": {words["thought"]}', "calls": f'"calls": [{call}]', "final": f'"final": {words["output" if structured else "final"]}'}
    return ("{" + ", ".join(parts[k] for k in turn_keys(fmt, "calls")) + "}", "{" + ", ".join(parts[k] for k in turn_keys(fmt, "final")) + "}")


def example_turn(fmt: TurnFormat, tools: Sequence[Tool]) -> str | None:
    """With ``example`` and tools: one turn that calls the first tool with its required fields."""
    if not fmt.example or not tools:
        return None
    first = tools[0]
    if first.rich is None:
        given = {k: _flat_sample(k, f) for k, f in first.fields.items() if f.required}
    else:
        given = _sample("", first.rich.schema)
    call = {"tool": first.name, "input": given}
    turn = {"thought": f"I will call {first.name}.", "calls": [{k: call[k] for k in call_keys(fmt)}]}
    return json.dumps({k: turn[k] for k in turn_keys(fmt, "calls")}, ensure_ascii=False)


def _flat_sample(name: str, f: Field) -> Any:
    if f.enum:
        return f.enum[0]
    return {"string": f"<{name}>", "number": 1, "integer": 1, "boolean": True}.get(f.type)


def _sample(name: str, node: dict[str, Any]) -> Any:
    """A value of ``node`` to show: its enum's or choices' first, a placeholder for a string."""
    if "enum" in node or "const" in node:
        return node["enum"][0] if "enum" in node else node["const"]
    if "anyOf" in node:
        return _sample(name, node["anyOf"][0])
    kind = node.get("type")
    kind = kind[0] if isinstance(kind, list) else kind
    if kind == "object":
        return {k: _sample(k, sub) for k, sub in node.get("properties", {}).items() if k in node.get("required", [])}
    if kind == "array":
        return [_sample(name, node["items"])] * min(1, node.get("minItems", 0)) if isinstance(node.get("items"), dict) else []
    return {"string": f"<{name}>", "number": 1, "integer": 1, "boolean": True}.get(str(kind))


def tool_line(t: Tool) -> str:
    """A tool as the compact system message shows it: one line of JSON, ``{"tool", "description",
    "input"}`` (``tool`` as a call names it), ``input`` each field's words as the full layout's line has them (``"string,
    required: City name"``; nested fields as :func:`aerix.input_view.input_signature` has them)."""
    given = {k: _flat_words(f) for k, f in t.fields.items()} if t.rich is None else input_signature(t.rich.schema)
    return json.dumps({"tool": t.name, "description": t.description, "input": given}, ensure_ascii=False)


def _flat_words(f: Field) -> str:
    words = [f.type, *(["required"] if f.required else [])]
    if f.enum is not None:
        words.append(one_of(list(f.enum), bare=True))
    if f.default is not NO_DEFAULT and f.default is not None:
        words.append(f"default {json.dumps(f.default, ensure_ascii=False)}")
    return ", ".join(words) + (f": {f.description}" if f.description else "")


_C = TypeVar("_C")


def split_repeats(calls: Sequence[_C]) -> tuple[list[_C], list[_C]]:
    """``calls`` (each with ``tool`` and ``input``) as the kept and the dropped: a call with the
    same tool and input (canonical JSON) as an earlier call of the list is dropped."""
    kept: list[_C] = []
    dropped: list[_C] = []
    seen: set[str] = set()
    for c in calls:
        key = json.dumps([getattr(c, "tool"), getattr(c, "input")], sort_keys=True, ensure_ascii=True)
        (dropped if key in seen else kept).append(c)
        seen.add(key)
    return kept, dropped


def dropped_note(tools: Sequence[str]) -> str:
    """The note the results message carries for the calls of a turn dropped as repeats."""
    n = len(tools)
    calls, were = ("1 call", "it repeated an earlier call") if n == 1 else (f"{n} calls", "they repeated earlier calls")
    return f"{calls} of your turn did not run ({', '.join(tools)}): {were} of the same turn, with the same tool and input. Each call runs once; its result is above."
