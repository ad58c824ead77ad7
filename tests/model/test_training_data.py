"""What the bundled model's figures rest on (build/model/): the held-out eval is really held out,
the training conversations are what aerix sends, and the scorer counts what it says it counts.
CPython only (the training scripts are not part of the package)."""

from __future__ import annotations

import hashlib
import json
import random
import re
from pathlib import Path

import jinja2
import pytest

from aerix import Agent
from aerix.testing import ScriptedModel
from build.model import corpus, grammar, score, worlds
from build.model import demo_tools as demo
from build.models import CHAT_TEMPLATE, chatml

ROOT = Path(__file__).resolve().parents[2]
TRAINED = json.loads((ROOT / "models" / "aerix-tools.json").read_text())


@pytest.fixture(scope="module")
def training_tasks():
    # exactly the tasks the committed model was trained on (its seed and count)
    tasks = corpus.train_tasks(TRAINED["conversations"], seed=TRAINED["seed"])
    out = []
    for t in tasks:
        while t is not None:
            out.append(t)
            t = t.then
    return out


def test_the_eval_world_shares_no_list_entry_and_the_grammar_no_sentence_with_training():
    worlds.check_disjoint()
    grammar.check()


def test_no_held_out_prompt_or_city_occurs_in_the_training_data(training_tasks):
    held = corpus.eval_tasks()
    assert len(held) >= 200
    prompts = {t.prompt.casefold() for t in training_tasks}
    assert not [t.prompt for t in held if t.prompt.casefold() in prompts]
    cities = {c.casefold() for c in worlds.EVAL.cities}
    trained_cities = {i["city"].casefold() for t in training_tasks for _, i in t.calls if "city" in i}
    assert not cities & trained_cities
    assert not {str(i.get("expression")) for t in held for _, i in t.calls} & {str(i.get("expression")) for t in training_tasks for _, i in t.calls} - {"None"}
    held_notes = {i["text"].casefold() for t in held for _, i in t.calls if "text" in i}
    assert not held_notes & {i["text"].casefold() for t in training_tasks for _, i in t.calls if "text" in i}


def test_training_converts_every_unit_pair_so_the_target_unit_does_not_give_the_source_away(training_tasks):
    pairs = {(i["from"], i["to"]) for t in training_tasks for tool, i in t.calls if tool == "convert"}
    units = demo.UNITS
    assert pairs == {(a, b) for a in units for b in units if a != b}
    for a, b in corpus.ANY_COMPATIBLE:  # the oracle expects a result exactly where the tool gives one
        assert demo.convert(1, a, b)
    for a, b in corpus.ANY_BAD:
        with pytest.raises(demo.ToolFailed):
            demo.convert(1, a, b)


def test_requests_typed_as_a_label_and_a_city_are_not_all_notes(training_tasks):
    """A label and a colon must not mean "note": the label's words decide, tool or none."""
    by_kind: dict[str, set[str]] = {}
    for t in training_tasks:
        m = re.fullmatch(r"([A-Z][\w' ]*): ([^:]+)", t.prompt)
        city = t.calls[0][1].get("city") if t.calls else None
        if m and (t.kind == "note" or (t.kind in ("weather", "time") and m[2] == city) or
                  (t.kind == "direct" and m[2][0].isupper() and " " not in m[2])):  # "Hotels: Oslo"
            by_kind.setdefault(t.kind, set()).add(m[1])
    assert {"Forecast", "Local time", "Hotels"} <= by_kind["weather"] | by_kind["time"] | by_kind["direct"]
    assert len(by_kind["weather"]) >= 5 and len(by_kind["time"]) >= 5 and len(by_kind["direct"]) >= 5
    assert not (by_kind["weather"] | by_kind["time"]) & by_kind["note"]


def test_a_made_up_note_time_is_never_a_held_out_one():
    rng = random.Random(3)
    made = [corpus.note_when(rng) for _ in range(20_000)]
    held = {w.strip().casefold() for w in worlds.EVAL.note_when if w}
    assert held and not held & {w.strip().casefold() for w in made}
    assert any(w.split()[-1][0].isupper() for w in made) and any(w.split()[-1].isdigit() for w in made)


def _per_char(text):
    return corpus.emphasis(text, [(i, i + 1) for i in range(len(text))])


def test_the_loss_weighs_the_tool_choice_a_calls_input_the_umbrella_advice_and_the_source_unit_more_than_the_rest():
    call = '{"thought": "Use weather and time.", "calls": [{"tool": "weather", "input": {"city": "Porto Alegre"}}, {"tool": "time", "input": {"city": "Oslo"}}]}'
    w = _per_char(call)
    heavy = [(call.index('"thought"'), call.index('time."') + 6)]  # the tools the first thought names
    for key in ('"tool": "weather"', '"tool": "time"', '"input": {"city": "Porto Alegre"}', '"input": {"city": "Oslo"}'):
        heavy.append((call.index(key), call.index(key) + len(key)))
    inside = {i for a, b in heavy for i in range(a, b)}
    assert {w[i] for i in inside} == {2.0}
    assert {w[i] for i in range(len(call)) if i not in inside} == {1.0}
    assert set(_per_char('{"thought": "I have both results.", "final": "It is 09:00 in Oslo."}')) == {1.0}
    # the finals the oracle writes, so that a change to their wording cannot leave the advice unweighed
    task = corpus.Task("umbrella", "Umbrella for Lisbon?", [("weather", {"city": "Lisbon"})], umbrella=True)
    for sky, advice in (("rain", score.ADVICE[True]), ("sunny", score.ADVICE[False])):
        _, final = corpus.final_answer(task, [("weather", f"{sky} and 15°C in Lisbon")])
        w = _per_char(final)
        start, end = final.index(", so "), final.index(advice) + len(advice)
        assert set(w[start:end]) == {3.0} and set(w[:start]) == {1.0}, final
    # a conversion's source unit weighs most: it is what models guessed from the target
    convert = '{"thought": "Use convert.", "calls": [{"tool": "convert", "input": {"value": 3, "from": "mi", "to": "km"}}]}'
    w = _per_char(convert)
    start = convert.index('"from"')
    end = start + len('"from": "mi"')
    assert set(w[start:end]) == {4.0}
    assert set(w[end:convert.index("}}]")]) == {2.0}
    # a token that straddles the span's edge counts as inside it
    assert corpus.emphasis(call, [(0, len(call))]) == [2.0]


