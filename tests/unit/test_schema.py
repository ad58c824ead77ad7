"""JSON Schema checked and normalised (aerix.schema): issue 26, item 13."""

from __future__ import annotations

import enum
import json
import time
from typing import Literal, Optional, Union

import pytest
from helpers import collect, kinds
from pydantic import BaseModel, Field

from aerix import AerixError, Agent
from aerix.schema import MAX_DEPTH, MAX_NODES, normalise, validate
from aerix.testing import ScriptedModel


def refused(schema) -> str:
    with pytest.raises(AerixError) as e:
        Agent(model=ScriptedModel([]), output=schema)
    assert e.value.kind == "options"
    return e.value.message


@pytest.mark.parametrize(
    "schema, message",
    [
        ({"enum": 5}, "output schema: enum: must be a non-empty list of JSON values, got 5"),
        ({"enum": []}, "output schema: enum: must be a non-empty list"),
        ({"anyOf": {"type": "string"}}, "output schema: anyOf: must be a non-empty list of schemas"),
        ({"oneOf": [{"type": "string"}, 3]}, "output schema: oneOf[1]: a schema must be an object, got int"),
        ({"type": "object", "properties": {"city": {"type": "strnig"}}}, "output schema: properties.city.type: 'strnig' is not a JSON Schema type"),
        ({"type": ["string", "string"]}, "output schema: type: names a type twice"),
        ({"type": []}, "output schema: type: must be a type name or a non-empty list"),
        ({"type": "object", "properties": ["a"]}, "output schema: properties: must be an object of schemas"),
        ({"type": "object", "properties": {"a": "string"}}, "output schema: properties.a: a schema must be an object, got str"),
        ({"type": "object", "properties": {"a": {}}, "required": ["b"]}, "output schema: required: 'b' is not one of properties"),
        ({"type": "object", "properties": {"a": {}}, "required": "a"}, "output schema: required: must be a list of property names"),
        ({"type": "object", "properties": {"a": {}}, "required": ["a", "a"]}, "output schema: required: names a property twice"),
        ({"type": "object", "additionalProperties": "no"}, "output schema: additionalProperties: a schema must be an object, got str"),
        ({"type": "array", "items": [{"type": "string"}]}, "output schema: items: a schema must be an object, got list"),
        ({"type": "array", "minItems": -1}, "output schema: minItems: must be an integer >= 0"),
        ({"type": "array", "maxItems": True}, "output schema: maxItems: must be an integer >= 0"),
        ({"type": "array", "minItems": 3, "maxItems": 1}, "output schema: minItems: 3 is more than maxItems 1"),
        ({"type": "string", "maxLength": 2.5}, "output schema: maxLength: must be an integer >= 0"),
        ({"type": "number", "minimum": "0"}, "output schema: minimum: must be a finite number"),
        ({"type": "number", "exclusiveMaximum": float("inf")}, "output schema: exclusiveMaximum: must be a finite number"),
        ({"enum": [float("nan")]}, "output schema: enum[0]: nan is not a JSON number"),
        ({"const": {1: "a"}}, "output schema: const: key 1 is not a string"),
        ({"const": ("a",)}, "output schema: const: ('a',) is not a JSON value"),
        ({"type": "string", "description": 5}, "output schema: description: must be a string"),
        ({"type": "string", "examples": "a"}, "output schema: examples: must be a list of JSON values"),
        ({"type": "string", "pattern": "x"}, "output schema: pattern: 'x': must start with ^ and end with $"),
        ({"type": "string", "pattern": "^\\d+$"}, "output schema: pattern: '^\\\\d+$': \\d is not supported by the engine's grammar (write [0-9])"),
        ({"allOf": [{"type": "string"}]}, "output schema: allOf: unsupported JSON Schema keyword"),
        ({"type": "object", "properties": {"a": {"type": "string", "format": "email"}}}, "output schema: properties.a.format: unsupported"),
        ({"$ref": "#/$defs/A"}, "output schema: $ref: cannot resolve '#/$defs/A'"),
        ({"$ref": "#/$defs/A/properties/b", "$defs": {"b": {}, "A": {}}}, "cannot resolve '#/$defs/A/properties/b'"),
        ({"$ref": "https://example.com/s.json"}, "output schema: $ref: cannot resolve"),
        ({"$ref": "#/$defs/A", "$defs": {"A": {"type": "array", "items": {"$ref": "#/$defs/A"}}}}, "$defs.A.items.$ref: 'A' refers to itself"),
        ({"$ref": "#/$defs/A", "$defs": {"A": {}}, "type": "string"}, "output schema: beside $ref stand only annotations"),
        ({"type": "string", "$defs": {"A": {"type": "strnig"}}}, "output schema: $defs.A.type: 'strnig' is not a JSON Schema type"),
        ({"type": "string", "$defs": []}, "output schema: $defs: must be an object of schemas"),
        ({"type": "array", "items": {"$defs": {}}}, "output schema: items.$defs: $defs may stand only at the top"),
    ],
)
def test_every_keyword_value_is_checked_when_the_agent_is_built(schema, message):
    assert refused(schema).startswith(message) or message in refused(schema)


