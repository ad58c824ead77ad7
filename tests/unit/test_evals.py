"""aerix.evals (issue 31, part 3): cases run on a fresh agent each, scored from the run's events,
reported as a table and as JSON, usable from pytest."""

from __future__ import annotations

import asyncio
import inspect
import json

import pytest
from helpers import IN_PYODIDE, calls, final
from pydantic import BaseModel

from aerix import AerixError, Agent, tool
from aerix import evals
from aerix.testing import ScriptedModel


@tool
def weather(city: str, days: int = 1) -> str:
    """The weather in a city."""
    return f"rain in {city}" if city == "Lisbon" else f"sunny in {city}"


@tool
def time_in(city: str) -> str:
    """The time in a city."""
    return f"12:00 in {city}"


def scripted(scripts: dict[str, list[str]]):
    """An agent factory: each case's agent answers from the script under the case's name."""
    return lambda case: Agent(model=ScriptedModel(scripts[case.name]), tools=[weather, time_in])


LISBON = [calls(("weather", {"city": "Lisbon", "days": 2})), final("Rain in Lisbon: take an umbrella.")]


async def one(case: evals.Case, script: list[str]) -> evals.CaseResult:
    report = await evals.run([case], scripted({case.name: script}))
    return report.results[0]


# -- matchers -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "matcher, value, why",
    [
        (evals.exact("Lisbon"), "Lisbon", None),
        (evals.exact("Lisbon"), "lisbon", "expected 'Lisbon', got 'lisbon'"),
        (evals.exact({"n": 1}), {"n": 1.0}, None),
        (evals.exact({"n": 1}), {"n": True}, "expected {'n': 1}, got {'n': True}"),
        (evals.subset({"city": "Lisbon"}), {"city": "Lisbon", "days": 2}, None),
        (evals.subset({"city": "Lisbon"}), {"city": "Porto"}, "city: expected 'Lisbon', got 'Porto'"),
        (evals.subset({"city": "Lisbon"}), {"days": 2}, "city: missing"),
        (evals.subset({"where": {"city": "Lisbon"}}), {"where": {"city": "Faro"}}, "where.city: expected 'Lisbon', got 'Faro'"),
        (evals.subset({"city": evals.contains("isb")}), {"city": "Lisbon"}, None),
        (evals.subset({"city": "Lisbon"}), "Lisbon", "value: expected a dict, got 'Lisbon'"),
        (evals.contains("rain", "Lisbon"), "rain in Lisbon", None),
        (evals.contains("rain", "Porto"), "rain in Lisbon", "'Porto' not in 'rain in Lisbon'"),
        (evals.contains("LISBON", ignore_case=True), "rain in Lisbon", None),
        (evals.contains("LISBON"), "rain in Lisbon", "'LISBON' not in 'rain in Lisbon'"),
        (evals.contains('"city": "Lisbon"'), {"city": "Lisbon"}, None),
        (evals.satisfies(lambda text: len(text) < 5, name="short"), "rain", None),
        (evals.satisfies(lambda text: len(text) < 5, name="short"), "rain in Lisbon", "short: returned False"),
    ],
)
def test_each_matcher_passes_and_fails_with_its_reason(matcher, value, why):
    assert matcher(value) == why


def test_satisfies_takes_an_assert_message_as_the_reason_and_passes_a_function_that_returns_nothing():
    def polite(text: str) -> None:
        assert "please" in text, f"no please in {text!r}"

    assert evals.satisfies(polite)("please sit") is None
    assert evals.satisfies(polite)("sit") == "polite: no please in 'sit'"
    assert evals.satisfies(lambda t: 1 / 0, name="div")("x") == "div: raised ZeroDivisionError: division by zero"