def test_the_model_was_trained_on_the_system_message_aerix_renders_now():
    agent = Agent(model=ScriptedModel([]), instructions=demo.INSTRUCTIONS, tools=demo.aerix_tools())
    assert hashlib.sha256(agent.system.encode()).hexdigest() == TRAINED["system_sha256"], (
        "aerix's system message or web/demo-tools.json changed since the bundled model was trained: run `make model`"
    )


def test_a_training_conversation_is_the_messages_aerix_keeps_and_feeds_back():
    task = corpus.Task("weather", "What's the weather in Lisbon?", [("weather", {"city": "Lisbon"})])
    conversations = corpus.Conversations()
    try:
        messages = conversations(task)
    finally:
        conversations.close()
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user", "assistant"]
    result = demo.weather("Lisbon")
    assert json.loads(messages[3]["content"]) == {"results": [{"id": "call_1", "tool": "weather", "result": result}]}
    assert json.loads(messages[2]["content"])["calls"] == [{"tool": "weather", "input": {"city": "Lisbon"}}]
    assert result in json.loads(messages[4]["content"])["final"]
    rendered = chatml(messages, generation_prompt=False)
    assert rendered.startswith("<|im_start|>system\n" + messages[0]["content"] + "<|im_end|>\n")


def test_the_python_chatml_is_what_the_gguf_chat_template_renders():
    """Training, the PyTorch check and the benchmarks lay out prompts with chatml(); the engine
    with the template in the GGUF. Jinja2 here stands in for llama.cpp's Jinja."""
    conversations = corpus.Conversations()
    try:
        messages = conversations(corpus.Task("weather", "Wetter in Zürich?", [("weather", {"city": "Zürich"})]))
    finally:
        conversations.close()
    template = jinja2.Environment().from_string(CHAT_TEMPLATE)
    for generation_prompt in (False, True):
        assert chatml(messages, generation_prompt) == template.render(messages=messages, add_generation_prompt=generation_prompt)


def _events(calls, results, final):
    evs = [{"type": "turn", "turn": 1, "thought": "", "calls": [{"id": f"c{i}", "tool": t, "input": x} for i, (t, x) in enumerate(calls)]}]
    evs += [{"type": "result", "id": f"c{i}", "tool": t, "text": r, "error": False} for i, ((t, _), r) in enumerate(zip(calls, results))]
    evs += [{"type": "usage", "completion_tokens": 10}, {"type": "final", "text": final}]
    return evs


def test_the_scorer_accepts_the_right_call_and_a_quoted_result():
    task = {"kind": "weather", "calls": [{"tool": "weather", "input": {"city": "Kano"}}]}
    row = score.score(task, _events([("weather", {"city": "kano."})], ["sunny and 20°C in Kano"], "Expect sunny and 20°C in Kano."))
    assert row["first_turn"] and row["quoted"] and row["final"]


@pytest.mark.parametrize(
    "result, final, quoted",
    [
        ("light rain and 9°C in Kano", "Expect light rain and 9°C in Kano, so take an umbrella.", True),
        ("light rain and 9°C in Kano", "Expect light rain and 9°C in Kano, so you can leave the umbrella at home.", False),
        ("sunny and 20°C in Kano", "Expect sunny and 20°C in Kano, so you can leave the umbrella at home.", True),
        ("sunny and 20°C in Kano", "Expect sunny and 20°C in Kano, so take an umbrella.", False),
        ("sunny and 20°C in Kano", "Expect sunny and 20°C in Kano.", False),
    ],
)
def test_an_umbrella_answer_must_give_the_advice_the_weather_calls_for(result, final, quoted):
    task = {"kind": "umbrella", "umbrella": True, "calls": [{"tool": "weather", "input": {"city": "Kano"}}]}
    row = score.score(task, _events([("weather", {"city": "Kano"})], [result], final))
    assert row["first_turn"] and row["quoted"] is quoted
    assert row["quote_failure"] == (None if quoted else "wrong umbrella advice")


@pytest.mark.parametrize(
    "calls, final, failure, quoted",
    [
        ([("weather", {"city": "Kano now"})], "Expect sunny and 20°C in Kano.", "wrong weather.city", True),
        ([("time", {"city": "Kano"})], "It is sunny and 20°C in Kano.", "wrong tool", True),
        ([("weather", {"city": "Kano"})], "Expect sun in Kano.", None, False),
        ([], "Sunny.", "answered without calling a tool", None),
    ],
)
def test_the_scorer_names_each_failure(calls, final, failure, quoted):
    task = {"kind": "weather", "calls": [{"tool": "weather", "input": {"city": "Kano"}}]}
    row = score.score(task, _events(calls, ["sunny and 20°C in Kano"] if calls else [], final))
    assert row["first_turn_failure"] == failure
    assert row["quoted"] is (quoted if calls else False)
