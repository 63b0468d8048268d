"""The session notebook's event log: its encoder and its decoder, side by side.

The notebook keeps every event of a session (but the live-only ones) in
``metadata.codeagent.events``, compactly: what the notebook already stores elsewhere becomes a
reference (an assistant message points at its transcript turn, a tool call's outputs and code
at its cell, its arguments at the call the model sent; a helper's finished call at its cell in
the helper's section). ``encode`` and ``decode_notebook`` are
each other's inverse; a test round-trips every event type. Changing one means changing both.
"""

from __future__ import annotations

import json
from typing import Any

from .. import events as ev

NOT_LOGGED = frozenset({"text_delta", "cell_output"})
"""Live display only: the finished tool call carries the outputs."""


def sent_arguments(turns: list[dict[str, Any]], call_id: str) -> Any:
    """The arguments of tool call ``call_id`` as the model sent them in ``turns`` (the latest
    such call): decoded when they are JSON (raw newlines allowed, as the loop allows them),
    else the raw string; None if there is no such call."""
    for message in reversed(turns):
        for call in message.get("tool_calls") or []:
            if call.get("id") == call_id:
                raw = (call.get("function") or {}).get("arguments")
                try:
                    return json.loads(raw, strict=False) if isinstance(raw, str) else raw
                except ValueError:
                    return raw
    return None


def encode(entry: dict[str, Any], cell: Any, transcript: list[list[dict[str, Any]]]) -> dict:
    """The log entry of ``entry`` (an event's JSON form, changed in place).

    ``cell`` is the notebook cell the event created (or None); ``transcript`` the assistant
    turns per run so far, the event's own turn already appended.
    """
    if cell is not None:
        entry["cell"] = cell.id
    kind = entry["type"]
    turns = transcript[-1] if transcript else []
    if kind == "assistant_message":
        entry.pop("message")
        entry["turn"] = [len(transcript) - 1, len(turns) - 1]
    elif kind == "tool_call_finished" and cell is not None and cell.cell_type == "code":
        entry.pop("outputs")
        if entry.get("code") == cell.source:
            entry.pop("code")
            entry["code_ref"] = True
    elif kind == "child_event" and cell is not None and cell.cell_type == "code":
        inner = entry["event"]
        if inner.get("type") == "tool_call_finished":
            inner.pop("outputs", None)
            if inner.get("code") == cell.source:
                inner.pop("code")
                inner["code_ref"] = True
    elif kind == "tool_call_started":
        _refer_code(entry)
        if entry["arguments"] == sent_arguments(turns, entry["tool_call_id"]):
            entry.pop("arguments")
            entry["arguments_ref"] = True
    return entry


def _refer_code(entry: dict[str, Any]) -> None:
    """A call's display code and notebook cell stored once: the code as the name of the
    argument that holds it, the cell as ``cell_is_code`` when it is that code."""
    code, args = entry.get("code"), entry.get("arguments")
    if code is not None and entry.get("cell_source") == code:
        entry.pop("cell_source")
        entry["cell_is_code"] = True
    key = next((k for k, v in args.items() if v == code), None) if isinstance(args, dict) else None
    if code is not None and key is not None:
        entry.pop("code")
        entry["code_arg"] = key


def _code_back(raw: dict[str, Any]) -> None:
    """``_refer_code`` undone, once the call's arguments are back."""
    key = raw.pop("code_arg", None)
    args = raw.get("arguments")
    if key is not None and isinstance(args, dict):
        raw["code"] = args.get(key)
    if raw.pop("cell_is_code", False):
        raw["cell_source"] = raw.get("code")


def decode(
    raw: dict[str, Any],
    cells: dict[str, Any],
    transcript: list[list[dict[str, Any]]],
    seen: list[dict[str, Any]],
) -> ev.Event | None:
    """The event of one log entry (None for an event type from a newer writer).

    ``seen`` collects the assistant turns decoded so far: a tool call's arguments are those of
    the latest call with its id before it (ids may repeat across runs).
    """
    raw = dict(raw)
    cell = cells.get(raw.pop("cell", None))
    if "turn" in raw:
        run, index = raw.pop("turn")
        raw["message"] = transcript[run][index]
        seen.append(raw["message"])
    if raw.pop("arguments_ref", False):
        raw["arguments"] = sent_arguments(seen, raw.get("tool_call_id", ""))
    if raw.get("type") == "tool_call_started":
        _code_back(raw)
    finished = raw if raw.get("type") == "tool_call_finished" else None
    helper = raw.get("event", {}) if raw.get("type") == "child_event" else {}
    if helper.get("type") == "tool_call_finished":
        finished = raw["event"] = dict(helper)  # a helper's call: its cell is in a section
    if finished is not None and cell is not None and cell.cell_type == "code":
        finished["outputs"] = plain(cell.outputs)
        if finished.pop("code_ref", False):
            finished["code"] = cell.source
    try:
        return ev.Event.from_dict(raw)
    except (ValueError, TypeError):
        return None


def decode_notebook(nb: Any) -> list[ev.Event]:
    """Rebuild a session's events (no text deltas or live outputs) from its notebook."""
    meta = nb.metadata.get("codeagent", {})
    transcript = plain(meta.get("transcript", []))
    cells = {c.id: c for c in nb.cells}
    seen: list[dict[str, Any]] = []
    decoded = (decode(raw, cells, transcript, seen) for raw in plain(meta.get("events", [])))
    return [event for event in decoded if event is not None]


def plain(value: Any) -> Any:
    """NotebookNode -> plain dicts/lists (events and callers expect ordinary JSON data):
    what the event log decodes, and what readers of a notebook's metadata hand on."""
    return json.loads(json.dumps(value))
