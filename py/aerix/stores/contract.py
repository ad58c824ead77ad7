"""The contract every store keeps, as checks you can run on your own store.

    from aerix.stores.contract import CHECKS, verify_store

    await verify_store(lambda: MyStore(...))          # raises AssertionError naming the check

    @pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__)
    async def test_my_store(check):
        await check(MyStore(...))                     # a fresh, empty store per check

Each check takes a fresh, empty store and raises ``AssertionError`` when the store breaks the
contract. Records are JSON: what goes in must come out equal, and later changes to the dict a
caller holds must not reach the store. Leases are given by the caller's clock (``now``), never
the store's, so the checks use small made-up times. Saves are compare-and-set on the record's
``revision`` and fenced by the run's lease, as are effect records: a stale save, and a write by a
holder that no longer holds the lease, must be refused (``False``), racing saves included.

A row the store cannot decode at all (text that is not JSON) cannot be made through the protocol;
test it with your own medium, as ``tests/unit/test_stores.py`` does for SQLite: it must come back
as ``{"id": <its id>, "corrupt": <why>}`` and hide no other record.

Optional methods (runs by status, state items; ``aerix.stores``) pass their checks on a store without them.
"""

from __future__ import annotations

import asyncio
import hashlib
from typing import Any, Awaitable, Callable

from . import has_runs_by_status, has_state_items

__all__ = ["CHECKS", "verify_store"]


def _run(run_id: str, created_at: float = 1.0, key: str | None = None, **extra: Any) -> dict[str, Any]:
    return {
        "id": run_id,
        "prompt": f"prompt of {run_id}",
        "status": "queued",
        "idempotency_key": key,
        "created_at": created_at,
        "updated_at": created_at,
        "checkpoint": None,
        "ending": None,
        "approvals": {},
        **extra,
    }


async def check_a_created_run_reads_back_equal(store: Any) -> None:
    run = _run("r1", checkpoint={"messages": [{"role": "user", "content": "héllo ✓"}], "n": 1.5, "ok": True, "none": None})
    created = await store.create_run(run)
    assert created == run, "create_run must return the run it stored"
    assert await store.get_run("r1") == run, "get_run must return what was stored"


async def check_a_missing_run_is_none(store: Any) -> None:
    assert await store.get_run("nope") is None


async def check_the_same_idempotency_key_finds_the_first_run(store: Any) -> None:
    first = await store.create_run(_run("r1", key="k"))
    again = await store.create_run(_run("r2", created_at=2.0, key="k"))
    assert again["id"] == first["id"] == "r1", "a second start with the same key must return the first run"
    assert [r["id"] for r in await store.list_runs()] == ["r1"], "no second run may be made"
    await store.create_run(_run("r3", created_at=3.0, key="other"))
    assert [r["id"] for r in await store.list_runs()] == ["r1", "r3"]


async def check_creating_an_existing_id_keeps_the_stored_run(store: Any) -> None:
    await store.create_run(_run("r1", status="running"))
    again = await store.create_run(_run("r1", status="queued"))
    assert again["status"] == "running"
    assert (await store.get_run("r1"))["status"] == "running"


async def check_save_replaces_the_whole_record(store: Any) -> None:
    await store.create_run(_run("r1"))
    changed = _run("r1", status="waiting", checkpoint={"step": 2}, approvals={"a": {"id": "a", "decision": None}})
    assert await store.save_run(changed) is True, "save_run answers True when it wrote"
    assert await store.get_run("r1") == changed


async def check_the_callers_dict_is_not_the_stored_one(store: Any) -> None:
    run = _run("r1", checkpoint={"messages": []})
    await store.create_run(run)
    run["checkpoint"]["messages"].append({"role": "user", "content": "later"})
    read = await store.get_run("r1")
    assert read["checkpoint"]["messages"] == [], "the store must keep a copy, not the caller's dict"
    read["status"] = "failed"
    assert (await store.get_run("r1"))["status"] == "queued"


async def check_runs_are_listed_oldest_first(store: Any) -> None:
    for run_id, t in (("b", 2.0), ("c", 3.0), ("a", 1.0)):
        await store.create_run(_run(run_id, created_at=t))
    assert [r["id"] for r in await store.list_runs()] == ["a", "b", "c"]


