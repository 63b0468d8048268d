"""What the kernel tells the server about the notebook the user has open, at Send time.

The kernel cannot know its notebook's current name (``JPY_SESSION_NAME`` is fixed when the
kernel starts; a rename or "Save as" does not change it) nor the cells not saved yet. So a
new session is started with:

- this kernel's id: the server looks the notebook up in jupyter_server's session table,
  which JupyterLab keeps current (works without the labextension, in Notebook 7 too);
- the live cells, when the labextension can read the open document (``get_cells``), with
  its current path; otherwise only the cell ``%agent fix`` is about, which the kernel saw.

An explicit ``--notebook-path`` is the user's word and is sent alone.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from ..util.textbounds import head_tail, strip_ansi
from .bridge import NotebookBridge
from .fixing import FailedCell

MAX_CELLS_JSON = 400_000
"""Live cells sent at most (JSON characters): the server caps a request body near 665 kB.
Past it outputs are dropped, then the cells (the server reads the saved notebook)."""
OUTPUT_CHARS = 1_500
ANSWER_WAIT_S = 2.0
"""How long Send waits for the labextension to answer at all: a frontend without it (VS
Code, classic Notebook) may never answer, and the session must not wait for that."""


def kernel_id() -> str | None:
    """This kernel's id, from its connection file (``kernel-<id>.json``, as jupyter_server's
    kernel manager names it); None outside such a kernel."""
    try:
        from ipykernel.connect import get_connection_file

        name = Path(get_connection_file()).stem
    except Exception:
        return None
    return name.removeprefix("kernel-") if name.startswith("kernel-") else None


def output_entry(output: dict[str, Any]) -> dict[str, Any] | None:
    """One output as the server takes it: the type and a short text, ANSI codes stripped."""
    kind = output.get("output_type")
    if kind not in ("stream", "error", "execute_result", "display_data"):
        return None
    shown = strip_ansi(str(output.get("text") or ""))
    return {"output_type": kind, "text": head_tail(shown, OUTPUT_CHARS)} if shown else None


def cell_entry(cell: dict[str, Any]) -> dict[str, Any] | None:
    """One live cell for the server (``livecells.CELL_ENTRY``); None when it cannot be sent."""
    cell_id, source = cell.get("id"), cell.get("source")
    if not isinstance(cell_id, str) or not isinstance(source, str) or len(source) > 100_000:
        return None
    kind = cell.get("cell_type") if cell.get("cell_type") in ("markdown", "raw") else "code"
    entry: dict[str, Any] = {"id": cell_id, "cell_type": kind, "source": source}
    if kind == "code":
        count = cell.get("execution_count")
        entry["execution_count"] = count if isinstance(count, int) else None
        outputs = [output_entry(o) for o in cell.get("outputs") or [] if isinstance(o, dict)]
        entry["outputs"] = [o for o in outputs if o is not None][:20]
    return entry


def bounded(cells: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
    """``cells`` within ``MAX_CELLS_JSON`` (outputs dropped if need be), or None."""
    if len(json.dumps(cells)) <= MAX_CELLS_JSON:
        return cells
    bare = [{k: v for k, v in c.items() if k != "outputs"} for c in cells]
    return bare if len(json.dumps(bare)) <= MAX_CELLS_JSON else None


class LiveNotebook:
    """Builds the notebook fields of one panel's start request (``AgentPanel.start_fields``)."""

    def __init__(
        self,
        bridge: NotebookBridge | None,
        *,
        explicit_path: bool,
        failed: FailedCell | None = None,
    ) -> None:
        self.bridge = bridge
        self.explicit_path = explicit_path
        self.failed = failed
        """The cell ``%agent fix`` is about, sent when the open document cannot be read."""

    async def read(self) -> dict[str, Any] | None:
        """The open notebook from the labextension (``{"path", "cells"}``), or None."""
        if self.bridge is None:
            return None
        try:
            there = await asyncio.wait_for(self.bridge.available(), ANSWER_WAIT_S)
        except asyncio.TimeoutError:
            return None
        return await self.bridge.notebook_cells() if there else None

    async def fields(self) -> dict[str, Any]:
        fields: dict[str, Any] = {}
        if not self.explicit_path:
            fields["kernel_id"] = kernel_id()
        live = await self.read()
        if live is not None:
            if not self.explicit_path and isinstance(live.get("path"), str) and live["path"]:
                fields["notebook_path"] = live["path"]
            entries = [e for e in (cell_entry(c) for c in live["cells"]) if e is not None]
            cells = bounded(entries)
            if cells is not None:
                return fields | {"cells": cells, "cells_complete": True}
        failed = self.failed
        if failed is not None and failed.cell_id:
            cell = {"id": failed.cell_id, "source": failed.source, "execution_count": failed.count}
            entry = cell_entry(cell)
            if entry is not None:
                fields["cells"] = [entry]
        return fields
