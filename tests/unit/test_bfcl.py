"""`make bfcl` (bench/bfcl*.py) without a real model: the conversion of BFCL's function docs,
the names there and back, the first accepted turn (an aerix.evals case stopped there, run by
evals.run), the scoring by BFCL's own checker (the case's check, through evals.score), and the
harness end to end on a fake llama-server. The functions and questions written here are made up;
the tests that read BFCL's data take it from the pinned wheel's unpacked copy (make bfcl-data).
CPython only: the harness is not part of the package.
"""

from __future__ import annotations

import asyncio
import json
import stat
import sys
import textwrap
from pathlib import Path

import pytest

if sys.platform == "emscripten":
    pytest.skip("the benchmark harness runs on CPython", allow_module_level=True)

from aerix import AerixError, tool
from aerix.engines.openai.transports import MockTransport, replay
from aerix.testing import Reply, ScriptedModel
from bench import bfcl, bfcl_agent, bfcl_data
from aerix import evals
from bench.bfcl_score import question_case, scored, summary, table, verdict

# A made-up function with every kind of parameter BFCL's docs have.
EVERYTHING = {
    "name": "Garden.plan_beds",
    "description": "Plan raised beds for a garden.",
    "parameters": {
        "type": "dict",
        "properties": {
            "beds": {"type": "integer", "description": "How many beds."},
            "width": {"type": "float", "description": "Bed width in metres.", "default": 1.2},
            "soil": {"type": "string", "enum": ["loam", "clay"], "default": "loam"},
            "covered": {"type": "boolean", "default": "no", "optional": True},
            "corner": {"type": "tuple", "items": {"type": "float"}, "description": "x and y."},
            "crops": {"type": "array", "items": {"type": "string", "enum": ["kale", "leek"]}, "minItems": 1},
            "budget": {"type": "dict", "properties": {"low": {"type": "float"}, "high": {"type": "float"}}, "required": ["low"]},
            "extras": {"type": "dict", "description": "Anything else, by name."},
            "seed_mix": {"type": "any", "description": "Whatever the supplier takes."},
            "start": {"type": "string", "format": "date"},
            "depth": {"type": "integer", "maximum": 60},
        },
        "required": ["beds", "corner"],
        "optional": ["covered"],
    },
}

FLAT = {
    "name": "kettle.boil",
    "description": "Boil water in a kettle.",
    "parameters": {
        "type": "dict",
        "properties": {
            "litres": {"type": "float", "description": "How much water."},
            "whistle": {"type": "boolean", "description": "Whistle when done.", "default": True},
            "mode": {"type": "string", "enum": ["eco", "fast"]},
        },
        "required": ["litres"],
    },
}
TEA = {"name": "tea.steep", "description": "Steep tea leaves.", "parameters": {"type": "dict", "properties": {"minutes": {"type": "integer"}}, "required": ["minutes"]}}


def turn(*calls, thought="t"):
    return json.dumps({"thought": thought, "calls": [{"tool": t, "input": i} for t, i in calls]})


def final(text="no tool fits"):
    return json.dumps({"thought": "t", "final": text})


# -- the conversion ------------------------------------------------------------------------------


def test_a_function_doc_becomes_standard_json_schema_and_what_cannot_be_kept_is_named():
    schema, notes = bfcl_agent.json_schema(EVERYTHING["parameters"], where="Garden.plan_beds")
    assert schema == {
        "type": "object",
        "properties": {
            "beds": {"type": "integer", "description": "How many beds."},
            "width": {"type": "number", "description": "Bed width in metres.", "default": 1.2},
            "soil": {"type": "string", "enum": ["loam", "clay"], "default": "loam"},
            "covered": {"type": "boolean"},
            "corner": {"type": "array", "items": {"type": "number"}, "description": "x and y."},
            "crops": {"type": "array", "items": {"type": "string", "enum": ["kale", "leek"]}, "minItems": 1},
            "budget": {"type": "object", "properties": {"low": {"type": "number"}, "high": {"type": "number"}}, "required": ["low"]},
            "extras": {"type": "object", "additionalProperties": True, "description": "Anything else, by name."},
            "seed_mix": {"description": "Whatever the supplier takes."},
            "start": {"type": "string"},
            "depth": {"type": "integer", "maximum": 60},
        },
        "required": ["beds", "corner"],
    }
    assert notes == [
        "Garden.plan_beds.covered: default 'no' left out (default: expected boolean, got string)",
        "Garden.plan_beds.start: format 'date' left out (not in aerix's JSON Schema subset)",
    ]
    made = tool(name="plan", description="Plan.", input=schema, run=lambda i: "")  # aerix takes all of it
    assert made.rich is not None and made.rich.check({"beds": 2, "corner": [1, 2.5], "extras": {"any": [1]}, "seed_mix": None})