async def check_effects_are_kept_by_key(store: Any) -> None:
    assert await store.get_effect("run:tool:abc") is None
    await store.put_effect("run:tool:abc", "sent ✓")
    assert await store.get_effect("run:tool:abc") == "sent ✓"
    assert await store.get_effect("run:tool:abd") is None
    await store.put_effect("run:tool:abc", "")
    assert await store.get_effect("run:tool:abc") == "", "an empty result is a result, not a missing one"


# -- writes that cannot go stale: revisions and fencing --------------------------------------


async def check_a_stale_save_is_refused(store: Any) -> None:
    await store.create_run(_run("r1"))  # no revision: revision 0
    first = _run("r1", status="running", checkpoint={"step": 1}, revision=1)
    assert await store.save_run(first, 0, None) is True, "a save at the stored revision (none: 0) writes"
    stale = _run("r1", status="interrupted", checkpoint={"step": 0}, revision=1)
    assert await store.save_run(stale, 0, None) is False, "a save from a copy read at an older revision must be refused"
    assert await store.get_run("r1") == first, "a refused save changes nothing"
    ended = _run("r1", status="completed", checkpoint={"step": 2}, ending={"type": "final"}, revision=2)
    assert await store.save_run(ended, 1, None) is True
    assert await store.save_run(_run("r1", status="running", revision=2), 1, None) is False, "an ended run must not be set back"
    assert await store.save_run(_run("r1", status="running", revision=9), 8, None) is False, "nor by a revision the store never had"
    assert await store.get_run("r1") == ended
    assert await store.save_run(_run("r2", revision=1), 0, None) is True, "a record the store lacks is at revision 0"
    assert await store.save_run(_run("r3", revision=4), 3, None) is False, "and at no other"
    assert await store.get_run("r3") is None and [r["id"] for r in await store.list_runs()] == ["r1", "r2"]


async def check_of_racing_saves_of_one_revision_exactly_one_wins(store: Any) -> None:
    await store.create_run(_run("r1"))
    copies = [_run("r1", status="running", checkpoint={"by": i}, revision=1) for i in range(16)]
    won = await asyncio.gather(*(store.save_run(c, 0, None) for c in copies))
    assert list(won).count(True) == 1, f"{list(won).count(True)} of 16 saves of revision 0 were written: compare and write must be one step"
    assert await store.get_run("r1") == copies[won.index(True)], "the winner's record is kept"


async def check_a_save_by_a_holder_without_the_lease_is_refused(store: Any) -> None:
    await store.create_run(_run("r1"))
    assert await store.save_run(_run("r1", revision=1), 0, "a") is False, "a holder of no lease may not write"
    await store.acquire_lease("run:r1", "a", 20.0, 10.0)
    await store.acquire_lease("run:r2", "b", 20.0, 10.0)
    assert await store.save_run(_run("r1", status="running", revision=1), 0, "b") is False, "a lease of another run does not fence this one"
    assert await store.save_run(_run("r1", status="running", revision=1), 0, "a") is True, "the holder writes"
    await store.acquire_lease("run:r1", "b", 50.0, 30.0)  # a's lease expired and b took it over
    assert await store.save_run(_run("r1", status="completed", revision=2), 1, "a") is False, "the old holder's write must be refused"
    assert await store.save_run(_run("r1", status="failed", revision=2), 1, "b") is True
    await store.release_lease("run:r1", "b")
    assert await store.save_run(_run("r1", status="running", revision=3), 2, "b") is False, "a released lease fences its old holder too"
    assert (await store.get_run("r1"))["status"] == "failed"
    await store.acquire_lease("run:r1", "c", 60.0, 40.0)
    await store.acquire_lease("run:r1", "c", 60.0, 70.0)  # expired, still c's: nobody took it over
    assert await store.save_run(_run("r1", status="running", revision=3), 2, "c") is True, "an expired lease nobody took over is still its holder's"


async def check_an_effect_put_by_a_holder_without_the_lease_is_refused(store: Any) -> None:
    assert await store.put_effect("e1", "sent", "r1", "a") is False, "a holder of no lease may not record an effect"
    assert await store.get_effect("e1") is None
    await store.acquire_lease("run:r1", "a", 20.0, 10.0)
    assert await store.put_effect("e1", "sent by a", "r1", "a") is True
    await store.acquire_lease("run:r1", "b", 50.0, 30.0)
    assert await store.put_effect("e1", "sent again by a", "r1", "a") is False, "the old holder's effect must be refused"
    assert await store.put_effect("e2", "x", "r1", "a") is False
    assert await store.get_effect("e1") == "sent by a" and await store.get_effect("e2") is None
    assert await store.put_effect("e1", "sent by b", "r1", "b") is True
    assert await store.put_effect("e3", "free", None, None) is True, "no run and holder: no fence"
    assert await store.get_effect("e1") == "sent by b" and await store.get_effect("e3") == "free"


