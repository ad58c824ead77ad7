"""Tool definitions (three forms), bad definitions, input checks, results."""

from __future__ import annotations

from typing import Callable, Literal

import pytest
from pydantic import BaseModel
from tools_fixture import clock, convert, note, weather

from aerix import AerixError, Agent, ToolContext, tool
from aerix.testing import ScriptedModel
from aerix.tools import run_tool


def ctx(call_id="call_1", tool_name="t"):
    return ToolContext(signal=None, call_id=call_id, tool=tool_name)


def test_field_map_form():
    assert weather.name == "weather"
    assert weather.description == "Today's forecast for a city."
    assert weather.input_schema() == {
        "type": "object",
        "properties": {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["c", "f"]}},
        "required": ["city"],
        "additionalProperties": False,
    }


def test_decorator_form_reads_name_docstring_annotations_and_defaults():
    assert convert.name == "convert"
    assert convert.description == "Convert a distance between kilometres and miles."
    assert convert.fields["value"].type == "number" and convert.fields["value"].required
    assert convert.fields["unit"].enum == ("km", "mi")
    assert convert.fields["digits"].type == "integer" and not convert.fields["digits"].required
    assert convert.fields["digits"].description == "Decimal places"


def test_decorator_with_overrides_and_ctx():
    @tool(name="whoami", description="Says its call id.")
    def anything(ctx) -> str:
        return ctx.call_id

    assert anything.name == "whoami" and anything.fields == {}


def test_pydantic_model_form():
    assert note.fields["text"].required and note.fields["text"].description == "What to remember"
    assert note.fields["pinned"].type == "boolean" and not note.fields["pinned"].required


def test_empty_input():
    assert clock.input_schema()["properties"] == {}


async def test_run_gets_checked_input_and_ctx():
    seen = {}

    async def run(input, ctx):
        seen.update(input=input, call_id=ctx.call_id, signal=ctx.signal)
        return "done"

    t = tool(name="probe", description="Probe.", input={"n": {"type": "integer", "required": True}}, run=run)
    assert await run_tool(t, {"n": 3}, ToolContext(signal="S", call_id="call_9", tool="probe")) == ("done", False)
    assert seen == {"input": {"n": 3}, "call_id": "call_9", "signal": "S"}


async def test_optional_fields_left_out_stay_out_of_the_input():
    assert await run_tool(weather, {"city": "Porto"}, ctx()) == ("Sunny in Porto, 21°c", False)


async def test_decorated_function_gets_its_defaults():
    assert await run_tool(convert, {"value": 10, "unit": "km"}, ctx()) == ('{"value": 6.2, "unit": "mi"}', False)


async def test_non_string_results_go_through_json_dumps():
    t = tool(name="listy", description="A list.", input={}, run=lambda i, c: [1, "é", None])
    assert await run_tool(t, {}, ctx()) == ('[1, "é", null]', False)


async def test_a_result_that_is_not_json_is_an_error_result():
    t = tool(name="setty", description="A set.", input={}, run=lambda i, c: {1, 2})
    text, error = await run_tool(t, {}, ctx())
    assert error and text.startswith("error: setty returned a value that is not JSON")


@pytest.mark.parametrize(
    ("input", "fragment"),
    [
        ({}, "city: Field required"),
        ({"city": 3}, "city: Input should be a valid string"),
        ({"city": "Oslo", "unit": "k"}, "unit: Input should be 'c' or 'f'"),
        ({"city": "Oslo", "unit": None}, "unit: Input should be 'c' or 'f'"),  # null is not "left out"
        ({"city": "Oslo", "wind": True}, "wind: Extra inputs are not permitted"),
        (["Oslo"], "input must be an object, got an array"),
    ],
)
async def test_bad_input_becomes_an_error_result_naming_the_field(input, fragment):
    text, error = await run_tool(weather, input, ctx())
    assert error
    assert text.startswith("error: invalid input for weather: ")
    assert fragment in text


async def test_strict_types_no_string_to_integer_coercion():
    text, error = await run_tool(convert, {"value": 1, "unit": "km", "digits": "2"}, ctx())
    assert error and "digits" in text