@pytest.mark.parametrize("spec, kept, note", [
    ({"type": "string", "enum": ["a", "b"], "default": "c"}, {"type": "string", "enum": ["a", "b"]}, "default 'c' left out (default: must be one of ['a', 'b'])"),
    ({"type": "string", "default": None}, {"type": "string"}, "default None left out (null is not of type string)"),
    ({"type": "array", "items": {"type": "integer"}, "default": [1, "x"]}, {"type": "array", "items": {"type": "integer"}}, "default [1, 'x'] left out (default[1]: expected integer, got string)"),
    ({"type": "any", "default": None}, {"description": "any JSON value", "default": None}, None),
    ({"type": "array", "items": {"type": "integer", "minItems": 5, "maxItems": 9}}, {"type": "array", "items": {"type": "integer"}},
     "a[]: minItems 5 on a integer left out (it applies to array)"),
    ({"type": "dict", "properties": {"x": {"type": "string"}}, "required": ["x", "y"]},
     {"type": "object", "properties": {"x": {"type": "string"}}, "required": ["x"]}, "parameters.a: required 'y' is no property, left out"),
])  # fmt: skip
def test_what_aerix_would_refuse_is_left_out_with_a_note_and_the_rest_is_a_tool(spec, kept, note):
    schema, notes = bfcl_agent.json_schema({"type": "dict", "properties": {"a": spec}, "required": []})
    assert schema["properties"]["a"] == kept
    assert (notes[0] if notes else None) is None if note is None else note in notes[0], notes
    tool(name="t", description="T.", input=schema, run=lambda i: "")


def test_the_top_levels_default_is_left_out_with_a_note_and_numbers_take_integers():
    schema, notes = bfcl_agent.json_schema({"type": "dict", "properties": {"x": {"type": "float", "default": 2}}, "required": [], "default": "x"})
    assert schema["properties"]["x"] == {"type": "number", "default": 2}
    assert notes == ["parameters: default 'x' of the whole input left out"]


@pytest.mark.parametrize("parameters, words", [
    ({"type": "string", "properties": {}}, "type must be dict"),
    ({"type": "dict", "properties": {}, "required": [], "strict": True}, "unknown key(s) ['strict']"),
    ({"type": "dict", "properties": {"a": {"type": "complex"}}, "required": []}, "parameters.a: unknown type 'complex'"),
    ({"type": "dict", "properties": {"a": {"type": "string", "pattern": "x"}}, "required": []}, "parameters.a: unknown key(s) ['pattern']"),
    ({"type": "dict", "properties": {"a": {"type": "string", "items": {"type": "string"}}}, "required": []}, "items on a string"),
    ({"type": "dict", "properties": {"a": {"type": "array", "items": {"type": "set"}}}, "required": []}, "parameters.a[]: unknown type 'set'"),
    ({"type": "dict", "properties": {"a": {"type": "string", "properties": {}}}, "required": []}, "properties on a string"),
    ({"type": "dict", "properties": {"a": "string"}, "required": []}, "parameters.a: must be an object"),
    ({"type": "dict", "properties": {}, "required": "a"}, "required must be a list of names"),
])  # fmt: skip
def test_what_the_converter_does_not_know_is_refused_by_name(parameters, words):
    with pytest.raises(bfcl_agent.Unconvertible) as e:
        bfcl_agent.json_schema(parameters)
    assert words in str(e.value)


def test_names_map_to_aerixs_pattern_one_for_one_and_back():
    names = bfcl_agent.tool_names(["math.Factorial", "math_factorial", "3d.print", "a" * 70, "a" * 70 + ".x", "math-factorial"])
    assert names == {
        "math_factorial": "math.Factorial",
        "math_factorial_2": "math_factorial",
        "f_3d_print": "3d.print",
        "a" * 64: "a" * 70,
        "a" * 62 + "_2": "a" * 70 + ".x",
        "math_factorial_3": "math-factorial",
    }


