"""Reading a session notebook back: the session record, and its events rebuilt.

The other half of ``recorder.py`` (the event log itself is decoded by ``eventlog.py``): the
server lists earlier sessions with it after a restart, and the CLI replays recorded model
turns from it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat

from .. import events as ev
from ..errors import ConfigError
from .eventlog import decode_notebook, plain


def read_session(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"{path} is not a readable notebook: {e}".splitlines()[0]) from None
    return parse_session(text, path)


def parse_session(text: str, path: Path) -> Any:
    """``read_session`` of a text already read (and checked) from ``path``."""
    try:
        nb = nbformat.reads(text, as_version=4)
    except Exception as e:
        raise ConfigError(f"{path} is not a readable notebook: {e}".splitlines()[0]) from None
    return _checked(nb, path)


def _checked(nb: Any, path: Path) -> Any:
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


def load_session(path: Path, notebook: Any = None) -> SessionRecord:
    """Read a session notebook (or take ``notebook``, already read from ``path``); raises
    ConfigError when it is not one."""
    nb = read_session(Path(path)) if notebook is None else notebook
    meta = nb.metadata["codeagent"]
    return SessionRecord(
        notebook=nb,
        session_id=meta.get("session_id", ""),
        prompts=[r.get("prompt", "") for r in meta["runs"]],
        turns=plain(meta["transcript"]),
        events=decode_notebook(nb),
        status=meta.get("status"),
        reason=meta.get("reason", ""),
        usage=plain(meta["usage"]),
        model=meta.get("model", ""),
        base_url=meta.get("base_url", ""),
    )
