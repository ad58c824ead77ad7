"""Rich tool inputs (issue 27, part 1): a JSON Schema, nested pydantic models and typed functions
as a tool's input; checked by pydantic before the run, shown nested in the system message,
decoded under the whole schema."""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import Enum
from typing import Annotated, Literal, Optional

import pytest
from helpers import calls, collect, final
from pydantic import BaseModel, Field
from test_turn import golden
from tools_fixture import TOOLS
from typing_extensions import TypedDict

from aerix import AerixError, Agent, ToolContext, system_message, tool, turn_schema
from aerix.engines.openai import tools_for_llm
from aerix.testing import ScriptedModel
from aerix.tools import run_tool

ORDER_INPUT = {
    "type": "object",
    "properties": {
        "items": {
            "type": "array",
            "description": "The order's lines",
            "minItems": 1,
            "maxItems": 10,
            "items": {
                "type": "object",
                "properties": {
                    "sku": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{2}$", "description": "Stock code"},
                    "qty": {"type": "integer", "minimum": 1, "maximum": 99},
                    "gift": {"type": ["boolean", "null"]},
                },
                "required": ["sku", "qty"],
            },
        },
        "note": {"type": ["string", "null"], "maxLength": 200},
        "rush": {"type": "boolean", "default": False, "description": "Ship today"},
        "tags": {"type": "array", "items": {"type": "string", "enum": ["gift", "fragile"]}, "maxItems": 2},
        "ship_to": {"anyOf": [{"$ref": "#/$defs/address"}, {"type": "null"}]},
        "weight": {"type": "number", "exclusiveMinimum": 0},
        "extra": {"type": "object", "additionalProperties": {"type": "integer"}},
    },
    "required": ["items"],
    "$defs": {"address": {"type": "object", "properties": {"city": {"type": "string", "minLength": 1}, "zip": {"type": "string"}}, "required": ["city"]}},
}
seen: list = []
order = tool(name="order", description="Place an order.", input=ORDER_INPUT, run=lambda input: seen.append(input) or "placed")


class Mode(Enum):
    CAR = "car"
    BIKE = "bike"


class Line(BaseModel):
    sku: str = Field(description="Stock code", max_length=8)
    qty: int = Field(ge=1)


class Basket(BaseModel):
    lines: list[Line] = Field(min_length=1)
    coupon: Optional[str] = None


basket = tool(name="basket", description="Fill a basket.", input=Basket, run=lambda input: json.dumps(input))


class Stop(TypedDict):
    city: str
    nights: int


@dataclass
class Box:
    w: float
    h: float


@tool
def route(stops: Annotated[list[Stop], "Where to stop, in order"], mode: Mode = Mode.CAR, box: Optional[Box] = None, span: tuple[int, int] = (0, 1)) -> str:
    """Plan a route."""
    return repr((stops, mode, box, span))


NESTED = [order, basket, route]


def ctx() -> ToolContext:
    return ToolContext(signal=None, call_id="call_1", tool="t")


LINE = {"sku": "ABC-12", "qty": 2}


# -- what the model sees -------------------------------------------------------------------


def test_system_message_of_nested_tools_golden():
    golden("system-nested.txt", system_message("You take orders.", NESTED))


def test_turn_schema_of_nested_tools_golden():
    golden("schema-nested.json", json.dumps(turn_schema(NESTED), indent=2, ensure_ascii=False) + "\n")


def test_flat_tools_beside_nested_ones_keep_their_exact_text_and_schema():
    flat = system_message("You are a travel helper.", TOOLS)
    both = system_message("You are a travel helper.", TOOLS + NESTED)
    assert both.startswith(flat.rstrip("\n") + "\n")  # the flat tools' sections come first, unchanged
    flat_calls = turn_schema(TOOLS)["anyOf"][0]["properties"]["calls"]["items"]["anyOf"]
    assert turn_schema(TOOLS + NESTED)["anyOf"][0]["properties"]["calls"]["items"]["anyOf"][: len(TOOLS)] == flat_calls


def test_the_turn_schema_carries_each_tool_s_whole_schema_closed_and_inlined():
    shape = turn_schema([order])["anyOf"][0]["properties"]["calls"]["items"]["properties"]["input"]
    assert shape == order.input_schema() and "$defs" not in json.dumps(shape)
    item = shape["properties"]["items"]["items"]
    assert item["additionalProperties"] is False and item["properties"]["sku"]["pattern"] == "^[A-Z]{3}-[0-9]{2}$"
    assert shape["properties"]["ship_to"]["anyOf"][0] == {
        "type": "object",
        "properties": {"city": {"type": "string", "minLength": 1}, "zip": {"type": "string"}},
        "required": ["city"],
        "additionalProperties": False,
    }
    assert "title" not in json.dumps(basket.input_schema())  # pydantic's generated titles are dropped