async def test_each_matcher_through_a_run_of_a_case():
    case = evals.Case(
        "Weather in Lisbon?",
        calls=[evals.call("weather", evals.subset({"city": "Lisbon"}))],
        answer=evals.contains("umbrella"),
    )
    assert (await one(case, LISBON)).passed
    exact = evals.Case("Weather in Lisbon?", calls=[("weather", {"city": "Lisbon"})], answer="Rain in Lisbon: take an umbrella.")
    result = await one(exact, LISBON)
    assert not result.passed
    assert result.reasons == ["calls: call 1: weather: expected {'city': 'Lisbon'}, got {'city': 'Lisbon', 'days': 2}"]
    fn = evals.Case("Weather in Lisbon?", answer=lambda text: text.endswith("?"))
    assert (await one(fn, LISBON)).reasons == ["answer: <lambda>: returned False"]


# -- calls ---------------------------------------------------------------------------------------


BOTH = [calls(("time_in", {"city": "Faro"}), ("weather", {"city": "Faro"})), final("Noon and sunny.")]


@pytest.mark.parametrize(
    "calls_match, why",
    [
        ("in_order", "call 1: expected weather, got time_in"),
        ("any_order", None),
        ("first_turn", "first turn: call 1: expected weather, got time_in"),
    ],
)
async def test_calls_match_in_order_any_order_and_on_the_first_turn(calls_match, why):
    case = evals.Case("Faro?", calls=[evals.call("weather", {"city": "Faro"}), "time_in"], calls_match=calls_match)
    assert (await one(case, BOTH)).check("calls").reason == why


async def test_the_count_of_calls_and_no_calls_expected():
    case = evals.Case("Hi", calls=[], answer="Hello.")
    assert (await one(case, [final("Hello.")])).passed
    result = await one(case, LISBON)
    assert result.check("calls").reason == "expected no calls, got 1 (weather)"
    two = evals.Case("Faro?", calls=["weather"], calls_match="any_order")
    assert (await one(two, BOTH)).check("calls").reason == "expected 1 call (weather), got 2 (time_in, weather)"


async def test_any_order_says_which_expected_call_nothing_matched():
    case = evals.Case("Faro?", calls=[("weather", evals.subset({"city": "Porto"})), "time_in"], calls_match="any_order")
    why = (await one(case, BOTH)).check("calls").reason
    assert why.startswith("no call matches weather(subset({'city': 'Porto'}))")
    assert "city: expected 'Porto', got 'Faro'" in why


async def test_first_turn_fails_when_the_first_generation_was_refused_even_if_the_run_recovers():
    case = evals.Case("Weather in Lisbon?", calls=["weather"], calls_match="first_turn")
    result = await one(case, ["not json", *LISBON])
    assert result.check("ending").passed and not result.check("calls").passed
    assert result.check("calls").reason.startswith("the first generation was refused")
    in_order = evals.Case("Weather in Lisbon?", calls=["weather"])
    assert (await one(in_order, ["not json", *LISBON])).passed


# -- stopped at the first turn ------------------------------------------------------------------


async def test_stop_after_turn_stops_the_run_at_its_first_accepted_turn_before_any_tool_runs():
    ran: list[str] = []

    @tool
    def kettle(litres: float) -> str:
        """Boil water."""
        ran.append("kettle")
        return "boiled"

    model = ScriptedModel(["not json", calls(("kettle", {"litres": 1.5})), final("never asked")])
    case = evals.Case("Boil 1.5 litres.", calls=[evals.call("kettle", {"litres": 1.5})], stop_after="turn")
    report = await evals.run([case], lambda: Agent(model=model, tools=[kettle]))
    result = report.results[0]
    assert result.passed, result.reasons
    assert len(model.calls) == 2 and ran == []  # the retry ran, the tool and a second turn did not
    o = result.outcome
    assert (o.ending, o.answer, o.results) == ("turn", None, ())
    assert [(c.tool, c.input) for c in o.calls] == [("kettle", {"litres": 1.5})]
    assert [e.type for e in o.events if e.type != "text"] == ["usage", "retry", "usage", "turn"]
    assert o.tokens.total > 0 and report.passed == 1
    # the same case scored from a whole run's events counts them up to the first turn only
    whole = await one(evals.Case("Weather in Lisbon?", calls=["weather"], answer="Rain in Lisbon: take an umbrella."), LISBON)
    again = evals.score(evals.Case("Weather in Lisbon?", calls=["weather"], stop_after="turn"), [e.to_dict() for e in whole.outcome.events])
    assert again.passed and again.outcome.ending == "turn" and again.outcome.results == ()


