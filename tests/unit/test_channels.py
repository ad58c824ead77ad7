"""Channels (issue 19, point 5): console_channel, ctx.channels.find_one(name).emit(...), each
message sent once per key across crashes and resumes, JS-shaped channels (aerix.page)."""

from __future__ import annotations

import asyncio
import inspect

import pytest
from helpers import Crash, CrashingStore, calls, collect, final

from aerix import AerixError, Agent, Limits, Message, TurnFormat, console_channel, tool
from aerix.page import create_agent, js_channel
from aerix.stores import MemoryStore
from aerix.testing import ScriptedModel


class Recorder:
    """A channel that keeps what it was sent."""

    def __init__(self, name="team"):
        self.name = name
        self.sent: list[Message] = []

    def out(self, message):
        self.sent.append(message)


async def notify_run(input, ctx):
    sent = await ctx.channels.find_one(input["channel"]).emit(input["text"], title=input.get("title"), key=input.get("key"))
    return f"sent {sent.key}"


notify = tool(
    name="notify",
    description="Send a message to a channel.",
    input={
        "channel": {"type": "string", "required": True},
        "text": {"type": "string", "required": True},
        "title": {"type": "string"},
        "key": {"type": "string"},
    },
    run=notify_run,
)


def say(text="Lunch at one.", channel="team", **more):
    return calls(("notify", {"channel": channel, "text": text, **more}))


def by_turn(*replies):
    """A model whose reply depends only on how far the conversation is, as a resumed run needs."""
    return ScriptedModel(lambda messages, options: replies[sum(m["role"] == "assistant" for m in messages)])


def results(events):
    return [e for e in events if e.type == "result"]


# -- the console channel ------------------------------------------------------------------


async def test_the_console_channel_writes_each_message_with_its_title_line():
    lines = []
    agent = Agent(model=ScriptedModel([say("Build is green.", "console", title="CI"), say("No title.", "console"), final("ok")]), tools=[notify], channels=[console_channel(write=lines.append)])
    events = await collect(agent.run("go"))
    assert lines == ["[console] CI\nBuild is green.", "[console]\nNo title."]
    assert events[-1].type == "final" and not any(r.error for r in results(events))


async def test_the_console_channel_prints_by_default(capsys):
    agent = Agent(model=ScriptedModel([say("Hello.", "dev", title="Hi"), final("ok")]), tools=[notify], channels=[console_channel(name="dev")])
    await collect(agent.run("go"))
    assert capsys.readouterr().out == "[dev] Hi\nHello.\n"


# -- finding a channel --------------------------------------------------------------------


async def test_an_unknown_channel_is_an_error_result_naming_it_and_the_known_ones():
    agent = Agent(model=ScriptedModel([say(channel="slack"), final("ok")]), tools=[notify], channels=[Recorder("team"), console_channel()])
    events = await collect(agent.run("go"))
    (result,) = results(events)
    assert result.error and "'slack'" in result.text and "'team'" in result.text and "'console'" in result.text
    assert events[-1].type == "final"


def test_bad_channels_are_refused_when_the_agent_is_built():
    model = ScriptedModel([])
    for bad in ([Recorder("team"), Recorder("team")], [Recorder("a:b")], [Recorder("")], [object()], Recorder("team")):
        with pytest.raises(AerixError) as e:
            Agent(model=model, channels=bad)
        assert e.value.kind == "options"
    with pytest.raises(AerixError, match="two channels are named 'team'"):
        Agent(model=model, channels=[Recorder("team"), console_channel(name="team")])


# -- sending ------------------------------------------------------------------------------


async def test_without_a_store_every_emit_is_sent():
    team = Recorder()
    # the repeat guard off: with it, the second identical call would be answered from the first
    agent = Agent(model=ScriptedModel([say(), say(), final("ok"), say(), final("ok")]), tools=[notify], channels=[team], limits=Limits(repeat_calls=None))
    await collect(agent.run("go"))
    await collect(agent.run("again"))
    assert [m.body for m in team.sent] == ["Lunch at one."] * 3
    assert all(m.key.startswith("memory:emit:team:") for m in team.sent)


async def test_an_async_out_is_awaited_before_emit_returns():
    done = []

    class Slow:
        name = "slow"

        async def out(self, message):
            await asyncio.sleep(0)
            done.append(message)

    async def run(input, ctx):
        await ctx.channels.find_one("slow").emit("hi")
        return f"delivered {len(done)}"

    ping = tool(name="ping", description="Ping.", input={}, run=run)
    events = await collect(Agent(model=ScriptedModel([calls(("ping", {})), final("ok")]), tools=[ping], channels=[Slow()]).run("go"))
    assert [r.text for r in results(events)] == ["delivered 1"]