def test_every_function_is_a_tool_whose_input_is_its_json_schema():
    tools, names, notes = bfcl_agent.tools_for([FLAT, TEA, EVERYTHING])
    assert [t.name for t in tools] == ["kettle_boil", "tea_steep", "garden_plan_beds"]
    assert names == {"kettle_boil": "kettle.boil", "tea_steep": "tea.steep", "garden_plan_beds": "Garden.plan_beds"}
    assert len(notes) == 2  # EVERYTHING's, as above
    schema = tools[0].input_schema()
    assert schema["required"] == ["litres"]
    assert {k: v["type"] for k, v in schema["properties"].items()} == {"litres": "number", "whistle": "boolean", "mode": "string"}
    assert schema["properties"]["mode"]["enum"] == ["eco", "fast"] and schema["properties"]["whistle"]["default"] is True
    assert tools[2].input_schema()["properties"]["budget"]["additionalProperties"] is False  # a dict with properties is closed


# -- the first accepted turn ---------------------------------------------------------------------


def first(model, functions=(FLAT, TEA), prompt="Boil a litre, then steep for 3 minutes."):
    tools, names, _ = bfcl_agent.tools_for(list(functions))
    record = asyncio.run(bfcl_agent.first_turn(bfcl_agent.agent_for(model, tools), prompt))
    return record, bfcl_agent.bfcl_calls(record, names)


def test_the_run_stops_at_the_first_accepted_turn_and_its_calls_come_back_in_bfcls_names():
    model = ScriptedModel(["{not json", turn(("kettle_boil", {"litres": 1.0, "mode": "eco"}), ("tea_steep", {"minutes": 3})), final("never asked")])
    record, calls = first(model)
    assert len(model.calls) == 2, "asked again after the accepted turn"
    assert calls == [{"kettle.boil": {"litres": 1.0, "mode": "eco"}}, {"tea.steep": {"minutes": 3}}]
    assert isinstance(calls[0]["kettle.boil"]["litres"], float) and isinstance(calls[1]["tea.steep"]["minutes"], int)
    assert record["retries"] and record["retries"][0].startswith("bad json") and record["end"] is None
    assert len(record["usage"]) == 2 and all(len(u) == 3 for u in record["usage"])
    assert record["seconds"] >= 0


def test_each_generation_is_greedy_under_the_turn_schema():
    model = ScriptedModel([final()])
    first(model)
    options = model.calls[0].options
    assert options["generation"] == {"temperature": 0}
    names = {shape["properties"]["tool"]["const"] for shape in options["constraint"]["anyOf"][0]["properties"]["calls"]["items"]["anyOf"]}
    assert names == {"kettle_boil", "tea_steep"}


def test_a_final_is_a_turn_without_calls_and_a_run_that_never_gets_a_turn_has_none():
    record, calls = first(ScriptedModel([final()]))
    assert calls == [] and record["turn"]["calls"] == []
    record, calls = first(ScriptedModel(["nope"] * 3))
    assert calls is None and record["turn"] is None and record["end"]["reason"] == "retries" and len(record["retries"]) == 3


def test_a_cut_turn_is_retried_and_an_unknown_tool_refused_before_the_accepted_one():
    model = ScriptedModel([Reply('{"thought": "long', finish_reason="length"), turn(("kettle", {})), turn(("tea_steep", {"minutes": 4}))])
    record, calls = first(model)
    assert calls == [{"tea.steep": {"minutes": 4}}] and len(record["retries"]) == 2


def test_unknown_variants_are_refused():
    with pytest.raises(ValueError, match="unknown variant 'x'"):
        bfcl_agent.agent_for(ScriptedModel([]), [], "x")