async def test_stop_after_turn_fails_a_run_that_never_got_a_turn_and_checks_the_first_turns_calls():
    case = evals.Case("Lisbon?", stop_after="turn")  # expects the turn only
    result = await one(case, ["nope"] * 3)
    assert not result.passed and result.outcome.ending == "end:retries"
    assert result.reasons[0].startswith("ending: end:retries: ")
    assert (await one(case, [final("No tool for that.")])).passed  # a final's turn is a turn
    wrong = evals.Case("Lisbon?", calls=[("weather", evals.subset({"city": "Porto"}))], stop_after="turn")
    assert (await one(wrong, LISBON)).reasons == ["calls: call 1: weather: city: expected 'Porto', got 'Lisbon'"]
    seen = []
    mine = evals.Case("Lisbon?", checks=[lambda run: seen.append(run.ending)], stop_after="turn")
    assert (await one(mine, LISBON)).passed and seen == ["turn"]
    ran_on = evals.score(evals.Case("Lisbon?", answer="x"), [e.to_dict() for e in (await one(case, LISBON)).outcome.events])
    assert ran_on.check("ending").reason == "turn: the run was stopped after a turn, before its calls ran"


# -- endings -------------------------------------------------------------------------------------


async def test_a_run_that_ends_with_an_error_fails_with_its_reason():
    def down(messages, options):
        raise AerixError("engine", "the server went away")

    report = await evals.run([evals.Case("Hi", answer="Hello.")], lambda: Agent(model=ScriptedModel(down)))
    result = report.results[0]
    assert not result.passed and result.outcome.ending == "end:error"
    assert result.reasons == [f"ending: end:error: {result.outcome.message}", "answer: no answer (the run ended end:error)"]
    assert "the server went away" in result.outcome.message
    assert "the server went away" in report.table()


async def test_a_run_that_runs_out_of_turns_fails_even_when_its_calls_were_right():
    agent = lambda: Agent(model=ScriptedModel([calls(("weather", {"city": "Lisbon"}))] * 3), tools=[weather], limits={"turns": 2})
    report = await evals.run([evals.Case("Lisbon?", calls=["weather", "weather"])], agent)
    result = report.results[0]
    assert result.check("calls").passed and not result.passed
    assert result.reasons[0].startswith("ending: end:turns")


# -- fresh agents -------------------------------------------------------------------------------


async def test_each_case_runs_on_a_fresh_agent_so_nothing_leaks_into_the_next():
    seen: list[list[dict]] = []

    def model_fn(messages, options):
        seen.append(messages)
        return final(f"{len(messages)} messages")

    model = ScriptedModel(model_fn)  # one model for all: only the agents are fresh
    cases = [evals.Case(f"question {i}", answer="2 messages") for i in range(3)]
    report = await evals.run(cases, lambda: Agent(model=model, instructions="Be brief."))
    assert report.passed == 3, report.table()
    assert [[m["content"] for m in ms[1:]] for ms in seen] == [["question 0"], ["question 1"], ["question 2"]]


async def test_a_factory_that_hands_out_one_agent_twice_is_refused():
    shared = Agent(model=ScriptedModel([final("x"), final("x")]))
    with pytest.raises(AerixError, match="an Agent it made before; each case needs a fresh one") as e:
        await evals.run([evals.Case("a", answer="x"), evals.Case("b", answer="x")], lambda: shared)
    assert e.value.kind == "options"


async def test_an_agent_is_not_a_factory_and_an_async_factory_is_one():
    with pytest.raises(AerixError, match="agent must be a function that makes a fresh Agent") as e:
        await evals.run([evals.Case("a", answer="x")], Agent(model=ScriptedModel([final("x")])))
    assert e.value.kind == "options"

    async def make(case):
        return Agent(model=ScriptedModel([final(case.name)]))

    assert (await evals.run([evals.Case("a", answer="a")], make)).passed == 1


