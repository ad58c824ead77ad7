"""One BFCL question as one fresh aerix agent, up to its first accepted turn.

Pure and small, with nothing but aerix and the standard library, because it runs in two places:
natively under `make bfcl` (``bench/bfcl.py``, the model on llama-server) and in the page's
Pyodide (``bench/bfcl_page.mjs`` loads this file), so both sides build the very same agent.

- ``json_schema(parameters)``: a BFCL function's parameters as standard JSON Schema, with notes
  on what BFCL wrote that JSON Schema cannot hold;
- ``tool_names(names)``: each BFCL name (``math.factorial``) as an aerix tool name
  (``math_factorial``), one for one, so calls map back;
- ``tools_for(functions)``: the question's functions as aerix tools (that never run);
- ``agent_for(model, tools, variant)``: the Agent of a variant (``VARIANTS``: each a
  ``TurnFormat``, ``FORMATS``);
- ``first_turn(agent, prompt)``: runs the question as an ``aerix.evals`` case with
  ``stop_after="turn"`` (``evals.run``, the agent its factory's): until the parser accepts a turn,
  then stopped (no tool runs); ``turn_record`` is what is logged of that run, ``events_of`` the
  events a logged record stands for, so it is scored again (``bench/bfcl_score.py``);
- ``bfcl_calls(record, names)``: that turn's calls in BFCL's format, ``[{name: {arg: value}}]``;
- ``question_record(model, category, entry)``: all of it for one question, as both sides log it,
  with the ``fingerprint`` of what the model was sent (a logged answer is reused while it holds).
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any, Callable

from aerix import Agent, AerixError, TurnFormat, evals, tool
from aerix.events import Call, End, Event, Retry, Turn, Usage
from aerix.schema import normalise, validate
from aerix.tools import NAME, Tool

__all__ = ["FORMATS", "Unconvertible", "VARIANTS", "agent_for", "bfcl_calls", "events_of", "fingerprint", "first_turn", "json_schema", "prepared", "prompt_of", "question_json", "question_record", "tool_names", "tools_for", "turn_record"]

# BFCL's parameter types (Python's names) as JSON Schema's; "any" has no type constraint.
TYPES: dict[str, str | None] = {
    "string": "string", "integer": "integer", "float": "number", "boolean": "boolean",
    "array": "array", "tuple": "array", "dict": "object", "any": None,
}  # fmt: skip
KEPT = ("description", "enum", "default", "minimum", "maximum", "minItems", "maxItems")  # JSON Schema's own words, in aerix's subset
IGNORED = ("optional",)  # BFCL's marker of an optional parameter: ``required`` already says it
DROPPED = ("format",)  # JSON Schema's, outside the subset aerix's tool inputs take: left out with a note
# the types a kept keyword applies to; on another (BFCL has ``minItems`` on an array's integers) it is left out with a note
APPLIES = {"minimum": ("integer", "number"), "maximum": ("integer", "number"), "minItems": ("array",), "maxItems": ("array",)}


class Unconvertible(ValueError):
    """A function doc this converter does not know how to write as JSON Schema."""


def json_schema(parameters: dict[str, Any], where: str = "parameters") -> tuple[dict[str, Any], list[str]]:
    """A BFCL ``parameters`` object as ``{"type": "object", "properties": ..., "required": [...]}``
    in the subset aerix's tool inputs take (docs/python.md, "Rich tool inputs"), and notes naming
    what was left out: a ``format``, a ``default`` its schema refuses, a ``required`` name that is
    no property, and the top level's ``default`` (BFCL's data has a word there). ``tuple`` is an
    ``array`` of its ``items``; a ``dict`` without properties an object with any keys
    (``additionalProperties: true``); ``any`` a schema of its description alone (any JSON value:
    an empty schema would let llama.cpp's grammar write objects only). Raises :class:`Unconvertible`."""
    notes: list[str] = []
    if parameters.get("type") not in ("dict", "object"):
        raise Unconvertible(f"{where}: type must be dict, got {parameters.get('type')!r}")
    unknown = set(parameters) - {"type", "properties", "required", "default", *IGNORED}
    if unknown:
        raise Unconvertible(f"{where}: unknown key(s) {sorted(unknown)}")
    if "default" in parameters:
        notes.append(f"{where}: default {parameters['default']!r} of the whole input left out")
    return _object(parameters, where, notes, top=True), notes


def _object(spec: dict[str, Any], where: str, notes: list[str], top: bool = False) -> dict[str, Any]:
    properties = spec.get("properties", {})
    if not isinstance(properties, dict):
        raise Unconvertible(f"{where}: properties must be an object")
    if "properties" not in spec and not top:
        return {"type": "object", "additionalProperties": True}  # BFCL's bare dict: any keys
    out: dict[str, Any] = {"type": "object", "properties": {k: _property(v, f"{where}.{k}", notes) for k, v in properties.items()}}
    required = spec.get("required", [] if top else None)
    if required is not None:
        if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
            raise Unconvertible(f"{where}: required must be a list of names")
        for name in required:
            if name not in properties:  # aerix refuses it: a required key the closed object cannot hold
                notes.append(f"{where}: required {name!r} is no property, left out")
        out["required"] = [r for r in required if r in properties]
    return out


def _property(spec: Any, where: str, notes: list[str]) -> dict[str, Any]:
    if not isinstance(spec, dict):
        raise Unconvertible(f"{where}: must be an object")
    unknown = set(spec) - {"type", "items", "properties", "required", *KEPT, *IGNORED, *DROPPED}
    if unknown:
        raise Unconvertible(f"{where}: unknown key(s) {sorted(unknown)}")
    if spec.get("type") not in TYPES:
        raise Unconvertible(f"{where}: unknown type {spec.get('type')!r}")
    kind = TYPES[spec["type"]]
    if kind == "object":
        out = _object(spec, where, notes)
    else:
        if "properties" in spec or "required" in spec:
            raise Unconvertible(f"{where}: properties on a {spec['type']}")
        out = {} if kind is None else {"type": kind}
    if "items" in spec:
        if kind != "array":
            raise Unconvertible(f"{where}: items on a {spec['type']}")
        out["items"] = _property(spec["items"], f"{where}[]", notes)
    for key in KEPT:
        if key not in spec or key == "default":
            continue
        if key in APPLIES and kind not in APPLIES[key]:
            notes.append(f"{where}: {key} {spec[key]!r} on a {spec['type']} left out (it applies to {' and '.join(APPLIES[key])})")
        else:
            out[key] = spec[key]
    for key in DROPPED:
        if key in spec:
            notes.append(f"{where}: {key} {spec[key]!r} left out (not in aerix's JSON Schema subset)")
    if kind is None and not out.get("description"):
        out["description"] = "any JSON value"  # an empty schema would be an object to llama.cpp's grammar
    if "default" in spec:
        problem = _misfit(spec["default"], out, where)
        if problem is None:
            out["default"] = spec["default"]
        else:
            notes.append(f"{where}: default {spec['default']!r} left out ({problem})")
    return out


def _misfit(value: Any, schema: dict[str, Any], where: str) -> str | None:
    """Why ``value`` does not fit ``schema`` (aerix's own check of a schema's values), or None.
    A ``null`` fits nothing typed: aerix would take it, but it is no value of the parameter."""
    if value is None and "type" in schema:
        return f"null is not of type {schema['type']}"
    try:
        validate(value, normalise(schema, where), "default")
    except (ValueError, AerixError) as e:
        return str(e)
    return None


def tool_names(names: list[str]) -> dict[str, str]:
    """aerix tool name -> BFCL name, for every name: lower case, each character outside
    ``[a-z0-9_]`` as ``_``, ``f_`` before one that does not start with a letter, cut to 64
    characters; a name already taken gets ``_2``, ``_3``... (cut to fit)."""
    out: dict[str, str] = {}
    for name in names:
        base = re.sub(r"[^a-z0-9_]", "_", name.lower())
        base = (base if re.match(r"[a-z]", base) else f"f_{base}")[:64]
        candidate, n = base, 1
        while candidate in out:
            n += 1
            candidate = f"{base[: 64 - len(str(n)) - 1]}_{n}"
        assert NAME.fullmatch(candidate), candidate
        out[candidate] = name
    return out


def _never_run(input: dict[str, Any]) -> str:
    return "error: this tool only exists to be called"  # first_turn stops before any tool runs


def tools_for(functions: list[dict[str, Any]]) -> tuple[list[Tool], dict[str, str], list[str]]:
    """``(tools, aerix name -> BFCL name, notes)``: each function as a tool whose input is its
    JSON Schema (``json_schema``). A function aerix refuses raises its ``AerixError``: aerix
    could not express it (counted as ``aerix:unexpressed``)."""
    names = tool_names([f["name"] for f in functions])
    by_bfcl = {b: a for a, b in names.items()}
    tools, notes = [], []
    for f in functions:
        schema, more = json_schema(f["parameters"], where=f["name"])
        notes += more
        name, description = by_bfcl[f["name"]], f.get("description") or f["name"]
        tools.append(tool(name=name, description=description, input=schema, run=_never_run))
    return tools, names, notes


# Variant name -> the TurnFormat its agent writes turns in (issue 27, part 3: the ablations). One
# variant per knob value away from the default, the corner with the fewest tokens both ways, and
# the two winners of single knobs together. `keep-duplicates` is the contract before the default
# changed (2026-12-04: duplicate_calls "keep" -> "drop"), kept to show both side by side.
# A name is part of the run's file names; `python -m bench.bfcl_variants` tables them side by side.
FORMATS: dict[str, TurnFormat] = {
    "default": TurnFormat(),
    "thought-last": TurnFormat(thought="last"),
    "thought-none": TurnFormat(thought="none"),
    "compact": TurnFormat(system="compact"),
    "input-first": TurnFormat(call_keys="input_first"),
    "example": TurnFormat(example=True),
    "keep-duplicates": TurnFormat(duplicate_calls="keep"),
    "compact+thought-none": TurnFormat(system="compact", thought="none"),
    "compact+example": TurnFormat(system="compact", example=True),
}


def _made_with(fmt: TurnFormat) -> Callable[[Any, list[Tool]], Agent]:
    def make(model: Any, tools: list[Tool]) -> Agent:
        """aerix as a user gets it: no instructions, the default limits, greedy decoding; and the format."""
        return Agent(model=model, tools=tools, generation={"temperature": 0}, turn_format=fmt)

    return make


# Variant name -> how its agent is made (a name is part of the run's file name).
VARIANTS: dict[str, Callable[[Any, list[Tool]], Agent]] = {name: _made_with(fmt) for name, fmt in FORMATS.items()}


def agent_for(model: Any, tools: list[Tool], variant: str = "default") -> Agent:
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r} (known: {', '.join(VARIANTS)})")
    return VARIANTS[variant](model, tools)