async def check_a_record_that_does_not_read_hides_no_other(store: Any) -> None:
    from ..agent import Agent  # here: the check runs a store through what aerix does with it
    from ..testing import ScriptedModel

    await store.create_run(_run("r1", created_at=1.0))
    odd = {"id": "r2", "created_at": 2.0, "version": 99, "prompt": 7, "status": "bogus", "checkpoint": "x"}
    await store.create_run(odd)
    await store.create_run(_run("r3", created_at=3.0, status="interrupted", checkpoint={"messages": [{"role": "system", "content": ""}, {"role": "user", "content": "p"}], "calls_made": 0, "generations": 0, "refused_in_row": 0, "tokens": 0, "elapsed_s": 0}))
    listed = await store.list_runs()
    assert [r["id"] for r in listed] == ["r1", "r2", "r3"] and listed[1] == odd, "a store lists every record as it was given"
    agent = Agent(model=ScriptedModel([]), store=store)
    runs = await agent.runs()
    assert [(r.id, r.status) for r in runs] == [("r1", "queued"), ("r2", "corrupt"), ("r3", "interrupted")], "a record that does not read is listed corrupt under its own id"
    assert [r.id for r in await agent.recover()] == ["r1", "r3"], "and recover() offers the others"


# -- leases ----------------------------------------------------------------------------------


async def check_a_free_lease_is_taken(store: Any) -> None:
    assert await store.get_lease("run:r1") is None, "a lease nobody took is None"
    assert await store.acquire_lease("run:r1", "a", 20.0, 10.0) is True, "a free lease must be taken"
    assert await store.get_lease("run:r1") == {"name": "run:r1", "holder": "a", "expires_at": 20.0}
    assert await store.acquire_lease("key:k", "b", 20.0, 10.0) is True, "another name is another lease"
    assert (await store.get_lease("key:k"))["holder"] == "b"
    assert (await store.get_lease("run:r1"))["holder"] == "a"


async def check_a_live_lease_refuses_another_holder(store: Any) -> None:
    await store.acquire_lease("run:r1", "a", 20.0, 10.0)
    assert await store.acquire_lease("run:r1", "b", 30.0, 19.5) is False, "a live lease must refuse another holder"
    assert await store.get_lease("run:r1") == {"name": "run:r1", "holder": "a", "expires_at": 20.0}, "a refusal changes nothing"


async def check_the_holder_renews_its_lease(store: Any) -> None:
    await store.acquire_lease("run:r1", "a", 20.0, 10.0)
    assert await store.acquire_lease("run:r1", "a", 40.0, 15.0) is True, "the holder must renew its lease"
    assert (await store.get_lease("run:r1"))["expires_at"] == 40.0, "a renewal moves expires_at"
    assert await store.acquire_lease("run:r1", "b", 50.0, 30.0) is False, "the renewed lease is live until 40"


async def check_an_expired_lease_is_taken_over(store: Any) -> None:
    await store.acquire_lease("run:r1", "a", 20.0, 10.0)
    assert await store.acquire_lease("run:r1", "b", 50.0, 20.0) is True, "a lease is expired when expires_at <= now"
    assert await store.get_lease("run:r1") == {"name": "run:r1", "holder": "b", "expires_at": 50.0}
    assert await store.acquire_lease("run:r1", "a", 60.0, 25.0) is False, "the old holder has lost it"


async def check_only_the_holder_releases_a_lease(store: Any) -> None:
    await store.release_lease("run:none", "a")  # nobody holds it: nothing to do, and no error
    await store.acquire_lease("run:r1", "a", 20.0, 10.0)
    await store.release_lease("run:r1", "b")
    assert (await store.get_lease("run:r1"))["holder"] == "a", "a release by another holder must do nothing"
    await store.release_lease("run:r1", "a")
    assert await store.get_lease("run:r1") is None, "a release by the holder frees the lease"
    assert await store.acquire_lease("run:r1", "b", 20.0, 11.0) is True, "a released lease is free"


