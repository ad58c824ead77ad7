"""Artifact file names and the memory of an Agent without a store (issue 26, the low items)."""

from __future__ import annotations

import pytest
from helpers import calls, collect, final

from aerix import AerixError, Agent, tool
from aerix.artifacts import MEMORY_BYTES, MEMORY_RUNS, ArtifactMemory, RunArtifacts, check_file
from aerix.stores import MemoryStore
from aerix.testing import ScriptedModel


@pytest.mark.parametrize(
    ("name", "says"),
    [
        (".", "starts or ends with a blank or a dot"),
        ("..", "starts or ends with a blank or a dot"),
        ("../etc/passwd", "path separator"),
        ("a/b", "path separator"),
        ("a\\b", "path separator"),
        ("C:evil", "path separator"),
        ("a\u2215b", "path separator"),  # division slash
        ("a\u2044b", "path separator"),  # fraction slash
        ("a\u29f8b", "path separator"),  # big solidus
        ("a\uff0fb", "path separator"),  # fullwidth solidus
        ("a\uff3cb", "path separator"),  # fullwidth reverse solidus
        ("a\u2216b", "path separator"),  # set minus
        ("a\nb", "control character"),
        ("a\rb", "control character"),
        ("a\tb", "control character"),
        ("a\x00b", "control character"),
        ("a\x85b", "control character"),
        ("a\u2028b", "control character"),
        ("a\u2029b", "control character"),
        ("invoice\u202efdp.exe", "bidi overrides"),  # shows as invoiceexe.pdf
        ("a\u202ab", "bidi overrides"),
        ("a\u2066b\u2069", "bidi overrides"),
        ("a\u200eb", "bidi overrides"),
        ("a\u200fb", "bidi overrides"),
        ("a\u200bb", "invisible format character"),  # zero-width space
        ("a\ufeffb", "invisible format character"),
        ("a\ud800b", "control character"),  # a lone surrogate (a JS string may hold one)
        (" report.csv", "starts or ends with a blank or a dot"),
        ("report.csv ", "starts or ends with a blank or a dot"),
        ("report.", "starts or ends with a blank or a dot"),
        (".env", "starts or ends with a blank or a dot"),
        ("a\u3000", "starts or ends with a blank or a dot"),
        ("x" * 256, "longer than 255"),
        ("é" * 128, "longer than 255"),  # 256 bytes of UTF-8
    ],
)
async def test_a_file_name_that_is_not_a_plain_name_is_an_options_error_naming_it(name, says):
    with pytest.raises(AerixError) as e:
        check_file(b"x", "text/plain", name)
    assert e.value.kind == "options" and says in e.value.message and repr(name)[:40] in e.value.message, e.value.message
    agent = Agent(model=ScriptedModel([final("ok")]))
    with pytest.raises(AerixError) as e:
        agent.run("go", attachments=[(b"x", "text/plain", name)])
    assert e.value.kind == "options" and says in e.value.message


@pytest.mark.parametrize("name", ["report.csv", "a b.txt", "x..y.txt", "naïve café.txt", "天気.csv", "گزارش\u200cها.txt", "👩\u200d💻.png", "x" * 255, "Makefile"])
def test_plain_names_are_kept(name):
    assert check_file(b"x", "text/plain", name).filename == name


def maker(size: int = 3):
    async def run(input, ctx):
        art = await ctx.artifacts.put(b"x" * size, "application/octet-stream", "f.bin")
        return art.id

    return tool(name="make", description="Makes a file.", input={}, run=run)


async def test_without_a_store_the_latest_runs_artifacts_are_kept_and_reset_drops_them():
    runs = MEMORY_RUNS + 2
    model = ScriptedModel([reply for _ in range(runs) for reply in (calls(("make", {})), final("ok"))])
    agent = Agent(model=model, tools=[maker()])
    ids = []
    for _ in range(runs):
        events = await collect(agent.run("make"))
        ids.append(next(e.text for e in events if e.type == "result"))
    for old in ids[:2]:  # the oldest runs' were dropped
        with pytest.raises(AerixError) as e:
            await agent.artifact(old)
        assert e.value.reason == "artifact_not_found" and "without a store" in e.value.message
    for kept in ids[2:]:
        assert (await agent.artifact(kept))[1] == b"xxx"
    assert len(agent.artifact_store._by_run) == MEMORY_RUNS
    agent.reset()  # the conversation that named them is gone, and so are they
    with pytest.raises(AerixError):
        await agent.artifact(ids[-1])
    assert agent.artifact_store.size == 0


async def test_with_a_store_nothing_is_dropped():
    store = MemoryStore()
    model = ScriptedModel([reply for _ in range(MEMORY_RUNS + 1) for reply in (calls(("make", {})), final("ok"))])
    agent = Agent(model=model, tools=[maker()], store=store)
    for _ in range(MEMORY_RUNS + 1):
        await collect(agent.run("make"))
    agent.reset()
    assert len(store._artifacts) == MEMORY_RUNS + 1


async def test_the_byte_cap_drops_older_runs_first_and_refuses_one_run_past_it():
    memory = ArtifactMemory(runs=8, max_bytes=100)
    first, second = RunArtifacts(memory, "r1").for_call("c"), RunArtifacts(memory, "r2").for_call("c")
    a = await first.put(b"a" * 60, "text/plain")
    b = await second.put(b"b" * 30, "text/plain")
    assert memory.size == 90
    c = await second.put(b"c" * 30, "text/plain")  # 120 in all: r1 goes, r2 stays whole
    assert await memory.get_artifact(a.id) is None and memory.size == 60
    assert [m["id"] for m in await memory.list_artifacts("r2")] == [b.id, c.id]
    with pytest.raises(AerixError) as e:
        await second.put(b"d" * 41, "text/plain")  # r2 alone would take 101
    assert e.value.kind == "options" and "give the Agent a store" in e.value.message and memory.size == 60
    again = RunArtifacts(memory, "r2").for_call("c")  # the same call again puts in place: no double count
    await again.put(b"e" * 30, "text/plain")
    assert memory.size == 60 and memory.max_bytes == 100 and MEMORY_BYTES == 64 * 2**20


async def test_a_tool_past_the_cap_gets_an_error_result_and_the_run_goes_on():
    agent = Agent(model=ScriptedModel([calls(("make", {})), final("ok")]), tools=[maker(10)])
    agent.artifact_store = ArtifactMemory(runs=2, max_bytes=5)
    events = await collect(agent.run("make"))
    (result,) = [e for e in events if e.type == "result"]
    assert result.error and "over the 5 an Agent without a store keeps" in result.text
    assert events[-1].type == "final"
