"""Compaction (issue 22, item 1): a chat that outgrows the context goes on, compacted."""

from __future__ import annotations

import json

import pytest
from helpers import calls, collect, endings, final, run_coroutine
from hypothesis import given, settings
from hypothesis import strategies as st
from test_properties import replies
from tools_fixture import TOOLS

from aerix import AerixError, Agent, Compacted, Compaction, Limits, tool
from aerix.compaction import _DIGEST_HEAD, _SUMMARY_HEAD, SUMMARY_ASK, SUMMARY_SCHEMA, _cuts, digest
from aerix.stores import MemoryStore
from aerix.testing import Reply, ScriptedModel, _render

MAX_TOKENS = 200
WINDOW = 3000  # the fake counts a character as a token: about six exchanges fit


def lookup(input, ctx):
    return f"facts about {input['q']}: " + "lorem ipsum " * 20


LOOKUP = tool(name="lookup", description="Looks up.", input={"q": {"type": "string", "required": True}}, run=lookup)


def is_summary(options) -> bool:
    return options["constraint"] == SUMMARY_SCHEMA


def summarize(messages, options):
    return json.dumps({"summary": f"SUMMARY of {len(messages)} messages, the last {messages[-2]['content'][:40]!r}"})


def chat_script(summary=summarize):
    """Each prompt: one call, then an answer; the summary request answered by ``summary``."""

    def script(messages, options):
        if is_summary(options):
            return summary(messages, options)
        last = messages[-1]["content"]
        if last.startswith('{"results"'):
            return final("Here is what I found, in a few words.")
        return calls(("lookup", {"q": last[:24]}))

    return script


def agent_for(model, **options):
    limits = options.pop("limits", Limits(max_tokens=MAX_TOKENS, context_tokens=WINDOW))
    return Agent(model=model, tools=[LOOKUP], limits=limits, **options)


PROMPTS = [f"Question {i}: what about topic {i}, and why does it matter?" for i in range(10)]


async def chat(agent, prompts=PROMPTS):
    runs = []
    for prompt in prompts:
        runs.append(await collect(agent.run(prompt)))
    return runs


def main_calls(model):
    return [c for c in model.calls if not is_summary(c.options)]


async def test_a_long_chat_is_compacted_several_times_and_every_run_ends_once():
    model = ScriptedModel(chat_script())
    agent = agent_for(model)
    runs = await chat(agent)
    compactions = [e for run in runs for e in run if isinstance(e, Compacted)]
    assert len(compactions) >= 2
    assert all(c.method == "model" and c.note is None and c.dropped_turns >= 1 and c.tokens_after < c.tokens_before for c in compactions)
    for run in runs:
        assert [e.type for e in endings(run)] == ["final"] and run[-1].type == "final"
    # no prompt the engine was sent, the summary requests included, left less than max_tokens of room
    for call in model.calls:
        assert len(_render(call.messages)) + call.options["max_tokens"] <= WINDOW
    assert agent.messages[1]["content"].startswith("Earlier in this conversation (compacted to make room)")


async def test_the_summary_request_holds_every_message_it_replaces_the_users_included():
    model = ScriptedModel(chat_script())
    agent = agent_for(model)
    await chat(agent)
    summaries = [c for c in model.calls if is_summary(c.options)]
    assert len(summaries) >= 2
    for s in summaries:
        assert s.messages[-1]["content"] == SUMMARY_ASK
        # the request is the conversation's own first messages: the engine's cache serves it
        assert s.messages[0]["role"] == "system"
    # each prompt is in a summary's input or still in the conversation, verbatim
    seen = [m["content"] for s in summaries for m in s.messages] + [m["content"] for m in agent.messages]
    assert all(p in seen for p in PROMPTS)
    # and each summary request held every message of the conversation before its cut: the
    # conversation just before the request is the request's input plus what was kept
    for s in summaries:
        before = next(c for c in reversed(main_calls(model)[: _index(model, s)]))
        replaced = s.messages[:-1]
        assert before.messages[: len(replaced)] == replaced


def _index(model, call):
    return sum(1 for c in model.calls[: model.calls.index(call)] if not is_summary(c.options))


