"""The turn contract: what the model is told, what it may answer, and how an answer is read.

Every turn is one JSON object::

    {"thought"?: str, "calls": [{"tool": name, "input": {...}}, ...]}   # 1..8 calls
    {"thought"?: str, "final": str}

``turn_schema`` is the JSON Schema the engine decodes under (so a turn that ends on its own is
valid); ``parse_turn`` reads a reply and refuses what breaks the contract; ``system_message``
states the contract and the tools; ``results_message`` and the notes are how the loop talks back.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Sequence

from .fields import NO_DEFAULT
from .input_view import input_lines
from .output import Output
from .tools import Tool
from .turn_format import TurnFormat, call_keys, example_turn, shapes, split_repeats, tool_line, turn_keys

__all__ = [
    "MAX_CALLS",
    "MAX_DEPTH",
    "THOUGHT_CHARS",
    "ParsedCall",
    "ParsedTurn",
    "TurnRefused",
    "cut_note",
    "cut_result",
    "neutralise",
    "nests_too_deep",
    "parse_turn",
    "refused_note",
    "repeated_note",
    "results_message",
    "system_message",
    "turn_schema",
]

MAX_CALLS = 8
THOUGHT_CHARS = 600
MAX_DEPTH = 64  # a valid turn nests 4 levels; deeper JSON is refused before anything copies it


def turn_schema(tools: Sequence[Tool], output: Output | None = None, turn_format: TurnFormat | None = None) -> dict[str, Any]:
    """The JSON Schema of one turn for these tools.

    ``thought`` is required and first in both branches so the model reasons before it commits
    (parsing still accepts a turn without one); ``turn_format`` may put it last or leave it out,
    and put a call's ``input`` before its ``tool`` (:mod:`aerix.turn_format`). Calls name a
    known tool (``const``) with an input of that tool's shape; 1 to 8 of them. With no tools
    only the final branch exists. With an ``output``, the final is that schema instead of a string.
    """
    fmt = TurnFormat.of(turn_format)
    final = _branch(fmt, "final", {"type": "string"} if output is None else output.schema)
    if not tools:
        return final
    order = call_keys(fmt)
    call_shapes = [
        {
            "type": "object",
            "properties": {k: {"tool": {"const": t.name}, "input": t.input_schema()}[k] for k in order},
            "required": order,
            "additionalProperties": False,
        }
        for t in tools
    ]
    items = call_shapes[0] if len(call_shapes) == 1 else {"anyOf": call_shapes}
    calls = _branch(fmt, "calls", {"type": "array", "items": items, "minItems": 1, "maxItems": MAX_CALLS})
    return {"anyOf": [calls, final]}


def _branch(fmt: TurnFormat, key: str, body: dict[str, Any]) -> dict[str, Any]:
    """One branch of the turn, its keys in the format's order: the grammar writes them so."""
    keys = turn_keys(fmt, key)
    given = {"thought": {"type": "string"}, key: body}
    return {"type": "object", "properties": {k: given[k] for k in keys}, "required": keys, "additionalProperties": False}


# -- reading a reply -----------------------------------------------------------------------


