"""aerix: an agent runtime that runs inside the web page.

A pure-Python turn loop (CPython 3.11+ and Pyodide) that drives a model under a JSON-schema
constraint built from the agent's tools. Start with :class:`Agent` and :func:`tool`.
"""

from __future__ import annotations

from .abort import Abort
from .agent import Agent, Answer
from .artifacts import Artifact
from .channels import Channel, Message, console_channel
from .compaction import Compaction
from .durable import Decision, RunRecord
from .engines.openai import OpenAIModel
from .errors import AerixError
from .events import Call, Compacted, End, Event, Final, FinalDelta, Handoff, Interrupted, NewArtifact, OutputDelta, Result, Retry, SubagentEvent, Taint, Text, Turn, Usage, Waiting
from .limits import Hooks, Limits
from .mcp import McpTools, mcp_tools
from .model import Model
from .page_options import js_tool
from .tools import ContextKey, Tool, ToolContext, tool
from .trust import Invoker, has_permission, require_tool_permission
from .turn import parse_turn, system_message, turn_schema
from .turn_format import TurnFormat

__version__ = "0.1.0"

__all__ = [
    "Abort",
    "AerixError",
    "Agent",
    "Answer",
    "Artifact",
    "Call",
    "Channel",
    "Compacted",
    "Compaction",
    "ContextKey",
    "Decision",
    "End",
    "Event",
    "Final",
    "FinalDelta",
    "Handoff",
    "Hooks",
    "Interrupted",
    "Invoker",
    "Limits",
    "McpTools",
    "Message",
    "Model",
    "NewArtifact",
    "OpenAIModel",
    "OutputDelta",
    "Result",
    "Retry",
    "RunRecord",
    "SubagentEvent",
    "Taint",
    "Text",
    "Tool",
    "ToolContext",
    "Turn",
    "TurnFormat",
    "Usage",
    "Waiting",
    "console_channel",
    "has_permission",
    "js_tool",
    "mcp_tools",
    "parse_turn",
    "require_tool_permission",
    "system_message",
    "tool",
    "turn_schema",
]
