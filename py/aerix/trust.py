"""Trust: who started a run and what they may do, and which content came from outside.

**Invokers and permissions.** An :class:`Invoker` is who starts a run (a user, a service, a
schedule); a snapshot is kept with the run and tools and hooks see it as ``ctx.invoker``.
Permissions are ``:``-separated segments; in a granted permission ``*`` matches any one
segment and a lone ``*`` matches everything::

    has_permission(["tool:assistant:*"], "tool:assistant:save_note")   # True
    has_permission(["tool:*"], "tool:assistant:save_note")             # False: one segment

``Agent(name="assistant", tool_policy=require_tool_permission())`` runs a tool only for an
invoker holding ``tool:<agent name>:<tool name>``; a refused call's result is
``refused: permission tool:assistant:save_note``, and the tool is left out of the turn schema
of that invoker's runs (the system message is not changed, so the conversation stays
byte-stable). A policy of your own is a function ``(agent name, tool name, invoker) -> bool``,
sync or async; only ``True`` allows (``"deny"``, ``1`` or ``None`` refuse), and a policy that
raises refuses the call with ``refused: policy error: <the error>`` (and leaves the tool out of
the turn schema). The run's signal and ``Limits.timeout_s`` interrupt an async policy that
hangs, as they do a hook or a trust flag (``calls.py``).

**Taint.** ``tool(..., trust={"taint": True})`` marks a tool whose results come from outside
(a web page, an e-mail, a file): its result taints the conversation before the model sees it.
``trust={"guard_when_tainted": True}`` marks an outbound tool (send, post, pay, delete): while
the conversation is tainted it needs a person's approval (``Agent(on_tainted="approve")``, the
default) or is refused (``"deny"``). Each flag is a bool or a function ``(input, ctx) -> bool``,
sync or async (interrupted like a policy). Taint is a tripwire for prompt injection, not a
sandbox: it cannot tell what the model does with untrusted text, only stop the guarded tools
from running unseen.
"""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Literal

from .errors import AerixError, describe

__all__ = ["Invoker", "ToolPolicy", "TrustFlag", "check_agent_trust", "has_permission", "require_tool_permission"]

_SEGMENT = r"(?:\*|[A-Za-z0-9_.\-]+)"
_PERMISSION = re.compile(rf"^{_SEGMENT}(?::{_SEGMENT})*$")
_NAME = re.compile(r"^[A-Za-z0-9_.\-]+(?::[A-Za-z0-9_.\-]+)*$")

ToolPolicy = Callable[[str, str, "Invoker | None"], "bool | Awaitable[bool]"]
"""``(agent name, tool name, invoker or None) -> whether the tool may run`` (only ``True``
allows), sync or async."""

TrustFlag = Any
"""A trust flag: ``True``/``False``, or a function ``(input, ctx) -> bool``, sync or async."""

_TRUST_KEYS = ("taint", "guard_when_tainted")
_AGENT_NAME = re.compile(r"^[A-Za-z0-9_.\-]{1,64}$")


def check_agent_trust(name: Any, tool_policy: Any, on_tainted: Any) -> None:
    """An Agent's ``name`` (a permission segment), ``tool_policy`` and ``on_tainted``, checked."""
    if not isinstance(name, str) or not _AGENT_NAME.fullmatch(name):
        raise AerixError("options", f"name must be letters, digits, '_', '.' or '-' (it is a permission segment), got {name!r}")
    if tool_policy is not None and not callable(tool_policy):
        raise AerixError("options", "tool_policy must be a function (agent name, tool name, invoker) -> bool, e.g. require_tool_permission()")
    if on_tainted not in ("approve", "deny"):
        raise AerixError("options", f"on_tainted must be 'approve' or 'deny', got {on_tainted!r}")