async def check_leases_are_apart_from_runs(store: Any) -> None:
    run = _run("r1")
    await store.create_run(run)
    await store.acquire_lease("run:r1", "a", 20.0, 10.0)
    changed = _run("r1", status="running", checkpoint={"step": 1})
    await store.save_run(changed)
    assert (await store.get_lease("run:r1"))["holder"] == "a", "save_run must not touch a lease"
    assert await store.get_run("r1") == changed, "a lease must not show in the run record"
    assert [r["id"] for r in await store.list_runs()] == ["r1"], "a lease is not a run"
    await store.release_lease("run:r1", "a")
    assert await store.get_run("r1") == changed, "release_lease must not touch the run"


async def check_of_racing_acquirers_exactly_one_wins(store: Any) -> None:
    for round_, now in ((0, 10.0), (1, 20.0)):  # the second race is for the first winner's expired lease
        holders = [f"h{round_}.{i}" for i in range(16)]
        won = await asyncio.gather(*(store.acquire_lease("run:race", h, now + 10.0, now) for h in holders))
        assert won.count(True) == 1, f"{won.count(True)} of {len(holders)} racing acquirers won"
        lease = await store.get_lease("run:race")
        assert lease is not None and lease["holder"] == holders[won.index(True)], "the winner holds the lease"


# -- agent state ----------------------------------------------------------------------------


async def check_state_is_kept_per_agent_name(store: Any) -> None:
    assert await store.get_state("planner") is None, "an agent with no state has None"
    state = {"version": 1, "values": {"theme": "dark ✓", "n": 1.5, "on": True, "none": None}, "collections": {"todos": {"t1": {"id": "t1", "tags": ["a"]}}}, "applied": []}
    await store.put_state("planner", state)
    assert await store.get_state("planner") == state, "get_state must return what put_state stored"
    assert await store.get_state("writer") is None, "another agent name has its own state"
    await store.put_state("writer", {"version": 1, "values": {"theme": "light"}})
    assert await store.get_state("planner") == state, "one agent's state must not touch another's"
    replaced = {"version": 1, "values": {}}
    await store.put_state("planner", replaced)
    assert await store.get_state("planner") == replaced, "put_state replaces the whole state"


async def check_the_callers_state_is_not_the_stored_one(store: Any) -> None:
    state = {"values": {"list": [1]}}
    await store.put_state("a", state)
    state["values"]["list"].append(2)
    read = await store.get_state("a")
    assert read == {"values": {"list": [1]}}, "the store must keep a copy of the state, not the caller's dict"
    read["values"]["list"].append(3)
    assert await store.get_state("a") == {"values": {"list": [1]}}, "get_state must return a copy"


async def check_state_is_apart_from_runs(store: Any) -> None:
    await store.create_run(_run("r1"))
    await store.put_state("r1", {"values": {"x": 1}})
    assert await store.get_run("r1") == _run("r1"), "put_state must not touch a run"
    assert [r["id"] for r in await store.list_runs()] == ["r1"], "a state is not a run"
    assert await store.get_effect("r1") is None and await store.get_lease("r1") is None


async def check_a_state_key_may_be_any_string(store: Any) -> None:
    # kept conversations live beside agent states under keys no agent name can take
    key = "conversation:planner/chat ✓ 1"
    await store.put_state("planner", {"values": {}})
    await store.put_state(key, {"version": 1, "messages": [{"role": "system", "content": "S"}], "run_id": None})
    assert await store.get_state(key) == {"version": 1, "messages": [{"role": "system", "content": "S"}], "run_id": None}, "a key with ':', '/' and non-ASCII must read back"
    assert await store.get_state("planner") == {"values": {}}, "another key is another state"


# -- optional methods: runs by status, agent state by item (checked on a store that has them) ---


async def check_runs_are_listed_by_status_oldest_first(store: Any) -> None:
    if not has_runs_by_status(store):
        return
    for run_id, t, status in (("d", 4.0, "waiting"), ("b", 2.0, "queued"), ("c", 3.0, "completed"), ("a", 1.0, "running")):
        await store.create_run(_run(run_id, created_at=t, status=status))
    assert [r["id"] for r in await store.list_runs_by_status(["queued", "running", "waiting"])] == ["a", "b", "d"], "those statuses' runs, oldest first"
    assert await store.list_runs_by_status([]) == [] and await store.list_runs_by_status(["failed"]) == [], "none of those statuses: []"
    assert await store.save_run({**(await store.get_run("b")), "status": "completed"})
    assert [r["id"] for r in await store.list_runs_by_status(["completed"])] == ["b", "c"], "a saved run is listed by its new status"


