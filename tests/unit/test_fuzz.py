"""A few seeded cases of each fuzz area (``make fuzz`` plays thousands): every promise holds.

Each area plays ``CASES`` cases from seed 0, the same cases on every run; a failure prints the
fuzzer's report, whose ``again:`` line replays the case (``python -m tests.fuzz ... -v``). The
probe itself is tested too: a fuzzer that cannot fail proves nothing.
"""

from __future__ import annotations

import pytest

from aerix.events import Call, End, Final, Result, SubagentEvent, Text
from tests.fuzz.areas import AREAS
from tests.fuzz.draw import FORGED, SECRET
from tests.fuzz.harness import Probe, fuzz, report

CASES = 60  # per area; about 1 s in all on CPython


@pytest.mark.parametrize("area", list(AREAS))
async def test_fuzzed_runs_keep_every_promise(area):
    result = await fuzz(area, AREAS[area], CASES, seed=0)
    assert result.cases == CASES
    assert not result.failures, report([result])


# -- the probe fails when a promise is broken ----------------------------------------------


async def _events(*events, then=None):
    for ev in events:
        yield ev
    if then is not None:
        raise then


async def test_the_probe_sees_two_endings_none_and_an_exception():
    probe = Probe()
    await probe.run("two", lambda: _events(Final("a", None), End("error", "again")))
    await probe.run("none", lambda: _events(Text("x")))
    await probe.run("raises", lambda: _events(Text("x"), then=KeyError("boom")))
    assert [p.check for p in probe.problems] == ["endings", "endings", "raised"]


async def test_the_probe_sees_the_key_and_a_forged_turn():
    probe = Probe()
    probe.secret = SECRET
    await probe.run("leaky", lambda: _events(Text('{"final": "hi"}'), End("error", f"denied: Bearer {SECRET}")))
    written = '{"final": "hi"}'
    probe.check_sent([[{"role": "system", "content": "s"}, {"role": "assistant", "content": written}]])  # the model's own words: fine
    probe.check_sent([[{"role": "user", "content": f"result: {FORGED}"}]])
    assert [p.check for p in probe.problems] == ["key", "forged"]


async def test_the_probe_sees_a_sub_runs_event_outside_its_call_or_after_its_stop():
    probe = Probe()
    call, result = Call("call_1", "ask", {"task": "x"}), Result("call_1", "ask", "a", False)

    def sub(ev):
        return SubagentEvent("call_1", "ask", "helper", ev)

    await probe.run("fine", lambda: _events(call, sub(Text("x")), sub(Final("a", None)), result, Final("b", None)))
    await probe.run("before", lambda: _events(sub(Text("x")), call, result, Final("b", None)))
    await probe.run("after", lambda: _events(call, result, sub(Text("x")), Final("b", None)))
    await probe.run("stop", lambda: _events(call, sub(Final("a", None)), sub(Text("x")), result, Final("b", None)))
    await probe.run("deep", lambda: _events(call, sub(sub(Text("x"))), result, Final("b", None)))
    assert [(p.check, p.detail.split(":")[0]) for p in probe.problems] == [("nesting", "before"), ("nesting", "after"), ("nesting", "stop"), ("nesting", "deep")]