def prompt_of(entry: dict[str, Any]) -> str:
    """The question's one user message (the categories scored are single-turn, one message)."""
    turns = entry["question"]
    if len(turns) != 1 or len(turns[0]) != 1 or turns[0][0].get("role") != "user":
        raise Unconvertible(f"{entry['id']}: not one user message")
    return str(turns[0][0]["content"])


async def first_turn(agent: Agent, prompt: str, name: str = "question") -> dict[str, Any]:
    """Runs ``prompt`` on ``agent`` through ``evals.run`` as a case stopped at its first accepted
    turn (``stop_after="turn"``) and returns its :func:`turn_record`."""
    case = evals.Case(prompt, name=name, stop_after="turn")
    report = await evals.run([case], lambda: agent)
    return turn_record(report.results[0].outcome)


def turn_record(run: evals.Outcome) -> dict[str, Any]:
    """What is logged of a run stopped at its first turn: ``turn`` (its thought and calls as
    ``{"tool", "input"}``, or None when the run ended first: then ``end`` says how), ``usage``
    per generation ``[prompt, completion, cached]``, the ``retries``' reasons and ``seconds``
    from the start to the turn (or the end)."""
    last = run.events[-1] if run.events else None
    return {
        "turn": {"thought": last.thought, "calls": [{"tool": c.tool, "input": c.input} for c in last.calls]} if isinstance(last, Turn) else None,
        "end": last.to_dict() if isinstance(last, End) else None,
        "usage": [[e.prompt_tokens, e.completion_tokens, e.cached_tokens] for e in run.events if isinstance(e, Usage)],
        "retries": [e.reason for e in run.events if isinstance(e, Retry)],
        "seconds": run.seconds,
    }


