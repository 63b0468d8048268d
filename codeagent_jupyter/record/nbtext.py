"""The session notebook's JSON text, re-serialised only where it changed.

A session notebook is rewritten after every step, and its outputs and event log grow with the
session. Cells are serialised once (again only after ``changed``), event-log entries once
(the log is append-only), and only the rest of the metadata on every save; the text is
indented a few levels deep and compact below (the C encoder: fast, and diffs stay readable).
"""

from __future__ import annotations

import json
from typing import Any

_EVENTS = ("codeagent", "events")
"""Where the append-only event log sits in the notebook's metadata."""


class NotebookText:
    """Builds the text of one notebook across saves."""

    def __init__(self) -> None:
        self._cells: dict[str, str] = {}
        self._events: list[str] = []

    def changed(self, cell_id: str) -> None:
        """A cell was modified after it was written: serialise it again next time."""
        self._cells.pop(cell_id, None)

    def text(self, notebook: Any) -> str:
        cells = []
        for cell in notebook.cells:
            text = self._cells.get(cell.id)
            if text is None:
                text = self._cells[cell.id] = _compact(cell)
            cells.append(text)
        events = notebook.metadata["codeagent"]["events"]
        self._events.extend(_compact(entry) for entry in events[len(self._events) :])
        meta = _pretty(notebook.metadata, 1, 3, (), self._events)
        return (
            '{\n "cells": [\n  ' + ",\n  ".join(cells) + "\n ],\n"
            f' "metadata": {meta},\n "nbformat": 4,\n "nbformat_minor": 5\n}}\n'
        )


def _compact(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _pretty(value: Any, level: int, depth: int, path: tuple[str, ...], events: list[str]) -> str:
    """``value`` indented ``depth`` levels deep; the event log's entries come pre-serialised."""
    if path == _EVENTS and value:
        items: list[str] = events
    elif depth == 0 or not isinstance(value, (dict, list)) or not value:
        return _compact(value)
    elif isinstance(value, dict):
        items = [
            f"{json.dumps(k)}: {_pretty(value[k], level + 1, depth - 1, (*path, k), events)}"
            for k in sorted(value)
        ]
    else:
        items = [_pretty(v, level + 1, depth - 1, (*path, "[]"), events) for v in value]
    pad = "\n" + " " * (level + 1)
    open_, close = ("{", "}") if isinstance(value, dict) else ("[", "]")
    return open_ + pad + ("," + pad).join(items) + "\n" + " " * level + close
