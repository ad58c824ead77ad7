"""Rich tool inputs, property by property: for schemas drawn from the supported subset, every
value the schema accepts passes the tool's check and comes back equal; a value that breaks one
constraint is refused, naming its path. (A small strategy from the schema, in place of
hypothesis-jsonschema.)"""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aerix.input_types import kinds_of
from aerix.inputs import from_schema
from aerix.patterns import pattern_problem
from aerix.schema import _same, validate

PATTERNS = ["^[A-Z]{3}-[0-9]{2}$", "^(ab|cd)+$", "^x?y*$", "^[a-z_]{1,4}$", "^.{0,3}$", "^[^a-c]+$", "^(?:[0-9]{2}\\.){1,2}[0-9]$"]
NAMES = ["a", "b", "qty", "items", "a b", "0"]
SCALARS = [{"type": "string"}, {"type": "integer"}, {"type": "number"}, {"type": "boolean"}, {"type": "null"}]


@st.composite
def strings(draw):
    schema = {"type": "string"}
    if draw(st.booleans()):
        schema["pattern"] = draw(st.sampled_from(PATTERNS))
    else:
        low = draw(st.none() | st.integers(0, 4))
        high = draw(st.none() | st.integers(low or 0, 8))
        schema.update({k: v for k, v in (("minLength", low), ("maxLength", high)) if v is not None})
    return schema


@st.composite
def numbers(draw):
    schema = {"type": draw(st.sampled_from(["integer", "number"]))}
    low = draw(st.none() | st.integers(-50, 50))
    high = draw(st.none() | st.integers(low if low is not None else -50, 60))
    for key, bound in (("minimum", low), ("maximum", high)):
        if bound is not None:
            schema[draw(st.sampled_from([key, "exclusive" + key[0].upper() + key[1:]])) if low != high else key] = bound
    if "exclusiveMinimum" in schema and "exclusiveMaximum" in schema and high - low < 2:
        del schema["exclusiveMaximum"]
    return schema


enums = st.lists(st.none() | st.booleans() | st.integers(-3, 3) | st.sampled_from(["x", "y", "é"]), min_size=1, max_size=4, unique_by=json.dumps).map(lambda v: {"enum": v})
leaves = st.sampled_from(SCALARS) | strings() | numbers() | enums | st.builds(lambda v: {"const": v}, st.integers(0, 3) | st.sampled_from(["on", "off"]))


def arrays(inner):
    return st.builds(
        lambda items, low, extra: {"type": "array", "items": items, **({"minItems": low} if low else {}), **({"maxItems": low + extra} if extra is not None else {})},
        inner,
        st.integers(0, 2),
        st.none() | st.integers(0, 3),
    )


def objects(inner):
    return st.dictionaries(st.sampled_from(NAMES), inner, max_size=3).flatmap(
        lambda props: st.builds(
            lambda required, extra: {"type": "object", "properties": props, "required": required, **extra},
            st.lists(st.sampled_from(sorted(props)), unique=True) if props else st.just([]),
            st.sampled_from([{}, {"additionalProperties": False}, {"additionalProperties": True}]),
        )
    )


def choices(inner):
    nullable = st.builds(lambda s: {"anyOf": [s, {"type": "null"}]}, inner)
    typed = st.sampled_from(SCALARS[:4]).map(lambda s: {"type": [s["type"], "null"]})
    return nullable | typed | st.lists(inner, min_size=2, max_size=3).map(lambda c: {"anyOf": c})


schemas = st.recursive(leaves, lambda inner: arrays(inner) | objects(inner) | choices(inner), max_leaves=8)
tops = objects(schemas)