async def check_state_items_are_kept_per_agent_in_put_order(store: Any) -> None:
    if not has_state_items(store):
        return
    assert await store.get_state_items("planner") == {} and await store.get_state_item("planner", "value:k") is None, "no items: {} and None"
    t1 = {"value": {"id": "t1", "n": 1.5, "on": True, "none": None, "text": "héllo ✓"}}
    await store.put_state_items("planner", {"value:theme": {"value": "dark"}, "doc:todos:t1": t1})
    marked = {"value": "light", "taint": {"source": "read_page", "at": "call_1"}}
    await store.put_state_items("planner", {"doc:todos:an id with : / and ✓": {"value": {"id": "x"}}, "value:theme": marked})
    items = await store.get_state_items("planner")
    assert list(items) == ["value:theme", "doc:todos:t1", "doc:todos:an id with : / and ✓"], "items come in the order first put; a replaced one keeps its place"
    assert items["value:theme"] == marked and items["doc:todos:t1"] == t1, "get_state_items must return what was put"
    assert await store.get_state_item("planner", "doc:todos:t1") == t1, "get_state_item must return what was put"
    assert await store.get_state_items("writer") == {}, "another agent name has its own items"
    await store.put_state_items("planner", {"value:theme": None, "value:never": None})
    assert list(await store.get_state_items("planner")) == ["doc:todos:t1", "doc:todos:an id with : / and ✓"], "None deletes an item (a missing one: nothing to do)"
    await store.put_state_items("planner", {"value:theme": {"value": 1}})
    assert list(await store.get_state_items("planner"))[-1] == "value:theme", "an item deleted and put again comes last"
    await store.put_state("planner", {"version": 2, "items": True})
    assert await store.get_state("planner") == {"version": 2, "items": True} and len(await store.get_state_items("planner")) == 3, "items are apart from put_state"


async def check_state_items_come_back_exactly(store: Any) -> None:
    if not has_state_items(store):
        return
    kept: list[int] = [1]
    await store.put_state_items("a", {"k": {"value": {"big": 2**60 + 1, "float": 1.0, "list": kept}}})
    kept.append(2)
    read = await store.get_state_items("a")
    assert read == {"k": {"value": {"big": 2**60 + 1, "float": 1.0, "list": [1]}}}, "the store must keep a copy of each item, exactly"
    assert isinstance(read["k"]["value"]["float"], float), "1.0 must come back a float, not an int"
    read["k"]["value"]["list"].append(3)
    one = await store.get_state_item("a", "k")
    assert one is not None and one["value"]["list"] == [1], "get_state_items must return a copy"
    one["value"]["list"].append(4)
    assert (await store.get_state_item("a", "k"))["value"]["list"] == [1], "get_state_item must return a copy"


async def check_concurrent_puts_of_different_items_all_land(store: Any) -> None:
    if not has_state_items(store):
        return
    await asyncio.gather(*(store.put_state_items("a", {f"doc:c:{i}": {"value": {"id": str(i)}}, f"applied:e{i}": {"result": "ok"}}) for i in range(16)))
    items = await store.get_state_items("a")
    assert len(items) == 32 and all(f"doc:c:{i}" in items and f"applied:e{i}" in items for i in range(16)), "of concurrent puts, every item must land"


# -- artifacts ------------------------------------------------------------------------------


def _meta(artifact_id: str, run_id: str, data: bytes, filename: str | None = "f.bin") -> dict[str, Any]:
    return {"id": artifact_id, "run_id": run_id, "media_type": "application/octet-stream", "filename": filename, "size": len(data), "sha256": hashlib.sha256(data).hexdigest()}


async def check_an_artifact_reads_back_byte_for_byte(store: Any) -> None:
    data = bytes(range(256)) + b"\x00\xff\xfe not UTF-8 \x80"
    meta = _meta("a1", "r1", data, filename="déjà vu ✓.bin")
    await store.put_artifact(meta, data)
    got = await store.get_artifact("a1")
    assert got is not None, "get_artifact must find what put_artifact kept"
    assert got[0] == meta, "the meta must come back equal"
    assert bytes(got[1]) == data and isinstance(got[1], bytes), "the bytes must come back exactly, as bytes"
    empty = _meta("a2", "r1", b"", filename=None)
    await store.put_artifact(empty, b"")
    got = await store.get_artifact("a2")
    assert got is not None and got[0] == empty and bytes(got[1]) == b"", "an empty artifact is an artifact"