def test_tools_for_llm_sends_the_same_schemas():
    assert [spec["function"]["parameters"] for spec in tools_for_llm(NESTED)] == [t.input_schema() for t in NESTED]


# -- checking an input ---------------------------------------------------------------------


async def test_a_valid_nested_input_reaches_the_run_as_plain_json():
    seen.clear()
    value = {"items": [LINE, {"sku": "XYZ-99", "qty": 1, "gift": None}], "note": None, "ship_to": {"city": "Oslo"}, "weight": 2, "extra": {"a": 1}}
    assert await run_tool(order, value, ctx()) == ("placed", False)
    assert seen == [{**value, "weight": 2.0}]


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ({"items": [LINE, LINE, {"sku": "ABC-12", "qty": 0}]}, "items[2].qty: Input should be greater than or equal to 1"),
        ({"items": [{"sku": "ABC-12", "qty": "5"}]}, "items[0].qty: Input should be a valid integer"),
        ({"items": [{"sku": "ABC-12", "qty": True}]}, "items[0].qty: Input should be a valid integer"),
        ({"items": [{"sku": "ABC-12", "qty": 2.0}]}, "items[0].qty: Input should be a valid integer"),
        ({"items": [{"sku": "ABC-12"}]}, "items[0].qty: Field required"),
        ({"items": [{**LINE, "colour": "red"}]}, "items[0].colour: Extra inputs are not permitted"),
        ({"items": [{"sku": "abc-12", "qty": 1}]}, "items[0].sku: String should match pattern '^[A-Z]{3}-[0-9]{2}$'"),
        ({"items": [{**LINE, "gift": "yes"}]}, "items[0].gift: Input should be boolean or null"),
        ({"items": []}, "items: List should have at least 1 item after validation, not 0"),
        ({"items": [LINE] * 11}, "items: List should have at most 10 items after validation, not 11"),
        ({"items": (LINE,)}, "items: Input should be a valid list"),
        ({"items": [LINE], "note": "x" * 201}, "note: String should have at most 200 characters"),
        ({"items": [LINE], "tags": ["gift", "urgent"]}, "tags[1]: Input should be 'gift' or 'fragile'"),
        ({"items": [LINE], "ship_to": {"zip": "0150"}}, "ship_to.city: Field required"),
        ({"items": [LINE], "ship_to": {"city": ""}}, "ship_to.city: String should have at least 1 character"),
        ({"items": [LINE], "ship_to": "Oslo"}, "ship_to: Input should be object or null"),
        ({"items": [LINE], "weight": 0}, "weight: Input should be greater than 0"),
        ({"items": [LINE], "extra": {"a": "1"}}, "extra.a: Input should be a valid integer"),
        ({"items": [LINE], "extra": {"a b": 1.5}}, 'extra["a b"]: Input should be a valid integer'),
        ({}, "items: Field required"),
        ({"items": [LINE], "Items": [LINE]}, "Items: Extra inputs are not permitted"),
    ],
)
async def test_a_bad_input_is_the_result_error_path_message(value, text):
    result, error = await run_tool(order, value, ctx())
    assert error and result == f"error: invalid input for order: {text}"


async def test_many_problems_are_listed_up_to_ten():
    result, error = await run_tool(order, {"items": [{"sku": "x", "qty": 0}] * 8}, ctx())
    assert error and result.count("items[") == 10 and result.endswith("; and 6 more")


async def test_a_bad_nested_input_does_not_end_the_run():
    model = ScriptedModel([calls(("order", {"items": [{"sku": "ABC-12", "qty": 0}]})), calls(("order", {"items": [LINE]})), final("ordered")])
    events = await collect(Agent(model=model, tools=[order]).run("buy"))
    results = [e for e in events if e.type == "result"]
    assert [r.error for r in results] == [True, False]
    assert results[0].text == "error: invalid input for order: items[0].qty: Input should be greater than or equal to 1"
    assert events[-1].type == "final" and events[-1].text == "ordered"


async def test_a_pydantic_model_input_is_checked_strictly_and_the_run_gets_its_dump():
    good = {"lines": [{"sku": "A1", "qty": 3}]}
    assert await run_tool(basket, good, ctx()) == ('{"lines": [{"sku": "A1", "qty": 3}], "coupon": null}', False)
    for value, text in [
        ({"lines": []}, "lines: List should have at least 1 item after validation, not 0"),
        ({"lines": [{"sku": "A1", "qty": "3"}]}, "lines[0].qty: Input should be a valid integer"),
        ({"lines": [{"sku": "A" * 9, "qty": 3}]}, "lines[0].sku: String should have at most 8 characters"),
        ({"lines": [{"sku": "A1", "qty": 3}], "coupon": 5}, "coupon: Input should be a valid string"),
    ]:
        assert await run_tool(basket, value, ctx()) == (f"error: invalid input for basket: {text}", True)