async def test_a_factory_gets_the_case_when_it_takes_a_positional_argument_without_a_default():
    import functools

    made = functools.partial(Agent, model=ScriptedModel([final("x")]))  # Agent's other parameters have defaults
    assert (await evals.run([evals.Case("a", answer="x")], made)).passed == 1
    got = []
    assert (await evals.run([evals.Case("b", answer="b")], lambda *args: got.append(args) or Agent(model=ScriptedModel([final("b")])))).passed == 1
    assert [a[0].name for a in got] == ["b"]


async def test_a_factory_that_raises_is_raised_and_stops_the_other_cases():
    stopped, sleeping = [], []

    async def slow(case):
        sleeping.append(case.name)
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            stopped.append(case.name)
            raise
        return final("late")

    async def agent(case):
        if case.name == "b":
            while len(sleeping) < 2:  # the other two are generating
                await asyncio.sleep(0.001)
            raise RuntimeError("no model for b")
        return Agent(model=ScriptedModel(lambda messages, options: slow(case)))

    cases = [evals.Case(n, answer="x") for n in "abc"]
    with pytest.raises(RuntimeError, match="no model for b"):
        await asyncio.wait_for(evals.run(cases, agent, concurrency=3), 5)
    assert sorted(stopped) == ["a", "c"]  # their runs were stopped before run() raised


async def test_concurrency_runs_cases_together_and_keeps_their_order():
    cases = [evals.Case(f"q{i}", answer=f"q{i}") for i in range(4)]
    report = await evals.run(cases, lambda case: Agent(model=ScriptedModel([final(case.name)])), concurrency=4)
    assert [r.case.name for r in report.results] == ["q0", "q1", "q2", "q3"] and report.passed == 4


# -- structured output, checks of the whole run ------------------------------------------------


async def test_the_answer_of_a_structured_output_agent_is_its_output():
    class Trip(BaseModel):
        city: str
        days: int

    agent = lambda: Agent(model=ScriptedModel([final({"city": "Porto", "days": 2})]), output=Trip)
    report = await evals.run([evals.Case("Plan", answer=evals.subset({"city": "Porto"})), evals.Case("Plan 2", answer=evals.subset({"days": 3}))], agent)
    assert [r.passed for r in report.results] == [True, False]
    assert report.results[1].reasons == ["answer: days: expected 3, got 2"]
    assert report.to_dict()["cases"][0]["output"] == {"city": "Porto", "days": 2}


async def test_a_check_sees_the_whole_outcome():
    def quotes_the_result(run: evals.Outcome) -> None:
        missing = [r.text for r in run.results if r.text not in (run.answer or "")]
        assert not missing, f"the answer does not quote {missing}"

    case = evals.Case("Lisbon?", checks=[quotes_the_result])
    assert (await one(case, [LISBON[0], final("It rains: rain in Lisbon.")])).passed
    assert (await one(case, LISBON)).reasons == ["quotes_the_result: the answer does not quote ['rain in Lisbon']"]


# -- the report ----------------------------------------------------------------------------------


async def two_and_one() -> evals.Report:
    cases = [
        evals.Case("Weather in Lisbon?", name="lisbon", calls=["weather"], answer=evals.contains("umbrella")),
        evals.Case("Say hi", name="hi", calls=[], answer="Hello."),
        evals.Case("Weather in Faro?", name="faro", calls=[("weather", {"city": "Faro"})]),
    ]
    return await evals.run(cases, scripted({"lisbon": LISBON, "hi": [final("Hello.")], "faro": LISBON}))


async def test_totals_count_cases_and_sum_tokens():
    report = await two_and_one()
    assert (report.passed, report.failed, len(report.results)) == (2, 1, 3)
    assert report.pass_rate == pytest.approx(2 / 3)
    usage = [e for r in report.results for e in r.outcome.events if e.type == "usage"]
    assert report.tokens.prompt == sum(u.prompt_tokens for u in usage) > 0
    assert report.tokens.completion == sum(u.completion_tokens for u in usage) > 0
    assert report.tokens.cached == sum(u.cached_tokens for u in usage)
    assert report.seconds == sum(r.outcome.seconds for r in report.results) > 0
    assert report["lisbon"].outcome.calls[0].input == {"city": "Lisbon", "days": 2}


