"""What the general model's data (build/general/) rests on: each conversation is what the real aerix
loop keeps, its calls fit their tools, the hold-outs are held out, the mix is as configured, and
the same seed gives the same corpus. CPython only (the build scripts are not part of the package)."""

from __future__ import annotations

import asyncio
import json
import random
import re
from collections import Counter

import pytest

from aerix import Agent
from aerix.schema import normalise, validate
from aerix.testing import ScriptedModel
from aerix.turn import parse_turn
from build.general import corpus, phrasing
from build.general.domains import HELD_OUT
from build.general.families import Runtime, aerix_tools, make_families
from build.general.tasks import MIX, make_task
from build.models import IM_END, IM_START, chatml

COUNT = 3000
COMMON = {"the", "and", "for", "with", "get", "find", "use", "thi", "tool", "need", "work", "out", "look", "check", "list"}
TURN = re.compile(re.escape(IM_START) + r"(system|user|assistant)\n(.*?)" + re.escape(IM_END) + "\n", re.S)


@pytest.fixture(scope="module")
def families():
    return {f.id: f for f in make_families(corpus.SEED)}


@pytest.fixture(scope="module")
def records():
    return corpus.generate(corpus.SEED, COUNT)


def messages_of(text: str) -> list[dict[str, str]]:
    found = [{"role": r, "content": c} for r, c in TURN.findall(text)]
    assert chatml(found, generation_prompt=False) == text, "the text is not a ChatML conversation"
    return found


def systems(family) -> set[str]:
    tools = aerix_tools(family, Runtime())
    options = [""] + [i.replace("{domain}", family.domain) for i in corpus.INSTRUCTIONS]
    return {Agent(model=ScriptedModel([]), instructions=i, tools=tools).system for i in options}


def test_each_text_is_chatml_starting_with_the_real_system_message_and_ending_in_a_final(records, families):
    for r in records:
        messages = messages_of(r["text"])
        assert messages[0]["role"] == "system" and messages[0]["content"] in systems(families[r["family"]])
        assert [m["role"] for m in messages[1:3]] == ["user", "assistant"]
        assert messages[-1]["role"] == "assistant" and "final" in json.loads(messages[-1]["content"])


def test_assistant_spans_are_the_assistant_turns_and_their_end(records):
    for r in records[:500]:
        text = r["text"]
        turns = [m["content"] for m in messages_of(text) if m["role"] == "assistant"]
        assert [text[a:b] for a, b in r["assistant_spans"]] == [t + IM_END for t in turns]


def test_every_turn_parses_and_every_call_input_fits_its_tools_schema(records, families):
    checked = 0
    for r in records:
        family = families[r["family"]]
        schemas = {t.name: normalise(t.schema, t.name) for t in family.tools}
        for m in messages_of(r["text"]):
            if m["role"] != "assistant":
                continue
            turn = parse_turn(m["content"], frozenset(schemas))
            assert not turn.dropped
            for call in turn.calls:
                validate(call.input, schemas[call.tool], call.tool)
                checked += 1
    assert checked > COUNT


def test_results_are_errors_only_where_the_task_makes_a_tool_fail(records):
    for r in records:
        results = [x for m in messages_of(r["text"]) if m["content"].startswith('{"results": ')
                   for x in json.loads(m["content"])["results"]]
        errors = [x for x in results if x["result"].startswith("error: ")]
        if r["kind"] == "error":
            assert len(errors) == 1
        elif r["kind"] != "two_requests":
            assert not errors, r["text"]


def test_kinds_call_as_they_say(records):
    for r in records:
        calls = r["calls"]
        if r["kind"] in ("irrelevant", "near_miss"):
            assert not calls and len([m for m in messages_of(r["text"]) if m["role"] == "assistant"]) == 1
        elif r["kind"] == "parallel":
            assert len(calls) >= 2 and len({c["tool"] for c in calls}) == 1
            assert len({json.dumps(c["input"], sort_keys=True) for c in calls}) == len(calls)
        elif r["kind"] == "multiple":
            assert len({c["tool"] for c in calls}) == len(calls) >= 2
        elif r["kind"] == "two_requests":
            assert len([m for m in messages_of(r["text"]) if m["role"] == "user" and not m["content"].startswith('{"results"')]) == 2
        else:
            assert len(calls) == 1