def test_a_schema_nested_3000_levels_deep_is_refused_fast_without_a_crash():
    deep: dict = {"type": "string"}
    for _ in range(3000):
        deep = {"type": "array", "items": deep}
    start = time.perf_counter()
    assert f"nests deeper than {MAX_DEPTH} levels" in refused(deep)
    assert time.perf_counter() - start < 0.5
    loop: dict = {"type": "array"}
    loop["items"] = loop  # a dict that holds itself: the same bound
    assert f"nests deeper than {MAX_DEPTH} levels" in refused(loop)


def test_a_ref_fan_out_of_2_to_the_20_is_refused_in_well_under_a_second():
    defs = {f"a{i}": {"type": "object", "properties": {"x": {"$ref": f"#/$defs/a{i + 1}"}, "y": {"$ref": f"#/$defs/a{i + 1}"}}} for i in range(20)}
    defs["a20"] = {"type": "string"}
    start = time.perf_counter()
    assert f"expands past {MAX_NODES} schemas and values" in refused({"$ref": "#/$defs/a0", "$defs": defs})
    assert time.perf_counter() - start < 0.5
    assert "characters of text" in refused({"type": "string", "description": "x" * 300_000})
    assert f"expands past {MAX_NODES}" in refused({"enum": list(range(MAX_NODES + 1))})


def test_a_good_schema_is_inlined_closed_and_keeps_annotations_beside_a_ref():
    schema = {
        "$defs": {"City": {"type": "object", "properties": {"name": {"type": "string", "minLength": 1}}, "required": ["name"]}},
        "type": "object",
        "properties": {
            "home": {"$ref": "#/$defs/City", "description": "where you live"},
            "visits": {"type": "array", "items": {"$ref": "#/$defs/City"}, "maxItems": 3},
            "mood": {"enum": ["fine", "good", None]},
        },
        "required": ["home"],
    }
    out = normalise(schema, "output schema")
    assert "$ref" not in json.dumps(out) and "$defs" not in json.dumps(out)
    assert out["additionalProperties"] is False
    assert out["properties"]["home"] == {**normalise(schema["$defs"]["City"], "x"), "description": "where you live"}
    assert out["properties"]["home"]["additionalProperties"] is False
    assert schema["properties"]["home"] == {"$ref": "#/$defs/City", "description": "where you live"}  # the given schema is left as it was
    root = normalise({"$ref": "#/$defs/A", "$defs": {"A": {"type": "integer"}}, "title": "T"}, "output schema")
    assert root == {"type": "integer", "title": "T"}