async def test_a_typed_function_gets_typed_dicts_enums_dataclasses_and_tuples():
    value = {"stops": [{"city": "Porto", "nights": 2}], "mode": "bike", "box": {"w": 1, "h": 2.5}, "span": [3, 4]}
    text, error = await run_tool(route, value, ctx())
    assert not error and text == repr(([{"city": "Porto", "nights": 2}], Mode.BIKE, Box(1.0, 2.5), (3, 4)))
    assert await run_tool(route, {"stops": []}, ctx()) == (repr(([], Mode.CAR, None, (0, 1))), False)
    bad = {"stops": [{"city": "Porto", "nights": "2"}], "mode": "walk", "span": [1, 2, 3]}
    text, error = await run_tool(route, bad, ctx())
    assert error and text == (
        "error: invalid input for route: stops[0].nights: Input should be a valid integer; mode: Input should be 'car' or 'bike'; "
        "span: Tuple should have at most 2 items after validation, not 3"
    )
    assert route.input_schema()["properties"]["stops"]["description"] == "Where to stop, in order"


def test_flat_forms_stay_flat():
    for t in TOOLS:
        assert t.rich is None and t.fields or t.name == "clock"

    @tool
    def bounded(n: Annotated[int, Field(ge=1)]) -> str:
        """A constraint makes a rich input."""
        return str(n)

    assert bounded.rich is not None and bounded.input_schema()["properties"]["n"] == {"minimum": 1, "type": "integer"}


# -- the field map's entries and the page's tools ------------------------------------------


async def test_a_field_map_entry_may_be_any_property_schema():
    # web/aerix.mjs's example: input: { xs: { type: "array", items: { type: "number" } } }
    total = tool(name="sum", description="Add numbers.", input={"xs": {"type": "array", "items": {"type": "number"}, "required": True}}, run=lambda i: sum(i["xs"]))
    assert total.input_schema() == {"type": "object", "properties": {"xs": {"type": "array", "items": {"type": "number"}}}, "required": ["xs"], "additionalProperties": False}
    assert await run_tool(total, {"xs": [1, 2.5]}, ctx()) == ("3.5", False)
    assert await run_tool(total, {"xs": [1, "2"]}, ctx()) == ("error: invalid input for sum: xs[1]: Input should be a valid number", True)


def test_a_javascript_tool_takes_the_same_json_schema():
    from aerix import page_options

    spec = {"name": "order", "description": "Place an order.", "input": ORDER_INPUT, "run": lambda input, ctx: "placed"}
    js_tool = page_options._js_tool(spec)
    assert js_tool.input_schema() == order.input_schema()
    assert js_tool.check({"items": [LINE]}) == {"items": [LINE]}


# -- what is refused when the tool is defined ----------------------------------------------


def refused(input) -> str:
    with pytest.raises(AerixError) as e:
        tool(name="t", description="d", input=input, run=lambda i: "")
    assert e.value.kind == "options"
    return e.value.message


def obj(**properties) -> dict:
    return {"type": "object", "properties": properties}


@pytest.mark.parametrize(
    ("input", "message"),
    [
        (obj(a={"type": "string", "format": "email"}), "tool 't' input: properties.a.format: unsupported JSON Schema keyword"),
        (obj(a={"type": "array", "uniqueItems": True}), "tool 't' input: properties.a.uniqueItems: unsupported JSON Schema keyword"),
        (obj(a={"allOf": [{"type": "string"}]}), "tool 't' input: properties.a.allOf: unsupported JSON Schema keyword"),
        (obj(a={"type": "string", "pattern": "[a-z]+"}), "tool 't' input: properties.a.pattern: '[a-z]+': must start with ^ and end with $"),
        (obj(a={"type": "string", "pattern": "^\\w+$"}), "tool 't' input: properties.a.pattern: '^\\\\w+$': \\w is not supported by the engine's grammar"),
        (obj(a={"oneOf": [{"type": "string"}, {"type": "null"}]}), "tool 't' input: properties.a.oneOf: oneOf is not supported in a tool's input"),
        (obj(a={"type": "string", "anyOf": [{"minLength": 1}]}), "tool 't' input: properties.a: anyOf with ['type'] beside it is not supported"),
        (obj(a={"minLength": 1}), "tool 't' input: properties.a.minLength: needs a type it applies to (string)"),
        (obj(a={"type": "integer", "minLength": 1}), "tool 't' input: properties.a.minLength: needs a type it applies to (string)"),
        (obj(a={"type": "integer", "minimum": 1, "default": 0}), "tool 't' input: properties.a.default: 0 does not fit its schema"),
        ({**obj(a={"type": "string"}), "additionalProperties": {"type": "string"}}, "tool 't' input: additionalProperties: a schema here beside properties"),
        ({"type": "array", "items": {"type": "string"}}, "tool 't' input: a tool's input schema must be \"type\": \"object\", got \"array\""),
        ({"type": "object", "properties": {"a": {"$ref": "#/$defs/n"}}, "$defs": {"n": {"type": "object", "properties": {"next": {"$ref": "#/$defs/n"}}}}}, "'n' refers to itself"),
        ({"type": "object", "properties": {"a": {"type": "strnig"}}}, "tool 't' input: properties.a.type: 'strnig' is not a JSON Schema type"),
        ({"a": {"type": "array", "items": {"type": "number"}, "required": "yes"}}, "tool 't' field 'a': required must be true or false, got 'yes'"),
        ({"a": {"type": "array"}, "b": "string"}, "tool 't' field 'b' must be a dict like {'type': 'string'}, got str"),
        ({"a": {"type": "string", "min": 1}}, "tool 't' input: properties.a.min: unsupported JSON Schema keyword"),
    ],
)
def test_what_a_tool_input_cannot_hold_is_an_options_error_naming_it(input, message):
    assert message in refused(input)


