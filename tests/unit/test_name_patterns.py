"""A name checked by a pattern is the whole string: no trailing newline (issue 26).

Python's ``$`` also matches before a final ``\\n``, so ``re.match(r"^name$", "name\\n")`` holds:
every pattern that checks a name, a permission, an id or a media type is applied with
``fullmatch``. Each check here refuses ``<a good value>\\n`` and accepts the good value.
"""

from __future__ import annotations

import pytest

from aerix import AerixError, Agent, Invoker, has_permission, tool
from aerix.agent_state import check_collections, models_from_field_maps
from aerix.artifacts import check_file
from aerix.channels import check_channels, console_channel
from aerix.stores import MemoryStore
from aerix.testing import ScriptedModel


def _tool(name="note", field="text"):
    return tool(name=name, description="Note.", input={field: {"type": "string"}}, run=lambda i, c: "")


CHECKS = {
    "permission granted": lambda v: Invoker("ana", permissions=[v]),
    "permission wanted": lambda v: has_permission(["*"], v),
    "tool name": lambda v: _tool(name=v),
    "field name": lambda v: _tool(field=v),
    "agent name": lambda v: Agent(model=ScriptedModel([]), name=v),
    "channel name": lambda v: check_channels([console_channel(v, lambda text: None)]),
    "state collection": lambda v: models_from_field_maps({v: {"id": {"type": "string", "required": True}}}),
    "conversation id": lambda v: Agent(model=ScriptedModel([]), store=MemoryStore(), conversation_id=v),
    "media type": lambda v: check_file(b"x", v),
}
GOOD = {
    "permission granted": "tool:assistant:*",
    "permission wanted": "tool:assistant:note",
    "tool name": "note",
    "field name": "text",
    "agent name": "assistant",
    "channel name": "console",
    "state collection": "todos",
    "conversation id": "inbox",
    "media type": "text/csv",
}


@pytest.mark.parametrize("check", list(CHECKS))
def test_a_trailing_newline_is_refused(check):
    CHECKS[check](GOOD[check])  # the value itself passes
    with pytest.raises(AerixError) as caught:
        CHECKS[check](GOOD[check] + "\n")
    assert caught.value.kind == "options"


def test_a_state_collection_of_pydantic_models_is_checked_the_same_way():
    from pydantic import BaseModel

    class Todo(BaseModel):
        id: str

    assert check_collections({"todos": Todo})
    with pytest.raises(AerixError):
        check_collections({"todos\n": Todo})