def events_of(record: dict[str, Any]) -> list[Event]:
    """The events a logged :func:`turn_record` stands for (its generations, its refused turns,
    then its turn or its end), so a logged run is scored again as it ran."""
    events: list[Event] = [Usage(*u) for u in record.get("usage") or []]
    events += [Retry(1, reason) for reason in record.get("retries") or []]
    turn, end = record.get("turn"), record.get("end")
    if turn is not None:
        calls = tuple(Call(f"call_{i}", c["tool"], c["input"]) for i, c in enumerate(turn["calls"], 1))
        events.append(Turn(1, turn["thought"], calls))
    elif end is not None:
        events.append(End(end["reason"], end.get("message") or ""))
    return events


def prepared(model: Any, entry: dict[str, Any], variant: str = "default") -> dict[str, Any]:
    """The question's agent and how it was made (``agent``, ``names``, ``notes``), and
    its ``fingerprint``: the sha256 of what the model is sent (system message, turn schema, the
    question, the generation settings, the limits) and of the turn format, so a logged answer is reused only while
    aerix would still ask the same. Or, when no agent could be made, ``unconverted`` (this module
    could not write a function as JSON Schema) or ``unexpressed`` (aerix refused a tool: the
    AerixError), which is then the fingerprint."""
    try:
        tools, names, notes = tools_for(entry["function"])
    except Unconvertible as e:
        return {"unconverted": str(e), "fingerprint": f"unconverted: {e}"}
    except AerixError as e:
        return {"unexpressed": f"{e.kind}: {e.message}", "fingerprint": f"unexpressed: {e.kind}: {e.message}"}
    agent = agent_for(model, tools, variant)
    sent = [agent.system, agent.schema, prompt_of(entry), agent.generation, repr(agent.limits), repr(agent.turn_format)]
    fingerprint = hashlib.sha256(json.dumps(sent, sort_keys=True, ensure_ascii=False).encode()).hexdigest()
    return {"agent": agent, "names": names, "notes": notes, "fingerprint": fingerprint}