def test_nesting_and_size_are_bounded():
    deep: dict = {"type": "string"}
    for _ in range(40):
        deep = {"type": "array", "items": deep}
    assert "nests deeper than 32 levels" in refused(obj(a=deep))
    fan = {"$defs": {"l0": {"type": "string"}}}
    for i in range(1, 16):
        fan["$defs"][f"l{i}"] = {"type": "array", "items": {"anyOf": [{"$ref": f"#/$defs/l{i - 1}"}, {"$ref": f"#/$defs/l{i - 1}"}]}}
    assert "expands past 5000 schemas and values" in refused({**obj(a={"$ref": "#/$defs/l15"}), **fan})


def test_a_recursive_model_is_refused():
    class Node(BaseModel):
        name: str
        children: list[Node] = []

    assert "refers to itself" in refused(Node)


# -- patterns: the grammar's subset --------------------------------------------------------


@pytest.mark.parametrize("pattern", ["^$", "^[A-Z]{3}-[0-9]{2}$", "^(a|b)+$", "^(?:x|yz){1,3}$", "^[a-z-]+$", "^[-+]?[0-9]+$", "^[^a-c]*$", "^\\.\\(\\)$", "^.{1,20}$", "^[\\]]$", "^(é)+$", "^é$"])
def test_a_pattern_the_grammar_holds_is_accepted(pattern):
    t = tool(name="t", description="d", input=obj(a={"type": "string", "pattern": pattern}), run=lambda i: "")
    assert t.input_schema()["properties"]["a"]["pattern"] == pattern


@pytest.mark.parametrize(
    ("pattern", "why"),
    [
        ("abc", "must start with ^ and end with $"),
        ("^a|b$", "| at the top of the pattern: write ^(a|b)$"),
        ("^\\d{3}$", "\\d is not supported by the engine's grammar (write [0-9])"),
        ("^(?=a)a$", "look-arounds, flags and named groups are not supported"),
        ("^(a)\\1$", "the escape \\1 is not supported"),
        ("^a+?$", "a quantifier after a quantifier"),
        ("^a{2,1}$", "has its maximum below its minimum"),
        ("^a{1001}$", "a repetition above 1000"),
        ('^a"b$', '" cannot stand in a pattern'),
        ("^a\\\\b$", "the escape \\\\ is not supported"),
        ("^é+$", "put the character in a group, (é)"),
        ("^[z-a]$", "the range z-a runs backwards"),
        ("^[a-c-e]$", "a literal - stands first or last"),
        ("^[[:alpha:]]$", "nested classes and set operations are not supported"),
        ("^(a|)$", "an empty choice"),
        ("^x^$", "^ may stand only at the pattern's start"),
        ("^a)$", "unbalanced )"),
    ],
)
def test_a_pattern_the_grammar_cannot_hold_is_refused_saying_why(pattern, why):
    assert why in refused(obj(a={"type": "string", "pattern": pattern}))


def test_a_pydantic_pattern_is_held_to_the_same_rule_for_inputs_and_answers():
    class Code(BaseModel):
        code: str = Field(pattern="[A-Z]+")  # unanchored: llama.cpp's converter would fail every request

    assert "properties.code.pattern: '[A-Z]+': must start with ^ and end with $" in refused(Code)
    with pytest.raises(AerixError) as e:
        Agent(model=ScriptedModel([]), output=Code)
    assert e.value.kind == "options" and "must start with ^ and end with $" in e.value.message
