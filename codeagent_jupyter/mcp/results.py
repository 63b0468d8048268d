"""Our tools in MCP's terms: schemas become MCP tools, outcomes become tool results.

The text of a result is exactly what our own model is shown (bounded, tracebacks with ANSI
codes stripped, the sandbox's note said once); images the cell displayed are added as MCP
image content, since MCP clients can show them to their model; a call that failed (the
cell raised, timed out, the kernel died, or the call was refused) is an ``isError`` result,
so the calling agent sees it and can correct itself, as MCP asks of tool errors.

Results are built from their wire form (``mimeType``, ``isError``) with the ``mcp``
package's own ``mcp.types``, which the 1.x SDK (Jupyter AI 3.2 pins it) and the 2.x SDK
both validate: whichever SDK serves the result, it gets its own classes.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..core.toolset import Toolset, describe

IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")
MAX_IMAGES = 8
"""Images one result carries at most (the outputs are already bounded by the sandbox)."""


def offered(tools: Toolset) -> list[dict[str, Any]]:
    """The OpenAI-form tool definitions an MCP client is offered, in our order: every tool
    of the toolsets but those of our own agent (``ToolTraits.over_mcp`` false: its plan
    display, proposals for the user's notebook, its helper agents)."""
    return [s for s in tools.schemas() if is_offered(tools, s["function"]["name"])]


def is_offered(tools: Toolset, name: str) -> bool:
    """Whether tool ``name`` of ``tools`` may be called over MCP."""
    return describe(tools, name, None)[0].over_mcp


def mcp_tools(schemas: Iterable[dict[str, Any]]) -> list[Any]:
    """MCP ``Tool`` definitions from OpenAI-form ones (the same names, texts and schemas),
    those ``offered`` chose."""
    import mcp.types as types

    return [
        types.Tool.model_validate(
            {
                "name": s["function"]["name"],
                "description": s["function"]["description"],
                "inputSchema": s["function"]["parameters"],
            }
        )
        for s in schemas
    ]


def images_of(outputs: Iterable[dict[str, Any]]) -> list[tuple[str, str]]:
    """``(mime type, base64 data)`` of the images among nbformat outputs, at most
    ``MAX_IMAGES``."""
    found: list[tuple[str, str]] = []
    for out in outputs:
        data = out.get("data") if isinstance(out, dict) else None
        if not isinstance(data, dict):
            continue
        for mime in IMAGE_TYPES:
            value = data.get(mime)
            if isinstance(value, list):
                value = "".join(value)
            if isinstance(value, str) and value:
                found.append((mime, value.replace("\n", "")))
                break
        if len(found) >= MAX_IMAGES:
            break
    return found


def is_error(status: str) -> bool:
    """Whether an outcome of this status is an MCP tool error."""
    return status != "ok"


def content_of(text: str, outputs: Iterable[dict[str, Any]] = ()) -> list[dict[str, Any]]:
    """The content blocks of a result, in MCP's wire form: the text, then its images."""
    blocks: list[dict[str, Any]] = [{"type": "text", "text": text or "(no output)"}]
    for mime, data in images_of(outputs):
        blocks.append({"type": "image", "data": data, "mimeType": mime})
    return blocks


def content(text: str, outputs: Iterable[dict[str, Any]] = ()) -> list[Any]:
    """The content blocks as the installed SDK's ``TextContent`` / ``ImageContent``."""
    import mcp.types as types

    kinds = {"text": types.TextContent, "image": types.ImageContent}
    return [kinds[b["type"]].model_validate(b) for b in content_of(text, outputs)]


def error_result(text: str) -> Any:
    """An ``isError`` ``CallToolResult`` with one text block (a refused call)."""
    import mcp.types as types

    return types.CallToolResult.model_validate({"content": content_of(text), "isError": True})


def call_result(outcome: Any) -> Any:
    """The MCP ``CallToolResult`` of a ``ToolOutcome``."""
    import mcp.types as types

    return types.CallToolResult.model_validate(
        {
            "content": content_of(outcome.text, outcome.outputs),
            "isError": is_error(outcome.status),
        }
    )
