"""Behaviours of real OpenAI-compatible servers that a client must cope with.

Each quirk reproduces, over real HTTP, what one server does (seen against the server itself,
or in its own source and error messages):

``null-content-500``
    llama-cpp-python: an assistant message whose ``content`` is ``null`` (or missing) fails
    its request model; it answers HTTP 500 with the pydantic report of every union member.
``no-tool-choice-means-none``
    llama-cpp-python (``chatml-function-calling``): without ``tool_choice`` (or with
    ``"none"``) the prompt is rendered without tools, so the model can only answer in text.
``no-streamed-tools``
    llama-cpp-python: streaming with automatic tool choice fails after the 200 headers when
    the model picks a tool; the stream is empty.
``no-stream-usage``
    servers that ignore ``stream_options``: a stream never carries ``usage``.
``max-completion-tokens-only``
    OpenAI's newer models: ``max_tokens`` is refused (400), ``max_completion_tokens`` wanted.
``auto-tool-choice-off``
    vLLM started without ``--enable-auto-tool-choice``: ``tool_choice: "auto"`` gets a 400.
``tools-need-jinja``
    llama.cpp's ``llama-server`` without ``--jinja``: any request with tools gets a 500.
"""

from __future__ import annotations

from typing import Any

from .turns import Turn

QUIRKS = frozenset(
    {
        "null-content-500",
        "no-tool-choice-means-none",
        "no-streamed-tools",
        "no-stream-usage",
        "max-completion-tokens-only",
        "auto-tool-choice-off",
        "tools-need-jinja",
    }
)

_PYDANTIC_URL = "    For further information visit https://errors.pydantic.dev/2.11/v/"
_ROLES = ("System", "User", "Assistant", "Tool", "Function")


def _validation_report(index: int, content: Any) -> str:
    """The shape of llama-cpp-python's message for a ``null`` assistant content."""
    lines = ["7 validation errors for CreateChatCompletionRequest"]
    for role in _ROLES:
        where = f"messages.{index}.ChatCompletionRequest{role}Message"
        if role == "Assistant":
            lines += [
                f"{where}.content",
                f"  Input should be a valid string [type=string_type, input_value={content!r}, "
                "input_type=NoneType]",
                _PYDANTIC_URL + "string_type",
            ]
            continue
        lines += [
            f"{where}.role",
            f"  Input should be '{role.lower()}' [type=literal_error, input_value='assistant', "
            "input_type=str]",
            _PYDANTIC_URL + "literal_error",
        ]
    lines += [
        f"messages.{index}.ChatCompletionRequestToolMessage.tool_call_id",
        "  Field required [type=missing, input_value={...}, input_type=dict]",
        _PYDANTIC_URL + "missing",
    ]
    return "\n".join(lines)


def quirk_refusal(quirks: frozenset[str], body: dict[str, Any]) -> tuple[int, str, str] | None:
    """``(status, message, type)`` when a quirk makes the server refuse this request."""
    tools = body.get("tools")
    if "tools-need-jinja" in quirks and tools:
        return 500, "tools param requires --jinja flag", "server_error"
    if "auto-tool-choice-off" in quirks and tools and body.get("tool_choice") == "auto":
        return (
            400,
            '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser '
            "to be set",
            "BadRequestError",
        )
    if "max-completion-tokens-only" in quirks and "max_tokens" in body:
        return (
            400,
            "Unsupported parameter: 'max_tokens' is not supported with this model. "
            "Use 'max_completion_tokens' instead.",
            "invalid_request_error",
        )
    if "null-content-500" in quirks:
        for index, message in enumerate(body.get("messages") or []):
            if message.get("role") == "assistant" and message.get("content") is None:
                return 500, _validation_report(index, None), "internal_server_error"
    return None


def quirk_turn(quirks: frozenset[str], body: dict[str, Any], turn: Turn) -> Turn:
    """The turn as such a server would really answer it."""
    if "no-tool-choice-means-none" in quirks and body.get("tool_choice") in (None, "none"):
        message = turn["message"]
        if message.get("tool_calls"):  # rendered without tools: the model can only talk
            names = ", ".join(c["function"]["name"] for c in message["tool_calls"])
            text = f"I would call {names}, but no tools were offered."
            return {**turn, "message": {"role": "assistant", "content": text}}
    return turn
