"""What a session notebook's cells say: the source of a code cell (the tool's own, carried by
its ``ToolCallStarted``), its bounded outputs, the plan's checklist and the one-line note of
a call that is not a code cell.

Pure functions of an event's fields, kept apart from ``recorder`` (which owns the notebook,
its metadata and its file) so that what a cell looks like can be read in one place.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import nbformat

from ..events import NOT_RUN, ToolCallFinished, ToolCallStarted
from ..util.nbschema import validate
from ..util.shell_cells import command_source

OUTPUT_CAP = 2_000_000
"""Characters of outputs kept per cell: a safety net behind the sandbox's own bound."""


def cell_source(started: ToolCallStarted | None, finished: ToolCallFinished) -> str | None:
    """The source of the code cell a tool call becomes, or None when it becomes a note: the
    cell its tool gave for it (``ToolCallStarted.cell_source``) when the tool writes the
    workspace and the call ran (a cell that failed in the kernel ran too). A call that
    carries no cell (an older writer's) of a code tool becomes the code that ran."""
    traits = started.tool if started is not None else finished.tool
    ran = finished.status == "ok" or (traits.runs == "kernel" and finished.status not in NOT_RUN)
    if not traits.writes_workspace or not ran:
        return None
    if started is not None and started.cell_source is not None:
        return started.cell_source
    code = finished.code
    if code is None or not traits.language:
        return None
    return command_source(code) if traits.language == "shell" else code


def clean_outputs(outputs: list[dict[str, Any]], cap: int = OUTPUT_CAP) -> list[Any]:
    """Valid nbformat outputs only, within ``cap`` characters; what is cut is said in a note."""
    kept: list[Any] = []
    used = 0
    dropped = 0
    for raw in outputs:
        node = nbformat.from_dict(copy.deepcopy(raw))
        try:
            validate(node, ref=node.get("output_type"))
        except Exception:
            dropped += 1
            continue
        size = len(json.dumps(raw, default=str))
        if used + size > cap:
            if node.output_type == "stream" and cap - used > 1000:
                text = "".join(node.text) if isinstance(node.text, list) else node.text
                node.text = text[: cap - used - 200] + "\n[... cut in the recording ...]\n"
                kept.append(node)
                used = cap
            else:
                dropped += 1
            continue
        kept.append(node)
        used += size
    if dropped:
        note = f"[{dropped} output(s) not kept in the recording (invalid or over the size cap)]\n"
        kept.append(nbformat.v4.new_output("stream", name="stderr", text=note))
    return kept


def plan_markdown(steps: Any) -> str:
    """The plan as a markdown checklist, the step in progress in bold."""
    lines = ["**Plan**", ""]
    for item in steps:
        status, step = item.get("status"), item.get("step", "")
        mark = "x" if status == "done" else " "
        lines.append(
            f"- [{mark}] " + (f"**{step}** *(in progress)*" if status == "in_progress" else step)
        )
    return "\n".join(lines)


def tool_note(name: str, status: str, args: dict[str, Any], raw: str | None, result: str) -> str:
    """The markdown line of a call recorded as a note: its arguments (``raw`` when they
    were not JSON), its status, and for a failure what went wrong."""
    shown = ", ".join(f"{k}=`{_short(v)}`" for k, v in args.items())
    if raw is not None:
        shown = f"`{_short(raw, 200)}`"
    text = f"*{name}*({shown}) → {status}"
    if status != "ok":
        text += ": " + _short(result, 300)
    return text


def _short(value: Any, limit: int = 60) -> str:
    """One line of at most ``limit`` characters, for notes about tool calls."""
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