class TurnRefused(Exception):
    """The reply breaks the contract; ``reason`` is told to the model and in the ``retry`` event."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class ParsedCall:
    tool: str
    input: Any  # checked against the tool's fields later, where a failure is the model's to fix


@dataclass(frozen=True)
class ParsedTurn:
    thought: str | None
    calls: tuple[ParsedCall, ...]  # empty for a final
    final: str | None
    output: Any = None  # with structured output: the final as plain JSON (``final`` is it, written out)
    dropped: tuple[ParsedCall, ...] = ()  # calls that repeated an earlier one of the turn (TurnFormat.duplicate_calls)


def parse_turn(
    text: str, tool_names: Sequence[str] | frozenset[str], output: Output | None = None, turn_format: TurnFormat | None = None
) -> ParsedTurn:
    """Read one reply; raise :class:`TurnRefused` on bad JSON (a number out of a float's range
    included), an unknown tool, an empty calls list, or a reply that is neither calls nor final.
    Keeps the first 8 calls and cuts the thought to 600 characters. The keys may come in any
    order and ``thought`` may be missing, whatever the format; with ``duplicate_calls="drop"``
    a call that repeats an earlier one of the turn goes to ``dropped``."""
    body = _unfence(text)
    if nests_too_deep(body):  # before parsing: deep JSON overflows the stack in Pyodide first
        raise TurnRefused(f"bad json: the reply nests deeper than {MAX_DEPTH} levels")
    try:
        data = json.loads(body, parse_float=_finite, parse_constant=_no_constant)
    except _OutOfRange as e:
        raise TurnRefused(f"bad number: {e}") from None
    except ValueError as e:
        raise TurnRefused(f"bad json: {e}") from None
    if not isinstance(data, dict):
        raise TurnRefused("not a turn: the reply must be one JSON object")
    thought = data.get("thought")
    if thought is not None and not isinstance(thought, str):
        raise TurnRefused('not a turn: "thought" must be a string')
    if thought is not None:
        thought = thought[:THOUGHT_CHARS]
    has_calls, has_final = "calls" in data, "final" in data
    if has_calls == has_final:
        which = "both" if has_calls else "neither"
        raise TurnRefused(f'not a turn: a turn has either "calls" or "final", this one has {which}')
    if has_final and output is not None:
        try:
            _, plain = output.check(data["final"])
        except ValueError as e:
            raise TurnRefused(f"bad final: {e}") from None
        return ParsedTurn(thought, (), json.dumps(plain, ensure_ascii=False), plain)
    if has_final:
        if not isinstance(data["final"], str):
            raise TurnRefused('not a turn: "final" must be a string')
        return ParsedTurn(thought, (), data["final"])
    raw = data["calls"]
    if not isinstance(raw, list):
        raise TurnRefused('not a turn: "calls" must be a list')
    if not raw:
        raise TurnRefused('empty calls: "calls" needs at least one call')
    calls = []
    for i, c in enumerate(raw[:MAX_CALLS]):
        if not isinstance(c, dict) or not isinstance(c.get("tool"), str):
            raise TurnRefused(f'not a turn: call {i + 1} must be an object with a "tool" name')
        if c["tool"] not in tool_names:
            known = ", ".join(sorted(tool_names)) or "none"
            raise TurnRefused(f"unknown tool: {c['tool']!r} (tools: {known})")
        calls.append(ParsedCall(c["tool"], c.get("input", {})))
    if TurnFormat.of(turn_format).duplicate_calls == "drop":
        kept, dropped = split_repeats(calls)
        return ParsedTurn(thought, tuple(kept), None, dropped=tuple(dropped))
    return ParsedTurn(thought, tuple(calls), None)


class _OutOfRange(ValueError):
    pass


_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"')


def nests_too_deep(text: str) -> bool:
    """Whether the JSON in ``text`` opens more than ``MAX_DEPTH`` objects or arrays at once
    (brackets inside strings do not count); linear in the text, and free for a short reply."""
    if text.count("{") + text.count("[") <= MAX_DEPTH:
        return False
    depth = 0
    for ch in _STRINGS.sub('""', text):
        if ch in "{[":
            depth += 1
            if depth > MAX_DEPTH:
                return True
        elif ch in "}]":
            depth -= 1
    return False


def _finite(text: str) -> float:
    """A JSON number as a float; one too large for a float (a JSON-schema grammar lets
    ``3e+805…`` through) is refused rather than kept as ``inf``, which is not JSON."""
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise _OutOfRange(f"{text[:40]} is out of range for a number")
    return value


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _unfence(text: str) -> str:
    """Without a constraint a model may wrap its JSON in a Markdown fence; look inside it."""
    s = text.strip()
    if s.startswith("```") and s.endswith("```") and len(s) > 6:
        s = s[3:-3]
        s = s[s.index("\n") + 1 :] if "\n" in s else s
    return s


# -- what the loop says --------------------------------------------------------------------


def system_message(instructions: str, tools: Sequence[Tool], output: Output | None = None, turn_format: TurnFormat | None = None) -> str:
    """The system message: the instructions, then the contract and the tools (and, with an
    ``output``, the schema the final answer follows); with ``turn_format`` ``instructions="last"``
    the instructions come after all of that. A flat tool's fields are one line each; a
    rich tool's nested fields are indented under theirs (:mod:`aerix.input_view`); with
    ``turn_format`` ``system="compact"``, a shorter contract and each tool one line of JSON
    (:mod:`aerix.turn_format`). Chat-template control tokens in it (from
    the instructions, a tool's or a field's description, the output schema) are broken, as in
    any message from outside (:func:`neutralise`)."""
    fmt = TurnFormat.of(turn_format)
    calls_shape, final_shape = shapes(fmt, output is not None)
    rule = {"first": 'Write "thought" first.', "last": 'Write "thought" last.', "none": ""}[fmt.thought]
    contract = {"calls": calls_shape, "final": final_shape, "rule": rule, "example": example_turn(fmt, tools)}
    shape = None if output is None else output.text()
    if fmt.system == "compact":
        view: list[Any] = [tool_line(t) for t in tools]
    else:
        view = [_tool_view(t) for t in tools]
    template = _template("system-compact.j2" if fmt.system == "compact" else "system.j2")
    text: str = template.render(instructions=instructions.strip(), instructions_last=fmt.instructions == "last", tools=view, max_calls=MAX_CALLS, output=shape, contract=contract)
    return neutralise(text.strip()) + "\n"


def _tool_view(t: Tool) -> dict[str, Any]:
    return {
        "name": t.name,
        "description": t.description,
        "lines": None if t.rich is None else input_lines(t.rich.schema),
        "fields": {
            k: {
                "type": f.type,
                "required": f.required,
                "enum": f.enum,
                "description": f.description,
                "has_default": f.default is not NO_DEFAULT and f.default is not None,
                "default": None if f.default is NO_DEFAULT else f.default,
            }
            for k, f in t.fields.items()
        },
    }


@lru_cache(maxsize=2)
def _template(name: str) -> Any:
    from importlib.resources import files

    import jinja2

    env = jinja2.Environment(autoescape=False, trim_blocks=True, keep_trailing_newline=True, undefined=jinja2.StrictUndefined)
    env.policies["json.dumps_kwargs"] = {"ensure_ascii": False, "sort_keys": False}
    return env.from_string(files("aerix").joinpath(name).read_text(encoding="utf-8"))


def results_message(results: Sequence[tuple[str, str, str]], note: str | None = None, turn_format: TurnFormat | None = None) -> str:
    """The user message that carries a turn's results back: one JSON object, in call order;
    ``note`` (the calls a turn dropped, :func:`aerix.turn_format.dropped_note`) after them. With
    ``turn_format`` ``results="compact"``, each result without its call's id."""
    if TurnFormat.of(turn_format).results == "compact":
        body: dict[str, Any] = {"results": [{"tool": t, "result": text} for _, t, text in results]}
    else:
        body = {"results": [{"id": i, "tool": t, "result": text} for i, t, text in results]}
    if note is not None:
        body["note"] = note
    return json.dumps(body, ensure_ascii=False)


