"""Reading a session notebook back: the session record, and its events rebuilt.

The other half of ``recorder.py``: the server lists earlier sessions with it after a restart,
and the CLI replays recorded model turns from it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import nbformat

from . import events as ev
from .errors import ConfigError


def call_arguments(turns: list[dict[str, Any]], call_id: str) -> Any:
    """The decoded arguments of tool call ``call_id`` in the assistant turns (None if absent)."""
    for message in reversed(turns):
        for call in message.get("tool_calls") or []:
            if call.get("id") == call_id:
                try:
                    return json.loads(call.get("function", {}).get("arguments", ""))
                except (TypeError, ValueError):
                    return None
    return None


def read_session(path: Path) -> Any:
    try:
        nb = nbformat.read(path, as_version=4)
    except Exception as e:
        raise ConfigError(f"{path} is not a readable notebook: {e}".splitlines()[0]) from None
    meta = nb.metadata.get("codeagent")
    if not isinstance(meta, dict) or "format_version" not in meta:
        raise ConfigError(f"{path} exists and is not a codeagent session notebook")
    if meta["format_version"] > ev.FORMAT_VERSION:
        raise ConfigError(
            f"{path} was written by a newer codeagent (format {meta['format_version']})"
        )
    for key, default in (("runs", []), ("transcript", []), ("events", []), ("usage", {})):
        meta.setdefault(key, default)
    return nb


@dataclass
class SessionRecord:
    """A recorded session as the CLI, the replayer and the server need it."""

    notebook: Any
    session_id: str
    prompts: list[str]
    turns: list[list[dict[str, Any]]]
    """Assistant messages, one list per run, in order."""
    events: list[ev.Event]
    status: str | None
    reason: str
    usage: dict[str, Any]
    model: str
    base_url: str
    runs: list[dict[str, Any]] = field(default_factory=list)
    limits: dict[str, Any] = field(default_factory=dict)
    enforcement: dict[str, Any] = field(default_factory=dict)


def load_session(path: Path) -> SessionRecord:
    """Read a session notebook; raises ConfigError when ``path`` is not one."""
    nb = read_session(Path(path))
    meta = nb.metadata["codeagent"]
    return SessionRecord(
        notebook=nb,
        session_id=meta.get("session_id", ""),
        prompts=[r.get("prompt", "") for r in meta["runs"]],
        turns=_plain(meta["transcript"]),
        events=events_from_notebook(nb),
        status=meta.get("status"),
        reason=meta.get("reason", ""),
        usage=_plain(meta["usage"]),
        model=meta.get("model", ""),
        base_url=meta.get("base_url", ""),
        runs=_plain(meta["runs"]),
        limits=_plain(meta.get("limits", {})),
        enforcement=_plain(meta.get("enforcement", {})),
    )


def _plain(value: Any) -> Any:
    """NotebookNode -> plain dicts/lists (events and callers expect ordinary JSON data)."""
    return json.loads(json.dumps(value))


def events_from_notebook(nb: Any) -> list[ev.Event]:
    """Rebuild a session's events (no text deltas or live outputs) from its notebook."""
    meta = nb.metadata.get("codeagent", {})
    transcript = _plain(meta.get("transcript", []))
    cells = {c.id: c for c in nb.cells}
    out: list[ev.Event] = []
    for raw in _plain(meta.get("events", [])):
        cell = cells.get(raw.pop("cell", None))
        if "turn" in raw:
            run, index = raw.pop("turn")
            raw["message"] = transcript[run][index]
        if raw.pop("arguments_ref", False):
            turns = [m for run in transcript for m in run]
            raw["arguments"] = call_arguments(turns, raw.get("tool_call_id", ""))
        if (
            raw.get("type") == "tool_call_finished"
            and cell is not None
            and cell.cell_type == "code"
        ):
            raw["outputs"] = _plain(cell.outputs)
            if raw.pop("code_ref", False):
                raw["code"] = cell.source
        try:
            out.append(ev.Event.from_dict(raw))
        except (ValueError, TypeError):
            continue  # an event type from a newer writer
    return out