def test_string_values_passed_are_copied_from_the_request(records):
    """A name the call passes is in the request as written (dates and times are normalised)."""
    for r in records:
        if r["kind"] not in ("single", "parallel", "multiple"):
            continue
        prompt = messages_of(r["text"])[1]["content"]
        for c in r["calls"]:
            for v in c["input"].values():
                if isinstance(v, str) and not re.fullmatch(r"[0-9]{4}-[0-9]{2}-[0-9]{2}|[0-9]{2}:[0-9]{2}", v):
                    assert v.replace("_", " ") in prompt or v in prompt, (v, prompt)


def test_held_out_families_and_domains_never_appear_in_training(records, families):
    train = [r for r in records if r["split"] != "val_family"]
    assert all(families[r["family"]].split == "train" for r in train)
    assert all(families[r["family"]].split == "val_family" for r in records if r["split"] == "val_family")
    held_tools = {t.name for f in families.values() if f.domain in HELD_OUT for t in f.tools}
    for r in train:
        assert r["domain"] not in HELD_OUT
        assert not any(t.domain in HELD_OUT for t in families[r["family"]].tools)
        assert not any(f"## {name}\n" in r["text"] for name in held_tools if name not in {t.name for t in families[r["family"]].tools})
    assert {f.domain for f in families.values() if f.split == "val_family"} >= set(HELD_OUT)


def test_held_out_phrasings_never_appear_in_training(records):
    for r in records:
        if r["frame"] == "chat":
            continue
        assert phrasing.held_out(r["frame"]) == (r["split"] == "val_phrasing"), r["frame"]
    for pool in (phrasing.DO_FRAMES, phrasing.OBJ_FRAMES, phrasing.ASK_FRAMES, phrasing.MULTI_FRAMES, phrasing.PARALLEL_FRAMES):
        assert phrasing.frames(pool, True) and phrasing.frames(pool, False)


def test_the_mix_and_the_splits_are_as_configured(records):
    kinds, splits = Counter(r["kind"] for r in records), Counter(r["split"] for r in records)
    for kind, share in MIX.items():
        assert abs(kinds[kind] / COUNT - share) < 0.03, (kind, kinds[kind])
    for split, share in corpus.SPLITS.items():
        assert abs(splits[split] / COUNT - share) < 0.02, (split, splits[split])


def test_families_are_many_and_use_rich_inputs(families):
    assert len(families) >= 300 and len({f.domain for f in families.values()}) >= 30
    seen: Counter[str] = Counter()

    def walk(s):
        t = s.get("type")
        seen[t] += 1
        if "enum" in s:
            seen["enum"] += 1
        if "default" in s:
            seen["default"] += 1
        if t == "array":
            seen["array of " + s["items"]["type"]] += 1
            walk(s["items"])
        if t == "object":
            for p in s.get("properties", {}).values():
                walk(p)
            if set(s.get("properties", {})) - set(s.get("required", [])):
                seen["optional"] += 1

    for f in families.values():
        for t in f.tools:
            for p in t.schema["properties"].values():
                walk(p)
            seen["optional"] += len(t.schema["properties"]) > len(t.schema["required"])
    for feature in ("string", "integer", "number", "boolean", "enum", "default", "optional", "array of string",
                    "array of number", "array of object", "object"):
        assert seen[feature] >= 20, (feature, seen)
    names = [t.name for f in families.values() for t in f.tools]
    assert any("_" not in n for n in names) and any(n.startswith(("weather_", "finance_")) for n in names)
    assert any(re.search(r"[a-z][A-Z]", p) for f in families.values() for t in f.tools for p in t.schema["properties"])


def test_the_same_seed_gives_the_same_corpus_and_another_seed_another():
    a, b, c = corpus.generate(5, 150), corpus.generate(5, 150), corpus.generate(6, 150)
    assert a == b
    assert [r["text"] for r in a] != [r["text"] for r in c]


def test_a_run_ends_in_exactly_one_final_event(families):
    """The conversations come from runs that end as a user's would: one ending, a final."""
    rng = random.Random(3)
    loop = asyncio.new_event_loop()
    try:
        for kind in MIX:
            family = next(f for f in families.values() if f.split == "train" and len(f.tools) >= 2)
            task = make_task(rng, family, kind, val_phrasing=False)
            assert task is not None
            teacher, runtime = corpus.Teacher(), Runtime(fail=dict(task.fail))
            teacher.task, teacher.family = task, family
            agent = Agent(model=ScriptedModel(teacher), tools=aerix_tools(family, runtime), limits={"turns": 6, "retries": 0})

            async def events():
                return [e async for e in agent.run(task.prompt)]

            endings = [e for e in loop.run_until_complete(events()) if e.type in ("final", "end")]
            assert [e.type for e in endings] == ["final"], kind
    finally:
        loop.close()


