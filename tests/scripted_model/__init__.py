"""A scripted OpenAI-compatible chat server on 127.0.0.1, the one stand-in for a model.

Tests drive the real ``openai`` client (and the real CLI, server and browser) against it, so
everything except the model's choices is exercised for real. Like the real API it rejects
malformed conversations (unanswered tool-call ids, tool messages with unknown ids), which is
what makes "every tool call is answered" a property the tests can actually catch.

    from tests.scripted_model import ScriptedModelServer, text, tool_calls
    with ScriptedModelServer([tool_calls(("run_cell", {"code": "1+1"})), text("2")]) as srv:
        ...  # point the client at srv.url; inspect srv.requests afterwards

Turn formats are described in ``tests.scripted_model.turns``.
"""

from .server import Script, ScriptedModelServer
from .turns import Turn, delay, error, normalise, raw_tool_call, text, tool_calls
from .validation import conversation_problem

__all__ = [
    "Script",
    "ScriptedModelServer",
    "Turn",
    "conversation_problem",
    "delay",
    "error",
    "normalise",
    "raw_tool_call",
    "text",
    "tool_calls",
]