async def test_the_conversation_is_byte_stable_between_compactions():
    model = ScriptedModel(chat_script())
    runs = await chat(agent_for(model))
    # each main generation, with whether a compaction came just before it (usage: one per generation)
    sent, compacted, kinds = [], set(), iter(is_summary(c.options) for c in model.calls)
    for ev in (e for run in runs for e in run):
        if ev.type == "compact":
            compacted.add(len(sent))
        elif ev.type == "usage" and not next(kinds):
            sent.append(ev)
    calls = main_calls(model)
    assert len(compacted) >= 2 and len(calls) == len(sent)
    for i in range(1, len(calls)):
        before, now = calls[i - 1].messages, calls[i].messages
        if i not in compacted:  # the previous prompt, and its reply, are this one's first messages
            assert now[: len(before)] == before
        elif i + 1 < len(calls) and i + 1 not in compacted:  # one generation later the cache covers it all again
            assert sent[i + 1].cached_tokens >= len(_render(now))


async def test_a_cut_is_never_between_a_call_and_its_result():
    model = ScriptedModel(chat_script())
    agent = agent_for(model)
    await chat(agent)
    for call in main_calls(model):
        messages = call.messages
        for i, m in enumerate(messages):
            if m["role"] == "user" and m["content"].startswith('{"results"'):
                assert messages[i - 1]["role"] == "assistant" and '"calls"' in messages[i - 1]["content"]


def test_cuts_keep_the_prompt_with_its_turn_and_never_part_a_call_from_its_results():
    s, u, f, c, r = "system", "user", final("ok"), calls(("lookup", {"q": "x"})), '{"results": []}'
    messages = [{"role": role, "content": text} for role, text in [(s, "S"), (u, "p1"), ("assistant", c), (u, r), ("assistant", f), (u, "p2"), ("assistant", c), (u, r), ("assistant", f), (u, "p3")]]
    # keeping 2 turns: from the call of p2's turn back to p2 (after an answer, a cut may come)
    assert _cuts(messages, [2]) == [5]
    # keeping 1: the answer to p2, not its results (they answer the call before)
    assert _cuts(messages, [1]) == [8]
    assert _cuts(messages, [4, 9]) == []  # nothing to drop


async def test_the_digest_keeps_every_user_message_verbatim_and_asks_nothing():
    model = ScriptedModel(chat_script())
    agent = agent_for(model, compaction="digest")
    runs = await chat(agent)
    compactions = [e for run in runs for e in run if isinstance(e, Compacted)]
    assert len(compactions) >= 2 and {c.method for c in compactions} == {"digest"}
    assert not [c for c in model.calls if is_summary(c.options)]
    assert users_in(agent.messages) == PROMPTS  # all of them, verbatim, in order
    assert all(run[-1].type == "final" for run in runs)


def test_a_digest_shortens_calls_results_and_answers_and_leaves_out_refused_turns():
    turn = calls(("lookup", {"q": "Lisbon"}))
    results = json.dumps({"results": [{"id": "call_1", "tool": "lookup", "result": "x" * 500}]})
    messages = [
        {"role": "user", "content": 'Rain in "Lisbon"?\nAnd Porto?'},
        {"role": "assistant", "content": "{not json"},
        {"role": "user", "content": "Your last turn was refused (bad json: nope). Answer with one JSON object that follows the turn contract."},
        {"role": "assistant", "content": turn},
        {"role": "user", "content": results},
        {"role": "assistant", "content": final("It rains. " * 20)},
    ]
    entries = [json.loads(line) for line in digest(messages, 40).split("\n")]
    assert entries == [
        {"user": 'Rain in "Lisbon"?\nAnd Porto?'},
        {"call": "lookup", "input": {"q": "Lisbon"}},
        {"id": "call_1", "tool": "lookup", "result": "x" * 40 + "…", "length": 500},
        {"answer": ("It rains. " * 20)[:40] + "…", "length": 200},
    ]
    assert [json.loads(line) for line in digest(messages, 0).split("\n")] == [{"user": 'Rain in "Lisbon"?\nAnd Porto?'}]


def test_an_earlier_digest_is_cut_again_and_an_earlier_summary_kept():
    first = [{"role": "user", "content": "p1"}, {"role": "assistant", "content": final("a" * 300)}, {"role": "user", "content": "p2"}]
    again = [{"role": "user", "content": _DIGEST_HEAD + digest(first, 400)}, {"role": "assistant", "content": final("b")}]
    assert [json.loads(x) for x in digest(again, 0).split("\n")] == [{"user": "p1"}, {"user": "p2"}]
    assert {"answer": "a" * 100 + "…", "length": 300} in [json.loads(x) for x in digest(again, 100).split("\n")]
    summarized = [{"role": "user", "content": _SUMMARY_HEAD + "they asked twice"}, {"role": "user", "content": "p3"}]
    assert [json.loads(x) for x in digest(summarized, 0).split("\n")] == [{"summary": "they asked twice"}, {"user": "p3"}]