def sse(text: str) -> str:
    frames = [{"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]},
              {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
              {"choices": [], "usage": {"prompt_tokens": 321, "completion_tokens": 12, "prompt_tokens_details": {"cached_tokens": 0}}}]  # fmt: skip
    return "".join(f"data: {json.dumps(f)}\n\n" for f in frames) + "data: [DONE]\n\n"


def test_natively_the_request_is_the_pages_turn_schema_greedy_over_the_openai_path():
    from aerix import OpenAIModel

    transport = MockTransport(lambda request: replay(sse(turn(("tea_steep", {"minutes": 2})))))
    model = OpenAIModel("http://server.test/v1", "m", transport=transport)
    entry = {"id": "x_0", "question": [[{"role": "user", "content": "Steep for two minutes."}]], "function": [FLAT, TEA]}
    record = asyncio.run(bfcl_agent.question_record(model, "multiple", entry))
    body = transport.requests[0].json()
    assert body["temperature"] == 0 and body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["name"] == "turn" and body["response_format"]["json_schema"]["strict"] is True
    assert body["messages"][-1] == {"role": "user", "content": "Steep for two minutes."}
    assert record["calls"] == [{"tea.steep": {"minutes": 2}}] and record["usage"] == [[321, 12, 0]]
    assert record["names"] == {"kettle_boil": "kettle.boil", "tea_steep": "tea.steep"}


# -- scoring, by BFCL's own checker ------------------------------------------------------------------


@pytest.fixture(scope="module")
def checker(bfcl_data_root):
    return bfcl_data.checker()


KETTLE_ENTRY = {"id": "k", "function": [FLAT, TEA]}
KETTLE_ANSWER = [{"kettle.boil": {"litres": [1.0, 1.5], "whistle": ["", True], "mode": ["", "eco"]}}]
BOTH_ANSWER = [{"kettle.boil": {"litres": [1.0], "whistle": [""], "mode": [""]}}, {"tea.steep": {"minutes": [3]}}]


@pytest.mark.parametrize("category, calls, answer, valid, error_type", [
    ("simple_python", [{"kettle.boil": {"litres": 1}}], KETTLE_ANSWER, True, None),
    ("simple_python", [{"kettle.boil": {"litres": 1.5, "mode": "ECO"}}], KETTLE_ANSWER, True, None),
    ("simple_python", [{"kettle.boil": {"litres": 2.0}}], KETTLE_ANSWER, False, "value_error:others"),
    ("simple_python", [{"kettle_boil": {"litres": 1.0}}], KETTLE_ANSWER, False, "simple_function_checker:wrong_func_name"),
    ("simple_python", [{"kettle.boil": {"mode": "eco"}}], KETTLE_ANSWER, False, "simple_function_checker:missing_required"),
    ("simple_python", [{"kettle.boil": {"litres": "1"}}], KETTLE_ANSWER, False, "type_error:simple"),
    ("simple_python", [], KETTLE_ANSWER, False, "ast_decoder:decoder_failed"),
    ("simple_python", None, KETTLE_ANSWER, False, "aerix:no_turn"),
    ("multiple", [{"kettle.boil": {"litres": 1.0}}], KETTLE_ANSWER, True, None),
    ("parallel_multiple", [{"tea.steep": {"minutes": 3}}, {"kettle.boil": {"litres": 1.0}}], BOTH_ANSWER, True, None),
    ("parallel_multiple", [{"tea.steep": {"minutes": 3}}], BOTH_ANSWER, False, "parallel_function_checker_no_order:wrong_count"),
    ("irrelevance", [], None, True, None),
    ("irrelevance", [{"tea.steep": {"minutes": 3}}], None, False, "irrelevance_error:decoder_success"),
])  # fmt: skip
def test_bfcls_checker_scores_the_calls_in_its_own_names(checker, category, calls, answer, valid, error_type):
    record = {"calls": calls, "end": {"reason": "retries", "message": "3 bad turns"} if calls is None else None}
    out = verdict(category, KETTLE_ENTRY, answer, record, checker)
    assert (out["valid"], out["error_type"]) == (valid, error_type), out
    # the same turn, logged as the harness logs it, scored through its evals case: the same verdict
    logged = logged_record(category, calls)
    again, result = scored(logged, {**KETTLE_ENTRY, "question": [[{"role": "user", "content": "Boil."}]]}, answer, checker)
    assert (again["valid"], again["error_type"], again["error"]) == (valid, error_type, out["error"]) and result.passed is valid
    assert result.reasons == ([] if valid else [f"bfcl: {error_type}: {out['error'][0]}"] if calls is not None else
                              ["ending: end:retries: 3 bad turns", f"bfcl: aerix:no_turn: {out['error'][0]}"])  # fmt: skip


def logged_record(category, calls, seconds=1.0, prompt_tokens=100):
    """A question's record as bfcl_agent.question_record logs it, for a first turn with these
    calls in BFCL's names (each tool named t0, t1... and mapped back), or None: no turn."""
    turn = None if calls is None else {"thought": "t", "calls": [{"tool": f"t{i}", "input": given} for i, c in enumerate(calls) for given in c.values()]}
    names = {} if calls is None else {f"t{i}": name for i, c in enumerate(calls) for name in c}
    end = {"type": "end", "reason": "retries", "message": "3 bad turns"} if calls is None else None
    return {"id": "k", "category": category, "variant": "default", "names": names, "turn": turn, "end": end,
            "usage": [[prompt_tokens, 5, 0]], "retries": [], "seconds": seconds, "calls": calls}  # fmt: skip


def test_a_question_is_an_evals_case_stopped_at_its_first_turn_and_checked_by_bfcls_checker(checker):
    entry = {**KETTLE_ENTRY, "question": [[{"role": "user", "content": "Boil a litre."}]]}
    case = question_case("simple_python", entry, KETTLE_ANSWER, checker, {"names": {"kettle_boil": "kettle.boil", "tea_steep": "tea.steep"}})
    assert (case.prompt, case.name, case.stop_after, [c.__name__ for c in case.checks]) == ("Boil a litre.", "k", "turn", ["bfcl"])
    tools, _, _ = bfcl_agent.tools_for(entry["function"])
    model = ScriptedModel(["{", turn(("kettle_boil", {"litres": 2.0})), final("never asked")])
    report = asyncio.run(evals.run([case], lambda: bfcl_agent.agent_for(model, tools)))
    (result,) = report.results
    assert len(model.calls) == 2 and result.outcome.ending == "turn" and result.outcome.results == ()
    assert result.reasons == ["bfcl: value_error:others: Invalid value for parameter 'litres': 2.0. Expected one of [1.0, 1.5]."]
    # what is logged of that run is scored again as it ran
    record = {"id": "k", "category": "simple_python", "names": {"kettle_boil": "kettle.boil"}, **bfcl_agent.turn_record(result.outcome)}
    again, rescored = scored(record, entry, KETTLE_ANSWER, checker)
    assert (rescored.passed, rescored.reasons, rescored.outcome.tokens) == (False, result.reasons, result.outcome.tokens)
    assert again["error_type"] == "value_error:others" and again["valid"] is False


def test_what_aerix_could_not_express_is_wrong_and_counted_apart(checker):
    out = verdict("simple_python", KETTLE_ENTRY, KETTLE_ANSWER, {"unexpressed": "options: no", "calls": None}, checker)
    assert out == {"valid": False, "error_type": "aerix:unexpressed", "error": ["options: no"]}
    entry = {**KETTLE_ENTRY, "question": [[{"role": "user", "content": "Boil."}]]}
    results = [scored(logged_record("simple_python", calls), entry, KETTLE_ANSWER, checker)
               for calls in ([{"kettle.boil": {"litres": 1.0}}], [{"kettle.boil": {"litres": 9.0}}])]  # fmt: skip
    unexpressed = {"id": "k", "category": "irrelevance", "variant": "default", "unexpressed": "options: no", "fingerprint": "unexpressed: options: no", "calls": None}
    results.append(scored(unexpressed, entry, None, checker))
    assert results[2][0]["error_type"] == "aerix:unexpressed" and results[2][1].reasons[1] == "bfcl: aerix:unexpressed: options: no"
    s = summary(results, ["simple_python", "irrelevance"])
    assert s["simple_python"] == {"questions": 2, "right": 1, "accuracy": 0.5, "unexpressed": 0.0, "no_turn": 0, "seconds_median": 1.0, "prompt_tokens_median": 100}
    assert (s["irrelevance"]["unexpressed"], s["all"]["questions"], s["all"]["right"]) == (1.0, 3, 1)
    assert "| simple_python | 2 | 50.0% (1) | 0.0% | 0 | 1.00 | 100 |" in table("m", s)


def test_a_question_without_a_possible_answer_is_the_harnesss_bug_said_not_scored(checker):
    entry = {**KETTLE_ENTRY, "question": [[{"role": "user", "content": "Boil."}]]}
    with pytest.raises(RuntimeError, match="k: BFCL's check did not run: raised KeyError"):
        scored(logged_record("simple_python", [{"kettle.boil": {"litres": 1.0}}]), entry, None, checker)


def oracle_calls(entry: dict, answer: list[dict]) -> list[dict]:
    """The calls a perfect model makes for a ground truth: each parameter's first possible value,
    an optional one (whose possible values include "") left out unless the function requires
    it; dicts and lists of dicts unwrapped."""
    required = {f["name"]: f["parameters"]["required"] for f in entry["function"]}

    def given(params: dict, needed: tuple = ()) -> dict:
        return {k: value(next(o for o in options if o != "")) for k, options in params.items() if "" not in options or k in needed}

    def value(v):
        if isinstance(v, dict):
            return given(v)
        if isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
            return [given(x) for x in v]
        return v

    return [{name: given(params, tuple(required[name]))} for call in answer for name, params in call.items()]


def test_the_checker_takes_a_perfect_models_calls_for_every_question_of_the_wheel(checker):
    for category in bfcl_data.CATEGORIES[:4]:
        answers = bfcl_data.answers(category)
        for entry in bfcl_data.questions(category):
            out = verdict(category, entry, answers[entry["id"]], {"calls": oracle_calls(entry, answers[entry["id"]])}, checker)
            assert out["valid"], (entry["id"], out)


def test_every_question_of_the_five_categories_converts_and_is_one_user_message(checker):
    for category in bfcl_data.CATEGORIES:
        for entry in bfcl_data.questions(category):
            assert bfcl_agent.prompt_of(entry)
            names = bfcl_agent.tool_names([f["name"] for f in entry["function"]])
            assert sorted(names.values()) == sorted(f["name"] for f in entry["function"])
            for f in entry["function"]:
                _, notes = bfcl_agent.json_schema(f["parameters"], f["name"])
                assert all("left out" in n for n in notes)


def test_every_question_of_the_five_categories_is_expressed_as_aerix_tools(checker):
    """The issue's goal: the share aerix cannot express is 0, in every question."""
    unexpressed = []
    for category in bfcl_data.CATEGORIES:
        for entry in bfcl_data.questions(category):
            made = bfcl_agent.prepared(ScriptedModel([]), entry)
            if "agent" not in made:
                unexpressed.append((entry["id"], made))
    assert unexpressed == []


# BFCL's ground truth breaks its own function doc here (words for an array of numbers, strings
# for an array of integers): the turn schema cannot hold those answers, so a model decoding
# under it cannot give them.
OFF_SCHEMA = {"parallel_multiple_21", "parallel_multiple_94"}
# the questions whose answer makes one call twice, with the same input: 3 of the 200 `parallel` ones
TWICE = {"parallel_96", "parallel_158", "parallel_180"}


def test_a_perfect_scripted_model_gets_every_question_right(checker):
    """Through the whole chain, for every question of the five categories: tools made from the
    question, aerix's names in the turn, the first accepted turn, BFCL's names back, BFCL's
    checker; and each of its calls passes its tool's check (what the grammar holds), but for
    the questions whose answer BFCL wrote off its own schema. The default drops a call the turn
    wrote twice (TurnFormat.duplicate_calls), so the questions whose answer is one call twice
    are lost by the default only, and right with ``keep-duplicates``."""
    wrong, off_schema, twice = [], set(), set()
    for category in bfcl_data.CATEGORIES:
        answers = bfcl_data.answers(category)
        for entry in bfcl_data.questions(category):
            names = bfcl_agent.tool_names([f["name"] for f in entry["function"]])
            by_bfcl = {b: a for a, b in names.items()}
            if category == "irrelevance":
                reply = final()
            else:
                oracle = [(by_bfcl[n], i) for c in oracle_calls(entry, answers[entry["id"]]) for n, i in c.items()]
                reply = turn(*oracle)
                if len({json.dumps(c, sort_keys=True) for c in oracle}) < len(oracle):
                    twice.add(entry["id"])
            for variant in ("default", "keep-duplicates") if entry["id"] in twice else ("default",):
                record = asyncio.run(bfcl_agent.question_record(ScriptedModel([reply]), category, entry, variant))
                out, result = scored(record, entry, answers.get(entry["id"]), checker)  # through its evals case
                assert out == record | verdict(category, entry, answers.get(entry["id"]), record, checker) and result.passed is out["valid"]
                if out["valid"] == (variant == "default" and entry["id"] in twice):
                    wrong.append((entry["id"], variant, out, record.get("calls"), record.get("retries")))
            tools = {t.name: t for t in bfcl_agent.tools_for(entry["function"])[0]}
            for call in record["turn"]["calls"]:
                try:
                    tools[call["tool"]].rich.check(call["input"])
                except ValueError:
                    off_schema.add(entry["id"])
    assert wrong == [] and off_schema == OFF_SCHEMA and twice == TWICE


# -- the harness end to end, on a fake llama-server ----------------------------------------------------

FAKE_SERVER = '''
import json, sys
from http.server import BaseHTTPRequestHandler, HTTPServer
if "--version" in sys.argv:
    print("version: 0 (fake)"); sys.exit(0)
port = int(sys.argv[sys.argv.index("--port") + 1])
log = {log!r}
class H(BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def do_GET(self):
        self.send_response(200); self.send_header("Content-Length", "2"); self.end_headers(); self.wfile.write(b"{{}}")
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        with open(log, "a") as f: f.write(json.dumps(body) + "\\n")
        text = json.dumps({{"thought": "t", "final": "none of these"}})
        frames = [{{"choices": [{{"index": 0, "delta": {{"content": text}}, "finish_reason": None}}]}},
                  {{"choices": [{{"index": 0, "delta": {{}}, "finish_reason": "stop"}}]}},
                  {{"choices": [], "usage": {{"prompt_tokens": 77, "completion_tokens": 9}}}}]
        data = "".join("data: " + json.dumps(f) + "\\n\\n" for f in frames).encode() + b"data: [DONE]\\n\\n"
        self.send_response(200); self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(data))); self.end_headers(); self.wfile.write(data)
HTTPServer(("127.0.0.1", port), H).serve_forever()
'''


def test_the_harness_runs_logs_resumes_and_writes_its_results_on_a_fake_server(checker, tmp_path, monkeypatch):
    binary, requests = tmp_path / "llama-server", tmp_path / "requests.jsonl"
    binary.write_text(f"#!{sys.executable}\n" + textwrap.dedent(FAKE_SERVER.format(log=str(requests))))
    binary.chmod(binary.stat().st_mode | stat.S_IEXEC)
    cache = tmp_path / "cache"
    (cache / "bfcl").mkdir(parents=True)
    (cache / "bfcl" / f"bfcl_eval-{bfcl_data.VERSION}").symlink_to(bfcl_data.root())
    monkeypatch.setenv("AERIX_CACHE", str(cache))
    monkeypatch.setenv("AERIX_LLAMA_SERVER", str(binary))
    gguf = tmp_path / "fake.gguf"
    gguf.write_bytes(b"GGUF fake")
    argv = ["--model", str(gguf), "--limit", "2", "--categories", "simple_python,irrelevance", "--page-sample", "0", "--out-dir", str(tmp_path)]
    assert bfcl.main(argv) == 0
    result = json.loads((tmp_path / "bfcl-fake.json").read_text())
    verdicts = {q["id"]: (q["valid"], q["error_type"]) for q in result["questions"]}
    assert verdicts == {"simple_python_0": (False, "ast_decoder:decoder_failed"), "simple_python_1": (False, "ast_decoder:decoder_failed"),
                        "irrelevance_0": (True, None), "irrelevance_1": (True, None)}  # fmt: skip
    assert result["summary"]["irrelevance"]["unexpressed"] == 0.0 and result["summary"]["all"]["prompt_tokens_median"] == 77
    assert {k: result["evals"][k] for k in ("cases", "passed", "failed", "tokens")} == {
        "cases": 4, "passed": 2, "failed": 2, "tokens": {"prompt": 4 * 77, "completion": 4 * 9, "cached": 0}}  # fmt: skip
    assert result["llama_server"] == ["version: 0 (fake)"] and result["bfcl_eval"]["wheel_sha256"] == bfcl_data.WHEEL_SHA256
    sent = [json.loads(line) for line in requests.read_text().splitlines()]
    assert len(sent) == 4 and all(b["temperature"] == 0 and b["response_format"]["json_schema"]["name"] == "turn" for b in sent)
    logged = (cache / "bfcl" / "runs" / "fake-default.jsonl").read_text().splitlines()
    assert len(logged) == 4
    # a rerun takes every question from the log: no server, no request; a changed GGUF asks again
    binary.write_text("#!/bin/sh\nexit 3\n")
    assert bfcl.main(argv) == 0 and len(requests.read_text().splitlines()) == 4
    gguf.write_bytes(b"GGUF other")
    with pytest.raises(SystemExit, match="llama-server did not start"):
        bfcl.main(argv)


def test_the_page_comparison_counts_the_first_turns_with_the_native_calls_and_says_how_the_rest_differ():
    def row(id, calls, thought="t", prompt=100, valid=True):
        return {"id": id, "calls": calls, "turn": {"thought": thought, "calls": []}, "usage": [[prompt, 1, 0]], "valid": valid}

    native = [row("a", [{"f": {"x": 1}}]), row("b", [{"f": {"x": 2}}]), row("c", [])]
    page = [row("a", [{"f": {"x": 1.0}}]), row("b", [{"f": {"x": 3}}], thought="u", prompt=101, valid=False), row("c", [], thought="v")]
    out = bfcl.compare(native, page)
    assert (out["questions"], out["agree"], out["rate"], out["same_turns"]) == (3, 2, 2 / 3, 1)
    assert out["differences"] == [{"id": "b", "native": [{"f": {"x": 2}}], "page": [{"f": {"x": 3}}], "native_verdict": True,
                                   "page_verdict": False, "same_prompt_tokens": False, "same_thought": False}]  # fmt: skip


def test_the_run_log_keeps_only_whole_lines_of_the_same_gguf(tmp_path):
    path = tmp_path / "runs" / "m-default.jsonl"
    log = bfcl.RunLog(path, "sha-a", fresh=False)
    log.add({"id": "q1", "valid": True})
    with path.open("a") as f:
        f.write(json.dumps({"id": "q2", "model_sha256": "sha-b"}) + "\n" + '{"id": "q3", "mod')
    assert list(bfcl.RunLog(path, "sha-a", fresh=False).done) == ["q1"]
    assert list(bfcl.RunLog(path, "sha-b", fresh=False).done) == ["q2"]
    assert bfcl.RunLog(path, "sha-a", fresh=True).done == {} and not path.exists()


def test_a_model_the_site_has_is_loaded_from_there_in_the_page(tmp_path, monkeypatch):
    models = tmp_path / "site" / "models"
    models.mkdir(parents=True)
    (models / "m.gguf").write_bytes(b"GGUF one")
    monkeypatch.setattr(bfcl, "SITE", tmp_path / "site")
    elsewhere = tmp_path / "copy.gguf"
    elsewhere.write_bytes(b"GGUF one")
    other = tmp_path / "other.gguf"
    other.write_bytes(b"GGUF two")
    assert bfcl.site_url(models / "m.gguf") == bfcl.site_url(elsewhere) == "/models/m.gguf"
    assert bfcl.site_url(other) is None


def test_a_logged_answer_is_reused_only_while_aerix_would_ask_the_same(monkeypatch, tmp_path):
    from aerix import Agent

    entry = {"id": "q1", "question": [[{"role": "user", "content": "Boil a litre."}]], "function": [FLAT]}
    record = asyncio.run(bfcl_agent.question_record(ScriptedModel([final()]), "simple_python", entry))
    assert record["fingerprint"] == bfcl_agent.fingerprint(entry) and len(record["fingerprint"]) == 64
    assert bfcl_agent.fingerprint({**entry, "question": [[{"role": "user", "content": "Boil two."}]]}) != record["fingerprint"]
    monkeypatch.setitem(bfcl_agent.VARIANTS, "default", lambda model, tools: Agent(model=model, tools=tools, instructions="Be brief.", generation={"temperature": 0}))
    changed = bfcl_agent.fingerprint(entry)
    assert changed != record["fingerprint"]
    log = bfcl.RunLog(tmp_path / "m.jsonl", "sha", fresh=False)
    log.add(dict(record))
    log.keep({"q1": changed})
    assert log.done == {}
    assert bfcl_agent.fingerprint({**entry, "function": [{**FLAT, "parameters": {"type": "list"}}]}).startswith("unconverted: ")