async def test_the_table_has_a_row_per_case_the_reasons_under_a_failed_one_and_the_totals():
    report = await two_and_one()
    lines = report.table().splitlines()
    assert lines[0].split() == ["case", "passed", "calls", "answer", "tokens", "time"]
    assert lines[1].split()[:3] == ["lisbon", "yes", 'weather(city="Lisbon",']
    assert lines[2].split()[:4] == ["hi", "yes", "-", "Hello."]
    assert lines[3].split()[:2] == ["faro", "NO"]
    assert lines[4].strip() == "calls: call 1: weather: expected {'city': 'Faro'}, got {'city': 'Lisbon', 'days': 2}"
    assert lines[5].startswith("3 cases: 2 passed, 1 failed (67%); ")
    assert f"{report.tokens.total:,} tokens" in lines[5]
    assert len(lines) == 6 and str(report) == report.table()


async def test_the_json_has_each_case_and_the_totals():
    report = await two_and_one()
    data = json.loads(report.to_json())
    assert data == report.to_dict()
    faro = data["cases"][2]
    assert faro["name"] == "faro" and faro["prompt"] == "Weather in Faro?" and faro["passed"] is False
    assert faro["reasons"] == report["faro"].reasons
    assert faro["checks"][0] == {"name": "ending", "passed": True, "reason": None}
    assert faro["calls"] == [{"id": report["faro"].outcome.calls[0].id, "tool": "weather", "input": {"city": "Lisbon", "days": 2}}]
    assert faro["results"][0]["text"] == "rain in Lisbon" and faro["answer"] == "Rain in Lisbon: take an umbrella."
    assert faro["ending"] == "final" and set(faro["tokens"]) == {"prompt", "completion", "cached"}
    assert data["totals"] == {"cases": 3, "passed": 2, "failed": 1, "pass_rate": 2 / 3, "tokens": report.tokens.to_dict(), "seconds": round(report.seconds, 6)}


async def test_assert_passed_fails_with_the_table_and_takes_a_pass_rate():
    report = await two_and_one()
    with pytest.raises(AssertionError) as e:
        report.assert_passed()
    assert str(e.value) == f"expected every case to pass, 2 of 3 did:\n{report.table()}"
    report.assert_passed(at_least=0.6)
    with pytest.raises(AssertionError, match="expected at least 90% of the cases to pass, 2 of 3 did"):
        report.assert_passed(at_least=0.9)


# -- scoring recorded events, the sync wrapper --------------------------------------------------


async def test_score_reads_the_events_dicts_the_page_gives_as_the_events_themselves():
    report = await two_and_one()
    for r in report.results:
        as_dicts = [e.to_dict() for e in r.outcome.events]
        camel = [{"promptTokens" if k == "prompt_tokens" else k: v for k, v in d.items()} for d in as_dicts]
        for recorded in (as_dicts, camel):
            again = evals.score(r.case, recorded)
            assert again.checks == r.checks and again.outcome.tokens == r.outcome.tokens


@pytest.mark.skipif(IN_PYODIDE, reason="Pyodide's own event loop is always running: there, await evals.run")
def test_run_sync_runs_without_an_event_loop():
    report = evals.run_sync([evals.Case("hi", answer="Hello.")], lambda: Agent(model=ScriptedModel([final("Hello.")])))
    assert report.passed == 1


async def test_run_sync_inside_a_running_loop_says_to_await_run():
    with pytest.raises(AerixError, match=r"await evals.run\(...\) instead") as e:
        evals.run_sync([evals.Case("hi", answer="x")], lambda: Agent(model=ScriptedModel([final("x")])))
    assert e.value.kind == "options"