def test_the_cli_writes_the_corpus_and_a_summary(tmp_path):
    assert corpus.main(["--out", str(tmp_path), "--seed", "2", "--count", "40"]) == 0
    lines = (tmp_path / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 40
    assert set(json.loads(lines[0])) == {"family", "domain", "split", "kind", "frame", "head", "text", "assistant_spans", "calls"}
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["conversations"] == 40 and sum(summary["by_kind"].values()) == 40 and summary["mean_chars"] > 0


def test_the_cli_puts_several_seeds_corpora_in_one_file_each_as_its_seed_alone_makes_it(tmp_path, capsys):
    """Training from all the seeds at once: --seeds writes --count of each, in order, each record
    naming its seed and otherwise the record that seed's own corpus has."""
    assert corpus.main(["--out", str(tmp_path / "both"), "--seeds", "2,7", "--count", "12"]) == 0
    both = [json.loads(ln) for ln in (tmp_path / "both" / "corpus.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [r.pop("seed") for r in both] == [2] * 12 + [7] * 12
    assert both == json.loads(json.dumps(corpus.generate(2, 12) + corpus.generate(7, 12)))  # as JSON writes it
    assert json.loads((tmp_path / "both" / "summary.json").read_text())["seeds"] == [2, 7]
    assert corpus._seed_list("all") == corpus.SEEDS
    for bad, why in (("2,x", "not `all` nor seeds"), ("2,2", "names a seed twice")):
        with pytest.raises(SystemExit):
            corpus.main(["--out", str(tmp_path), "--seeds", bad])
        assert why in capsys.readouterr().err


def test_the_cli_takes_a_mix_and_refuses_an_unknown_kind(tmp_path, capsys):
    assert corpus.main(["--out", str(tmp_path), "--count", "30", "--mix", "parallel=1"]) == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["by_kind"] == {"parallel": 30}
    with pytest.raises(SystemExit):
        corpus.main(["--out", str(tmp_path), "--mix", "parallell=1"])
    assert "unknown kind 'parallell'" in capsys.readouterr().err


def test_near_misses_stay_in_the_familys_domain_and_end_in_a_final_without_a_call(records, families):
    """Issue 29, run A: a request close to a tool that the tool cannot serve gets a final, no call."""
    near = [r for r in records if r["kind"] == "near_miss"]
    assert len(near) > 0.08 * COUNT
    for r in near:
        assert not r["calls"]
        messages = messages_of(r["text"])
        assert [m["role"] for m in messages] == ["system", "user", "assistant"]
        assert "calls" not in json.loads(messages[2]["content"]) and json.loads(messages[2]["content"])["final"]
        words = {w.rstrip("s") for t in families[r["family"]].tools for w in re.findall(r"[a-z]{3,}", " ".join((t.name, t.description, t.do, t.obj)).lower())}
        asked = {w.rstrip("s") for w in re.findall(r"[a-z]{3,}", messages[1]["content"].lower())}
        assert (words - COMMON) & asked, messages[1]["content"]


def test_every_near_miss_flavour_is_made_and_asks_what_the_tools_cannot(families):
    from build.general.nearmiss import FLAVOURS, near_miss, outputs, siblings
    rng, made = random.Random(11), Counter()
    for family in list(families.values())[:120]:
        for flavour in FLAVOURS:
            with siblings(True), outputs(True):  # run J's seed on
                task = near_miss(rng, family, False, flavour)
            if task is None:
                continue
            made[flavour] += 1
            assert not task.calls and task.reply and task.flavour == flavour
            if flavour == "range":  # a number past a maximum the family's schema sets
                n = int(re.search(r"\((\d+) asked\)", task.reply).group(1))
                maxima = [s.get("maximum", 0) for t in family.tools for s in t.schema["properties"].values()]
                assert n > min(m for m in maxima if m) and str(n) in task.prompt.replace(",", "")
            if flavour == "enum":  # a value no enum of the tool allows
                value = re.search(r"can't use the \w+ ([\w ]+?)[.:]|cannot use the \w+ ([\w ]+?)\.", task.reply)
                assert value, task.reply
    assert all(made[f] >= 10 for f in FLAVOURS), made