async def test_a_channel_whose_out_raises_is_the_calls_error_result_and_nothing_is_recorded():
    class Down:
        name = "team"
        keys: list[str] = []

        def out(self, message):
            self.keys.append(message.key)
            if len(self.keys) == 1:
                raise ConnectionError("the chat server is down")

    store = MemoryStore()
    agent = Agent(model=ScriptedModel([say(), say(), final("ok")]), tools=[notify], channels=[Down()], store=store)
    events = await collect(agent.run("go", run_id="r1"))
    first, second = results(events)
    assert first.error and "the chat server is down" in first.text
    assert not second.error and len(Down.keys) == 2  # the next call sends it
    assert await store.get_effect(Down.keys[0]) is None and await store.get_effect(Down.keys[1]) == "sent"


async def test_a_durable_emit_is_keyed_by_run_channel_and_message_and_recorded():
    team, store = Recorder(), MemoryStore()
    agent = Agent(model=ScriptedModel([say(), final("ok")]), tools=[notify], channels=[team], store=store)
    await collect(agent.run("go", run_id="r1"))
    (message,) = team.sent
    assert message == Message("team", "Lunch at one.", None, message.key)
    assert message.key.startswith("r1:emit:team:") and len(message.key.rsplit(":", 1)[1]) == 64
    assert await store.get_effect(message.key) == "sent"


async def test_the_same_message_twice_is_sent_twice_from_one_call_or_two():
    async def twice(input, ctx):
        team = ctx.channels.find_one("team")
        keys = {(await team.emit("Same.")).key, (await team.emit("Same.")).key}
        return str(len(keys))

    double = tool(name="double", description="Sends twice.", input={}, run=twice)
    team = Recorder()
    limits = Limits(repeat_calls=None)  # the guard off and the turn's repeats kept, so the identical second call runs
    keep = TurnFormat(duplicate_calls="keep")
    agent = Agent(model=ScriptedModel([calls(("double", {}), ("double", {})), final("ok")]), tools=[double], channels=[team], store=MemoryStore(), limits=limits, turn_format=keep)
    events = await collect(agent.run("go"))
    assert [r.text for r in results(events)] == ["2", "2"]
    assert len(team.sent) == 4 and len({m.key for m in team.sent}) == 4


async def test_a_given_key_is_used_as_it_is_and_makes_the_message_once_only_beyond_one_run():
    team, store = Recorder(), MemoryStore()
    agent = Agent(model=ScriptedModel([say(key="report:2024-05-01"), final("ok"), say(key="report:2024-05-01"), final("ok")]), tools=[notify], channels=[team], store=store)
    first = await collect(agent.run("go", run_id="r1"))
    second = await collect(agent.run("again", run_id="r2"))
    assert [m.key for m in team.sent] == ["report:2024-05-01"]
    assert [r.text for r in results(first) + results(second)] == ["sent report:2024-05-01"] * 2
    assert await store.get_effect("report:2024-05-01") == "sent"


async def test_bad_emit_arguments_are_error_results():
    async def bad(input, ctx):
        return await ctx.channels.find_one("team").emit(*input["args"])

    for args in ([3], ["hi", 4], ["hi", None, ""]):
        t = tool(name="bad", description="Bad.", input={}, run=lambda i, c, a=args: bad({"args": a}, c))
        events = await collect(Agent(model=ScriptedModel([calls(("bad", {})), final("ok")]), tools=[t], channels=[Recorder()]).run("go"))
        (result,) = results(events)
        assert result.error and "emit to 'team'" in result.text


# -- crash and resume: never sent twice ---------------------------------------------------


def crashing_agent(store, team):
    return Agent(model=by_turn(say(), say("Second."), final("ok")), tools=[notify], channels=[team], store=store)


@pytest.mark.parametrize("at", range(1, 8))
async def test_a_crash_after_any_checkpoint_then_resume_sends_each_message_once(at):
    store, team = CrashingStore(at=at), Recorder()
    with pytest.raises(Crash):
        await collect(crashing_agent(store, team).run("go", run_id="r1"))
    events = await collect(crashing_agent(store, team).resume("r1"))
    assert events[-1].type == "final"
    assert [m.body for m in team.sent] == ["Lunch at one.", "Second."]


async def test_a_crash_after_the_send_and_its_record_then_resume_does_not_send_again():
    store, team = CrashingStore(at=1, what="put_effect"), Recorder()
    with pytest.raises(Crash):
        await collect(crashing_agent(store, team).run("go", run_id="r1"))
    assert len(team.sent) == 1
    events = await collect(crashing_agent(store, team).resume("r1"))
    assert [m.body for m in team.sent] == ["Lunch at one.", "Second."]
    assert events[-1].type == "final" and not any(r.error for r in results(events))