@pytest.mark.parametrize(
    "schema, good, bad, why",
    [
        ({"enum": [1, "a"]}, 1.0, True, "final: must be one of [1, 'a']"),
        ({"const": False}, False, 0, "final: must be False"),
        ({"oneOf": [{"type": "integer"}, {"type": "number"}]}, 1.5, 2, "final: matches 2 of the choices"),
        ({"type": "number", "minimum": 0, "exclusiveMaximum": 1}, 0, 1, "final: must be < 1"),
        ({"type": "integer", "exclusiveMinimum": 0, "maximum": 9}, 9, 0, "final: must be > 0"),
        ({"type": "string", "minLength": 2, "maxLength": 3}, "abc", "a", "final: 1 characters is out of range"),
        ({"type": "object", "additionalProperties": {"type": "integer"}}, {"a": 1}, {"a": "1"}, "final.a: expected integer, got string"),
        ({"type": "array", "items": {"type": "boolean"}, "minItems": 1}, [True], [], "final: 0 items is out of range"),
        ({"type": ["string", "null"]}, None, 0, "final: expected string or null, got integer"),
    ],
)
def test_an_answer_is_checked_against_every_keyword_of_the_subset(schema, good, bad, why):
    schema = normalise(schema, "output schema")
    validate(good, schema, "final")
    with pytest.raises(ValueError) as e:
        validate(bad, schema, "final")
    assert str(e.value).startswith(why)


class Color(enum.Enum):
    red = "red"
    blue = "blue"


class Size(enum.IntEnum):
    small = 1
    large = 2


class Address(BaseModel):
    city: str = Field(description="the city", min_length=1)
    zip: Optional[str] = None


class Cat(BaseModel):
    kind: Literal["cat"]
    lives: int = Field(ge=0, le=9)


class Dog(BaseModel):
    kind: Literal["dog"]
    barks: bool


class Person(BaseModel):
    name: str
    home: Address
    work: Optional[Address] = Field(default=None, description="where they work")
    color: Color
    size: Size = Size.small
    mode: Literal["train", "car"]
    pet: Union[Cat, Dog] = Field(discriminator="kind")
    tags: list[str] = []
    scores: dict[str, int] = {}
    pair: tuple[int, str] = (0, "")


class Team(BaseModel):
    lead: Person
    members: list[Person]


PERSON = {
    "name": "Ana",
    "home": {"city": "Porto"},
    "color": "red",
    "mode": "car",
    "pet": {"kind": "cat", "lives": 7},
    "size": 2,
    "scores": {"a": 1},
    "pair": [1, "x"],
}


@pytest.mark.parametrize("model, value", [(Address, {"city": "Porto", "zip": None}), (Cat, {"kind": "cat", "lives": 1}), (Person, PERSON), (Team, {"lead": PERSON, "members": [PERSON, PERSON]})])
async def test_pydantic_models_keep_working_nested_optional_literal_enum_and_unions(model, value):
    agent = Agent(model=ScriptedModel([json.dumps({"thought": "t", "final": value})]), output=model)
    sent = json.dumps(agent.schema)
    assert "$ref" not in sent and "$defs" not in sent and "discriminator" not in sent
    answer = await agent.ask("go")
    assert answer.output == model.model_validate(value)


async def test_a_pydantic_answer_that_breaks_a_field_is_refused_and_retried():
    wrong = {**PERSON, "pet": {"kind": "cat", "lives": 12}}
    model = ScriptedModel([json.dumps({"thought": "t", "final": wrong}), json.dumps({"thought": "t", "final": PERSON})])
    events = await collect(Agent(model=model, output=Person, constrain=False).run("go"))
    (retry,) = [e for e in events if e.type == "retry"]
    assert kinds(events) == ["retry", "turn", "final"] and "pet.cat.lives" in retry.reason


def test_a_pydantic_ref_keeps_its_default_and_description():
    schema = Agent(model=ScriptedModel([]), output=Person).output.schema
    assert schema["properties"]["size"]["enum"] == [1, 2] and schema["properties"]["size"]["default"] == 1
    assert schema["properties"]["work"]["description"] == "where they work"
    assert schema["properties"]["pair"]["prefixItems"] == [{"type": "integer"}, {"type": "string"}]  # kept outside the subset: pydantic checks it