# -- bad input -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: evals.Case("hi"), "case 'hi' expects nothing: give it calls=, answer= or checks="),
        (lambda: evals.Case("  ", answer="x"), "a case's prompt must be a non-empty string"),
        (lambda: evals.Case("hi", answer="x", calls_match="sorted"), "case 'hi': unknown calls_match 'sorted' \\(known: in_order, any_order, first_turn\\)"),
        (lambda: evals.Case("hi", answer=evals.contains), "case 'hi': answer: contains is a matcher factory: call it"),
        (lambda: evals.Case("hi", calls=[("weather", evals.subset)]), "weather's input: subset is a matcher factory"),
        (lambda: evals.Case("hi", calls="weather"), "calls must be a list of expected calls"),
        (lambda: evals.Case("hi", calls=[42]), "an expected call is call\\(tool, input\\), \\(tool, input\\) or a tool's name, got 42"),
        (lambda: evals.Case("hi", checks=["quoted"]), "checks must be functions of the outcome, got 'quoted'"),
        (lambda: evals.Case("hi", calls=[], stop_after="call"), "case 'hi': unknown stop_after 'call' \\(known: None, 'turn'\\)"),
        (lambda: evals.Case("hi", answer="x", stop_after="turn"), "case 'hi': a run stopped after its first turn has no answer to match"),
        (lambda: evals.matcher("regex", "r.*n"), "unknown matcher 'regex' \\(known: exact, subset, contains"),
        (lambda: evals.subset(["city"]), "subset takes a dict"),
        (lambda: evals.contains(), "contains takes one or more non-empty strings"),
        (lambda: evals.call(""), "an expected call names its tool"),
        (lambda: evals.Case.from_dict({"prompt": "hi", "answer": {"match": "like", "value": "x"}}), "unknown matcher 'like'"),
        (lambda: evals.Case.from_dict({"prompt": "hi", "expect": "x"}), "unknown case key 'expect'"),
        (lambda: evals.Case.from_dict({"prompt": "hi"}), "case 'hi' expects nothing"),
        (lambda: evals.run([evals.Case("a", answer="x"), evals.Case("a", answer="y")], lambda: None), "two cases are named 'a'"),
        (lambda: evals.run(evals.Case("a", answer="x"), lambda: None), "cases must be a list of evals.Case"),
        (lambda: evals.run([evals.Case("a", answer="x")], lambda: None), "case 'a': the agent factory returned NoneType, not an Agent"),
        (lambda: evals.run([evals.Case("a", answer="x")], lambda: None, concurrency=0), "concurrency must be a whole number of at least 1"),
        (lambda: evals.score(evals.Case("a", answer="x"), [{"type": "final"}]), "not a final event: {'type': 'final'}"),
        (lambda: evals.score(evals.Case("a", answer="x"), ["final"]), "events are aerix events or their dicts, got str"),
    ],
)
async def test_bad_input_is_an_options_error_naming_what_was_wrong(make, message):
    with pytest.raises(AerixError, match=message) as e:
        made = make()
        if inspect.isawaitable(made):
            await made
    assert e.value.kind == "options"


async def test_a_case_kept_as_data():
    case = evals.Case.from_dict(
        {"prompt": "Weather in Lisbon?", "name": "lisbon", "calls": [{"tool": "weather", "input": {"match": "subset", "value": {"city": "Lisbon"}}}],
         "answer": {"match": "contains", "value": ["Rain", "umbrella"]}, "calls_match": "any_order"}  # fmt: skip
    )
    assert (case.name, case.calls_match, repr(case.answer), case.stop_after) == ("lisbon", "any_order", "contains('Rain', 'umbrella')", None)
    assert evals.Case.from_dict({"prompt": "hi", "calls": [{"tool": "weather"}], "stop_after": "turn"}).stop_after == "turn"
    assert (await evals.run([case], scripted({"lisbon": LISBON}))).passed == 1
    assert evals.Case.from_dict({"prompt": "hi", "answer": {"city": "Faro"}}).answer({"city": "Faro"}) is None  # no "match": exact