def cut_result(text: str, chars: int) -> str:
    """A tool result cut to its first ``chars`` characters, with the note that says so
    (``Limits.result_chars``, and a result cut to fit in the context: ``compaction.fit_result``)."""
    return f"{text[:chars]}\n[cut: the result was {len(text)} characters; this is the first {chars}]"


def refused_note(reason: str) -> str:
    return f"Your last turn was refused ({reason}). Answer with one JSON object that follows the turn contract."


def cut_note(max_tokens: int) -> str:
    return f"Your last turn was cut off at {max_tokens} tokens before it ended. Write a shorter turn."


def repeated_note(tool: str, earlier: str, text: str) -> str:
    """The result of a call that repeats ``earlier`` (same tool, equal input): its result ``text``
    after a note saying the tool did not run again."""
    return f"Already called: {earlier} had the same tool and input, so {tool} did not run again. Its result follows; use it instead of calling again.\n{text}"


# Chat-template control tokens (ChatML and the Llama 3 family's <|...|>, Gemma's turn markers,
# Llama 2 / Mistral's [INST]) in text that comes from outside: a prompt, a tool result. The
# engine parses special tokens in the prompt it renders, so such text could close a turn and
# forge another; a word joiner (U+2060) after the first character breaks the token and keeps
# the text readable.
_CONTROL = re.compile(r"<\|\w{1,40}\|>|</?(?:start_of_turn|end_of_turn)>|\[/?INST\]")


def neutralise(text: str) -> str:
    """``text`` with every chat-template control token broken, so it stays text."""
    return _CONTROL.sub(lambda m: m[0][0] + "\u2060" + m[0][1:], text)