def values(schema):
    """Values ``schema`` accepts."""
    if "anyOf" in schema:
        return st.one_of([values(c) for c in schema["anyOf"]])
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    if "const" in schema:
        return st.just(schema["const"])
    kind = schema.get("type")
    if isinstance(kind, list):
        return st.one_of([values({**schema, "type": k}) for k in kind])
    if kind == "string":
        if "pattern" in schema:
            return st.from_regex(schema["pattern"][1:-1], fullmatch=True)
        return st.text(min_size=schema.get("minLength", 0), max_size=schema.get("maxLength", 6))
    if kind in ("integer", "number"):
        low = schema.get("minimum", schema.get("exclusiveMinimum", -100) + ("exclusiveMinimum" in schema))
        high = schema.get("maximum", schema.get("exclusiveMaximum", 100) - ("exclusiveMaximum" in schema))
        ints = st.integers(low, high)
        if kind == "integer":
            return ints
        return ints | st.floats(low, high, allow_nan=False)  # within the integers' bounds: never empty
    if kind == "boolean":
        return st.booleans()
    if kind == "null":
        return st.none()
    if kind == "array":
        low = schema.get("minItems", 0)
        return st.lists(values(schema["items"]), min_size=low, max_size=schema.get("maxItems", low + 3))
    if kind == "object":
        props, required = schema.get("properties", {}), schema.get("required", [])
        fixed = {k: values(props[k]) for k in required}
        optional = {k: values(s) for k, s in props.items() if k not in required}
        extra = st.dictionaries(st.sampled_from(["zz", "yy"]), st.integers()) if schema.get("additionalProperties") is True else st.just({})
        return st.builds(lambda a, b: {**b, **a}, st.fixed_dictionaries(fixed, optional=optional), extra)
    return st.integers() | st.text(max_size=3)


def test_the_patterns_drawn_are_in_the_grammar_s_subset():
    assert [p for p in PATTERNS if pattern_problem(p) is not None] == []


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(data=st.data(), schema=tops)
def test_every_value_the_schema_accepts_passes_and_comes_back_equal(data, schema):
    rich = from_schema("t", schema)
    value = data.draw(values(rich.schema), label="value")
    validate(value, rich.schema, "input")  # the hand-written check of structured output agrees
    checked = rich.check(value)
    assert _same(checked, value), (checked, value)
    assert _same(json.loads(json.dumps(checked)), value)


def breaks(schema, value, path):
    """``(path, broken value)`` for each way to break one constraint at or under ``value``."""
    if "anyOf" in schema or isinstance(schema.get("type"), list) or "enum" in schema or "const" in schema:
        kinds = kinds_of(schema)
        if kinds is not None and "object" not in kinds:  # a value of a kind no choice takes
            yield path, {"zz": [1]}
        return
    kind = schema.get("type")
    if kind == "integer":
        yield path, str(value)
        yield path, float(value) + 0.5
        if "minimum" in schema:
            yield path, schema["minimum"] - 1
        if "exclusiveMaximum" in schema:
            yield path, schema["exclusiveMaximum"]
    elif kind == "number":
        yield path, True
        if "maximum" in schema:
            yield path, schema["maximum"] + 0.5
    elif kind == "string":
        yield path, 5
        if "maxLength" in schema:
            yield path, "z" * (schema["maxLength"] + 1)
        if "pattern" in schema:  # a newline breaks every pattern drawn but [^a-c]+, which "a" breaks
            yield path, value + "\na"
    elif kind == "boolean":
        yield path, 1
    elif kind == "array":
        yield path, {"not": "a list"}
        if schema.get("maxItems") is not None and value:
            yield path, value + [value[0]] * (schema["maxItems"] + 1 - len(value))
        for i, item in enumerate(value[:2]):
            for at, bad in breaks(schema["items"], item, f"{path}[{i}]"):
                yield at, value[:i] + [bad] + value[i + 1 :]
    elif kind == "object":
        for name in schema.get("required", []):
            yield _join(path, name), {k: v for k, v in value.items() if k != name}
        if schema.get("additionalProperties", False) is False:
            yield _join(path, "extra_key"), {**value, "extra_key": 1}
        for name, sub in schema.get("properties", {}).items():
            if name in value:
                for at, bad in breaks(sub, value[name], _join(path, name)):
                    yield at, {**value, name: bad}


def _join(path, name):
    step = name if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) else f"[{json.dumps(name)}]"
    return f"{path}.{step}" if path and not step.startswith("[") else f"{path}{step}"


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(data=st.data(), schema=tops)
def test_a_value_that_breaks_a_constraint_is_refused_naming_its_path(data, schema):
    rich = from_schema("t", schema)
    value = data.draw(values(rich.schema), label="value")
    broken = list(breaks(rich.schema, value, ""))
    if not broken:
        return
    path, bad = data.draw(st.sampled_from(broken), label="broken")
    with pytest.raises(ValueError) as e:
        rich.check(bad)
    problems = str(e.value).split("; ")
    assert any(p.startswith(f"{path or 'input'}: ") for p in problems), (path, str(e.value))