def users_in(messages):
    """The user's messages of a conversation, those a digest holds included."""
    out = []
    for m in messages[1:]:
        if m["content"].startswith(_DIGEST_HEAD):
            out += [e["user"] for e in map(json.loads, m["content"][len(_DIGEST_HEAD) :].split("\n")) if "user" in e]
        elif m["role"] == "user" and not m["content"].startswith('{"results"'):
            out.append(m["content"])
    return out


async def test_a_failed_summary_falls_back_to_the_digest_and_says_why():
    def failing(messages, options):
        raise RuntimeError("the engine choked")

    model = ScriptedModel(chat_script(failing))
    runs = await chat(agent_for(model))
    compactions = [e for run in runs for e in run if isinstance(e, Compacted)]
    assert compactions and all(c.method == "digest" and "the engine choked" in c.note for c in compactions)
    assert all(run[-1].type == "final" for run in runs)


@pytest.mark.parametrize(
    "reply, why",
    [
        (Reply('{"summary": "and then the', finish_reason="length"), "cut at"),
        ('{"gist": "wrong shape"}', "did not read"),
        ('{"summary": "   "}', "did not read"),
    ],
)
async def test_a_cut_or_unreadable_summary_falls_back_to_the_digest(reply, why):
    model = ScriptedModel(chat_script(lambda m, o: reply))
    runs = await chat(agent_for(model))
    compactions = [e for run in runs for e in run if isinstance(e, Compacted)]
    assert compactions and all(c.method == "digest" and why in c.note for c in compactions)
    assert all(run[-1].type == "final" for run in runs)


async def test_the_summary_generation_counts_in_the_runs_tokens_and_usage_events():
    model = ScriptedModel(chat_script())
    runs = await chat(agent_for(model))
    usages = [e for run in runs for e in run if e.type == "usage"]
    assert len(usages) == len(model.calls)  # one per generation, the summaries' included
    compacting = next(run for run in runs if any(isinstance(e, Compacted) for e in run))
    kinds = [e.type for e in compacting if e.type in ("usage", "compact")]
    assert kinds[kinds.index("compact") - 1] == "usage"  # the summary's usage comes right before


async def test_a_result_too_long_for_the_context_is_cut_to_fit_not_sent_to_the_engine():
    big = tool(name="lookup", description="Looks up.", input={"q": {"type": "string", "required": True}}, run=lambda i, c: "x" * 4000)
    model = ScriptedModel(chat_script())
    agent = Agent(model=model, tools=[big], limits=Limits(max_tokens=MAX_TOKENS, context_tokens=WINDOW, result_chars=None))
    events = await collect(agent.run("Look it up."))
    assert [e.type for e in endings(events)] == ["final"]
    [result] = [e for e in events if e.type == "result"]
    assert "[cut: the result was 4000 characters; this is the first" in result.text
    assert all(len(_render(c.messages)) + MAX_TOKENS <= WINDOW for c in model.calls)  # the engine never got a prompt that could not fit


async def test_without_compaction_nothing_changes():
    model = ScriptedModel(chat_script())
    agent = agent_for(model, compaction=None)
    runs = await chat(agent, PROMPTS[:8])
    assert not [e for run in runs for e in run if isinstance(e, Compacted)]
    assert all(m in agent.messages for m in main_calls(model)[-1].messages)
    assert len(_render(main_calls(model)[-1].messages)) > WINDOW  # the engine would have said


async def test_an_abort_during_the_summary_ends_the_run_abort():
    def stopped(messages, options):
        options["signal"].abort("the user pressed stop")
        return '{"summary": "too late"}'

    runs = await chat(agent_for(ScriptedModel(chat_script(stopped))))
    aborted = [run for run in runs if run[-1].type == "end"]
    assert aborted and all(run[-1].reason == "abort" and "during a compaction" in run[-1].message for run in aborted)
    assert not [e for run in runs for e in run if isinstance(e, Compacted)]
    assert all(len(endings(run)) == 1 for run in runs)