class _NoModel:
    """Stands in for a model where an agent is made only to be fingerprinted."""

    async def chat(self, messages: Any, options: Any) -> Any:
        raise AerixError("engine", "this agent is only fingerprinted")
        yield  # an async generator, as the protocol has it


def fingerprint(entry: dict[str, Any], variant: str = "default") -> str:
    """``prepared(...)["fingerprint"]`` without a model."""
    return str(prepared(_NoModel(), entry, variant)["fingerprint"])


async def question_record(model: Any, category: str, entry: dict[str, Any], variant: str = "default") -> dict[str, Any]:
    """What one question (a BFCL entry) gave on ``model``: ``first_turn``'s record with its calls
    in BFCL's format (``calls``) and how its agent was made (``prepared``); or, with ``calls``
    None, why no agent was made."""
    made = prepared(model, entry, variant)
    record: dict[str, Any] = {"id": entry["id"], "category": category, "variant": variant}
    if "agent" not in made:
        return record | made | {"calls": None}
    turn = await first_turn(made.pop("agent"), prompt_of(entry), entry["id"])
    return record | made | turn | {"calls": bfcl_calls(turn, made["names"])}


async def question_json(model: Any, category: str, entry_json: str, variant: str = "default") -> str:
    """``question_record`` with JSON in and out: the page's entry point (bench/bfcl_page.mjs)."""
    return json.dumps(await question_record(model, category, json.loads(entry_json), variant), ensure_ascii=False)


def bfcl_calls(record: dict[str, Any], names: dict[str, str]) -> list[dict[str, Any]] | None:
    """The first turn's calls as BFCL scores them, ``[{bfcl_name: input}]`` in order, or None
    when there was no accepted turn."""
    turn = record.get("turn")
    if turn is None:
        return None
    return [{names[c["tool"]]: c["input"]} for c in turn["calls"]]