@dataclass(frozen=True)
class Invoker:
    """Who starts a run: ``id``, a ``kind`` (``"user"``, ``"service"``, ...), an optional
    ``name``, and the ``permissions`` granted."""

    id: str
    kind: str = "user"
    name: str | None = None
    permissions: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not self.id:
            raise AerixError("options", f"Invoker.id must be a non-empty string, got {self.id!r}")
        if not isinstance(self.kind, str) or not self.kind:
            raise AerixError("options", f"Invoker.kind must be a non-empty string, got {self.kind!r}")
        if self.name is not None and not isinstance(self.name, str):
            raise AerixError("options", f"Invoker.name must be a string or None, got {self.name!r}")
        perms: Any = self.permissions
        if isinstance(perms, str) or not isinstance(perms, (list, tuple)):
            raise AerixError("options", f"Invoker.permissions must be a list of strings, got {perms!r}")
        for p in perms:
            _check_permission(p)
        object.__setattr__(self, "permissions", tuple(perms))

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "kind": self.kind, "name": self.name, "permissions": list(self.permissions)}

    @classmethod
    def of(cls, value: Any) -> Invoker | None:
        """An ``Invoker`` from itself, a dict of its fields (a snapshot, or JavaScript's), or ``None``."""
        if value is None or isinstance(value, cls):
            return value
        if not isinstance(value, dict):
            raise AerixError("options", f"invoker must be an Invoker or a dict, got {type(value).__name__}")
        unknown = sorted(set(value) - {"id", "kind", "name", "permissions"})
        if unknown:
            raise AerixError("options", f"unknown invoker field(s) {unknown}; known: id, kind, name, permissions")
        permissions = value.get("permissions")  # checked as given: a string is refused, not split into characters
        return cls(value.get("id"), value.get("kind", "user"), value.get("name"), () if permissions is None else permissions)  # type: ignore[arg-type]


def _check_permission(permission: Any) -> None:
    if not isinstance(permission, str) or not _PERMISSION.fullmatch(permission):
        raise AerixError(
            "options", f"permission {permission!r} is malformed: ':'-separated segments of letters, digits, '_', '.', '-', or '*'"
        )


def has_permission(permissions: Any, wanted: str) -> bool:
    """Whether any of ``permissions`` grants ``wanted`` (a concrete ``a:b:c`` name)."""
    if not isinstance(wanted, str) or not _NAME.fullmatch(wanted):
        raise AerixError("options", f"permission name {wanted!r} is malformed: ':'-separated segments, no '*'")
    parts = wanted.split(":")
    for granted in permissions:
        _check_permission(granted)
        if granted == "*":
            return True
        segments = granted.split(":")
        if len(segments) == len(parts) and all(s == "*" or s == p for s, p in zip(segments, parts)):
            return True
    return False


def require_tool_permission(*, without_invoker: Literal["allow", "deny"] = "deny") -> ToolPolicy:
    """A tool policy: an invoker needs ``tool:<agent>:<tool>``; a run without an invoker is
    allowed every tool or none, as ``without_invoker`` says."""
    if without_invoker not in ("allow", "deny"):
        raise AerixError("options", f"without_invoker must be 'allow' or 'deny', got {without_invoker!r}")

    def policy(agent: str, tool: str, invoker: Invoker | None) -> bool:
        if invoker is None:
            return without_invoker == "allow"
        return has_permission(invoker.permissions, f"tool:{agent}:{tool}")

    return policy


async def policy_refusal(policy: ToolPolicy, agent: str, tool: str, invoker: Invoker | None) -> str | None:
    """Ask ``policy`` whether ``tool`` may run: ``None`` when it answers ``True`` (awaited if it
    is async), the call's refused result otherwise (``refused: policy error: ...`` when it raised)."""
    try:
        value: Any = policy(agent, tool, invoker)
        if inspect.isawaitable(value):
            value = await value
    except Exception as e:
        return f"refused: policy error: {describe(e)}"
    return None if value is True else f"refused: permission tool:{agent}:{tool}"


def check_trust(tool_name: str, trust: Any) -> dict[str, TrustFlag]:
    """A tool's ``trust=`` map, checked when the tool is defined."""
    if trust is None:
        return {"taint": False, "guard_when_tainted": False}
    if not isinstance(trust, dict):
        raise AerixError("options", f"tool {tool_name!r}: trust must be a dict like {{'taint': True}}, got {type(trust).__name__}")
    unknown = sorted(set(trust) - set(_TRUST_KEYS))
    if unknown:
        raise AerixError("options", f"tool {tool_name!r}: unknown trust key(s) {unknown}; known: {list(_TRUST_KEYS)}")
    for key, flag in trust.items():
        if not isinstance(flag, bool) and not callable(flag):
            raise AerixError("options", f"tool {tool_name!r}: trust[{key!r}] must be True, False or a function (input, ctx) -> bool")
    return {k: trust.get(k, False) for k in _TRUST_KEYS}


async def flag_holds(flag: TrustFlag, input: Any, ctx: Any) -> bool:
    """Evaluate a trust flag; a function that throws or answers a non-bool raises ``ValueError``."""
    if isinstance(flag, bool):
        return flag
    try:
        value = flag(input, ctx)
        if inspect.isawaitable(value):
            value = await value
    except Exception as e:
        raise ValueError(f"its trust function failed: {describe(e)}") from None
    if not isinstance(value, bool):
        raise ValueError(f"its trust function answered {value!r}, not True or False")
    return value