async def test_a_throw_becomes_an_error_result():
    def boom(input, ctx):
        raise RuntimeError("service down")

    t = tool(name="flaky", description="Fails.", input={}, run=boom)
    assert await run_tool(t, {}, ctx()) == ("error: service down", True)


def test_run_of_one_parameter_is_called_without_ctx():
    t = tool(name="one", description="One arg.", input={}, run=lambda input: "ok")
    assert t._invoke({}, ctx()) == "ok"


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(name="Bad Name", description="d", input={}, run=lambda i, c: ""),
        dict(name="9lives", description="d", input={}, run=lambda i, c: ""),
        dict(name="x" * 65, description="d", input={}, run=lambda i, c: ""),
        dict(name="ok", description="", input={}, run=lambda i, c: ""),
        dict(name="ok", description="d", input={"a": {"type": "text"}}, run=lambda i, c: ""),
        dict(name="ok", description="d", input={"a": {"type": "string", "min": 1}}, run=lambda i, c: ""),
        dict(name="ok", description="d", input={"a": {"type": "string", "required": "yes"}}, run=lambda i, c: ""),
        dict(name="ok", description="d", input={"a": {"type": "string", "enum": []}}, run=lambda i, c: ""),
        dict(name="ok", description="d", input={"a": {"type": "integer", "enum": [1, "2"]}}, run=lambda i, c: ""),
        dict(name="ok", description="d", input={"a": {"type": "string", "enum": ["x", "x"]}}, run=lambda i, c: ""),
        dict(name="ok", description="d", input={"a b": {"type": "string"}}, run=lambda i, c: ""),
        dict(name="ok", description="d", input={"a": "string"}, run=lambda i, c: ""),
        dict(name="ok", description="d", input=["a"], run=lambda i, c: ""),
        dict(name="ok", description="d", input={}, run="not callable"),
        dict(name="ok", description="d", input={}),
    ],
)
def test_bad_definitions_raise_options_errors(kwargs):
    with pytest.raises(AerixError) as e:
        tool(**kwargs)
    assert e.value.kind == "options"


def test_bad_decorated_functions_raise_options_errors():
    with pytest.raises(AerixError, match="needs a type annotation"):

        @tool
        def untyped(city) -> str:
            """Has no annotation."""

    with pytest.raises(AerixError, match="JSON Schema cannot express"):

        @tool
        def callback(then: Callable[[], None]) -> str:
            """A function is no JSON."""

    with pytest.raises(AerixError, match="needs a non-empty description"):

        @tool
        def nodoc(city: str) -> str:
            pass

    with pytest.raises(AerixError, match="only plain named parameters"):

        @tool
        def star(*cities: str) -> str:
            """Varargs."""


async def test_pydantic_model_with_a_nested_field_is_a_rich_input():
    class Nested(BaseModel):
        where: list[str]

    t = tool(name="nested", description="d", input=Nested, run=lambda i, c: i["where"][0])
    assert t.fields == {} and t.input_schema()["properties"] == {"where": {"items": {"type": "string"}, "type": "array"}}
    assert await run_tool(t, {"where": ["Oslo"]}, ctx()) == ("Oslo", False)
    assert await run_tool(t, {"where": "Oslo"}, ctx()) == ("error: invalid input for nested: where: Input should be a valid array", True)


async def test_literal_of_mixed_types_is_a_rich_enum():
    @tool
    def mixed(x: Literal["a", 1]) -> str:
        """Mixed."""
        return repr(x)

    assert mixed.input_schema()["properties"]["x"] == {"enum": ["a", 1]}
    assert await run_tool(mixed, {"x": 1}, ctx()) == ("1", False)
    assert (await run_tool(mixed, {"x": "b"}, ctx()))[1]


def test_duplicate_tool_names_are_refused_when_the_agent_is_built():
    twin = tool(name="weather", description="Another.", input={}, run=lambda i, c: "")
    with pytest.raises(AerixError) as e:
        Agent(model=ScriptedModel([]), tools=[weather, twin])
    assert e.value.kind == "options" and "'weather'" in str(e.value)