async def test_a_crash_between_the_send_and_its_record_sends_again_the_documented_unknown_outcome():
    store, team = CrashingStore(at=1, what="put_effect", before=True), Recorder()
    with pytest.raises(Crash):
        await collect(crashing_agent(store, team).run("go", run_id="r1"))
    await collect(crashing_agent(store, team).resume("r1"))
    assert [m.body for m in team.sent] == ["Lunch at one.", "Lunch at one.", "Second."]
    assert team.sent[0].key == team.sent[1].key  # same key: a channel that drops repeats closes the gap


async def test_a_call_that_runs_again_after_an_approval_does_not_send_again():
    async def announce(input, ctx):
        await ctx.channels.find_one("team").emit("About to deploy.")
        decision = await ctx.approve("Deploy?")
        return "deployed" if decision else "not deployed"

    deploy = tool(name="deploy", description="Deploy.", input={}, run=announce)
    team, store = Recorder(), MemoryStore()

    def agent():
        return Agent(model=by_turn(calls(("deploy", {})), final("ok")), tools=[deploy], channels=[team], store=store)

    waiting = (await collect(agent().run("go")))[-1]
    assert waiting.type == "waiting" and len(team.sent) == 1
    events = await collect(agent().approve(waiting.run_id, waiting.approval_id, True))
    assert [r.text for r in results(events)] == ["deployed"] and len(team.sent) == 1


# -- channels made in JavaScript (aerix.page), on CPython -------------------------------------


async def call_like_js(fn, *args):
    """What ``aerix._js.call_js`` does, for Python values: call, await a Promise-like result."""
    value = fn(*args)
    return await value if inspect.isawaitable(value) else value


async def test_a_js_channel_gets_the_message_as_a_plain_object():
    got = []

    async def out(message):  # a JS out(message): a plain object in, maybe a Promise out
        got.append(message)

    toast = js_channel({"name": "toast", "out": out}, call=call_like_js)
    agent = Agent(model=ScriptedModel([say("Note saved.", "toast", title="save_note"), final("ok")]), tools=[notify], channels=[toast], store=MemoryStore())
    events = await collect(agent.run("go", run_id="r1"))
    assert not any(r.error for r in results(events))
    (message,) = got
    assert type(message) is dict and set(message) == {"channel", "body", "title", "key"}
    assert message["channel"] == "toast" and message["body"] == "Note saved." and message["title"] == "save_note"
    assert message["key"].startswith("r1:emit:toast:")


async def test_a_js_channel_may_be_an_object_with_a_method():
    class Toaster:  # a JS class instance stays a proxy: its name and its out method are read from it
        name = "toast"

        def __init__(self):
            self.shown = []

        def out(self, message):
            self.shown.append(message["body"])

    toaster = Toaster()
    agent = Agent(model=ScriptedModel([say("Hi.", "toast"), final("ok")]), tools=[notify], channels=[js_channel(toaster, call=call_like_js)])
    await collect(agent.run("go"))
    assert toaster.shown == ["Hi."]


def test_create_agent_takes_channels_and_refuses_bad_ones():
    def out(message):
        return None

    page = create_agent(ScriptedModel([]), {"channels": [{"name": "toast", "out": out}, {"name": "log", "out": out}]})
    assert list(page.agent.channels) == ["toast", "log"]
    for bad in ([{"name": "toast", "out": out}, {"name": "toast", "out": out}], [{"name": "toast"}], [{"out": out}], {"name": "toast", "out": out}):
        with pytest.raises(AerixError) as e:
            create_agent(ScriptedModel([]), {"channels": bad})
        assert e.value.kind == "options"


async def test_a_run_s_source_channel_is_ctx_channels_source_and_survives_resume():
    from aerix import console_channel

    lines_a, lines_b = [], []

    async def reply(input, ctx):
        await ctx.approve("ok?")
        await ctx.channels.source.emit("on my way", title="reply")
        return "replied"

    def make(store):
        return Agent(
            model=ScriptedModel([calls(("reply", {})), final("done")]),
            tools=[tool(name="reply", description="Replies.", input={}, run=reply)],
            channels=[console_channel("sms", write=lines_a.append), console_channel("mail", write=lines_b.append)],
            store=store,
        )

    store = MemoryStore()
    waiting = (await collect(make(store).run("go", source="mail")))[-1]
    assert (await make(store).get_run(waiting.run_id)).source == "mail"
    await collect(make(store).approve(waiting.run_id, waiting.approval_id, True))
    assert lines_a == [] and lines_b == ["[mail] reply\non my way"]
    with pytest.raises(AerixError) as e:
        make(store).run("go", source="pigeon")
    assert e.value.kind == "options" and "'pigeon'" in e.value.message
    no_source = tool(name="reply", description="Replies.", input={}, run=lambda i, c: repr(c.channels.source))
    events = await collect(Agent(model=ScriptedModel([calls(("reply", {})), final("ok")]), tools=[no_source]).run("go"))
    assert [e.text for e in events if e.type == "result"] == ["None"]