async def test_a_durable_run_checkpoints_the_compacted_conversation():
    store = MemoryStore()
    model = ScriptedModel(chat_script())
    agent = agent_for(model, store=store)
    runs = await chat(agent)
    assert any(isinstance(e, Compacted) for run in runs for e in run)
    last = (await store.list_runs())[-1]
    assert last["checkpoint"]["messages"] == agent.messages
    assert last["checkpoint"]["messages"][1]["content"].startswith("Earlier in this conversation")
    assert last["checkpoint"]["measured"][0] > 0  # the engine's count rides along


def test_options_are_checked():
    with pytest.raises(AerixError, match="leaves no room"):
        Limits(max_tokens=512, context_tokens=512)
    with pytest.raises(AerixError, match="context_tokens"):
        Limits(context_tokens=0)
    with pytest.raises(AerixError, match="'model', 'digest', None"):
        Compaction.of("smart")
    with pytest.raises(AerixError, match="keep_turns"):
        Compaction(keep_turns=0)
    with pytest.raises(AerixError, match="unknown Compaction option"):
        Compaction.of({"keep": 2})
    assert Compaction.of("digest") == Compaction(method="digest")
    assert Compaction.of({"keep_turns": 3}) == Compaction(keep_turns=3)
    assert Compaction.of(None) is None
    assert Agent(model=ScriptedModel([])).compaction == Compaction()  # "model" by default


@settings(max_examples=120, deadline=None)
@given(
    script=st.lists(st.one_of(replies, st.just('{"summary": "what happened so far"}')), max_size=14),
    window=st.integers(1600, 3600),
    method=st.sampled_from(["model", "digest"]),
    keep=st.integers(1, 3),
    constrain=st.booleans(),
)
def test_any_model_output_with_compaction_yields_exactly_one_ending_per_run(script, window, method, keep, constrain):
    model = ScriptedModel(script)
    limits = Limits(turns=6, max_tokens=100, context_tokens=window)
    agent = Agent(model=model, tools=TOOLS, limits=limits, constrain=constrain, compaction=Compaction(method=method, keep_turns=keep))
    for prompt in ("go", "again", "once more", "and again"):
        before = agent.messages
        try:
            events = run_coroutine(collect(agent.run(prompt)))
        except AerixError as e:  # a prompt the context has no room for: refused, the conversation as it was
            assert e.kind == "options" and "prompt is too long" in e.message and agent.messages == before
            continue
        ends = endings(events)
        assert len(ends) == 1 and events[-1] is ends[0]
        for ev in events:
            json.dumps(ev.to_dict())
    messages = agent.messages
    for i, m in enumerate(messages):  # no cut ever parted a turn of calls from its results
        if m["role"] == "assistant" and '"calls"' in m["content"] and i + 1 < len(messages):
            assert messages[i + 1]["role"] == "user"


async def test_before_the_engines_first_count_the_estimate_alone_ends_no_run():
    agent = Agent(model=ScriptedModel([final("short"), final("again")]), limits=Limits(max_tokens=100, context_tokens=400))
    long = "a long question " * 40  # about 330 tokens at 2 bytes a token, 650 by the fake's count
    first = await collect(agent.run(long))
    assert first[-1].type == "final"  # the engine had the last word (this fake takes anything)
    second = await collect(agent.run("and?"))
    assert second[-1].type == "end" and second[-1].reason == "context"  # now its own count says so


def test_the_page_takes_the_options_in_its_own_words():
    from aerix.page import create_agent, event_view

    page = create_agent(ScriptedModel([]), {"limits": {"contextTokens": 4096, "maxTokens": 256}, "compaction": {"method": "digest", "keepTurns": 3}})
    assert page.agent.limits.context_tokens == 4096 and page.agent.compaction == Compaction(method="digest", keep_turns=3)
    assert create_agent(ScriptedModel([]), {}).agent.compaction == Compaction()
    assert create_agent(ScriptedModel([]), {"compaction": None}).agent.compaction is None
    with pytest.raises(AerixError, match="in a store"):
        create_agent(ScriptedModel([]), {"conversationId": "chat-1"})
    view = event_view(Compacted(3, 900, 400, "digest", "the summary was cut at 128 tokens"))
    assert view == {"type": "compact", "droppedTurns": 3, "tokensBefore": 900, "tokensAfter": 400, "method": "digest", "note": "the summary was cut at 128 tokens"}