async def check_a_missing_artifact_is_none(store: Any) -> None:
    assert await store.get_artifact("nope") is None
    assert await store.list_artifacts("nope") == [], "a run without artifacts lists none"


async def check_artifacts_are_listed_by_run_in_put_order(store: Any) -> None:
    for artifact_id, run_id in (("z", "r1"), ("b", "r2"), ("a", "r1"), ("m", "r1")):
        await store.put_artifact(_meta(artifact_id, run_id, artifact_id.encode()), artifact_id.encode())
    assert [m["id"] for m in await store.list_artifacts("r1")] == ["z", "a", "m"], "one run's artifacts, in put order"
    assert [m["id"] for m in await store.list_artifacts("r2")] == ["b"]
    assert await store.list_artifacts("r3") == []


async def check_a_put_of_a_kept_id_replaces_it_in_place(store: Any) -> None:
    for artifact_id in ("a", "b"):
        await store.put_artifact(_meta(artifact_id, "r1", b"first"), b"first")
    await store.put_artifact(_meta("a", "r1", b"second"), b"second")
    assert [m["id"] for m in await store.list_artifacts("r1")] == ["a", "b"], "a put again is no second artifact and keeps its place"
    got = await store.get_artifact("a")
    assert got is not None and bytes(got[1]) == b"second" and got[0]["size"] == 6, "the later put replaces meta and bytes"


async def check_artifacts_are_apart_from_runs(store: Any) -> None:
    await store.create_run(_run("r1"))
    meta = _meta("a1", "r1", b"x")
    await store.put_artifact(meta, b"x")
    meta["filename"] = "changed"
    assert (await store.get_artifact("a1"))[0]["filename"] == "f.bin", "the store must keep a copy of the meta"
    assert await store.get_run("r1") == _run("r1"), "put_artifact must not touch the run"
    assert await store.get_effect("a1") is None and [r["id"] for r in await store.list_runs()] == ["r1"]

CHECKS: tuple[Callable[[Any], Awaitable[None]], ...] = (
    check_a_created_run_reads_back_equal,
    check_a_missing_run_is_none,
    check_the_same_idempotency_key_finds_the_first_run,
    check_creating_an_existing_id_keeps_the_stored_run,
    check_save_replaces_the_whole_record,
    check_the_callers_dict_is_not_the_stored_one,
    check_runs_are_listed_oldest_first,
    check_effects_are_kept_by_key,
    check_a_stale_save_is_refused,
    check_of_racing_saves_of_one_revision_exactly_one_wins,
    check_a_save_by_a_holder_without_the_lease_is_refused,
    check_an_effect_put_by_a_holder_without_the_lease_is_refused,
    check_a_record_that_does_not_read_hides_no_other,
    check_a_free_lease_is_taken,
    check_a_live_lease_refuses_another_holder,
    check_the_holder_renews_its_lease,
    check_an_expired_lease_is_taken_over,
    check_only_the_holder_releases_a_lease,
    check_leases_are_apart_from_runs,
    check_of_racing_acquirers_exactly_one_wins,
    check_state_is_kept_per_agent_name,
    check_the_callers_state_is_not_the_stored_one,
    check_state_is_apart_from_runs,
    check_a_state_key_may_be_any_string,
    check_runs_are_listed_by_status_oldest_first,
    check_state_items_are_kept_per_agent_in_put_order,
    check_state_items_come_back_exactly,
    check_concurrent_puts_of_different_items_all_land,
    check_an_artifact_reads_back_byte_for_byte,
    check_a_missing_artifact_is_none,
    check_artifacts_are_listed_by_run_in_put_order,
    check_a_put_of_a_kept_id_replaces_it_in_place,
    check_artifacts_are_apart_from_runs,
)


async def verify_store(make_store: Callable[[], Any]) -> None:
    """Run every check, each on a fresh store from ``make_store`` (which may be async)."""
    for check in CHECKS:
        store = make_store()
        if hasattr(store, "__await__"):
            store = await store
        try:
            await check(store)
        except AssertionError as e:
            raise AssertionError(f"{check.__name__}: {e}") from None
