"""Where helpers' own session notebooks go, and how a resumed session numbers new helpers.

One rule for the CLI and the server: the helpers of session ``ID`` are recorded next to
its notebook, in ``helpers/ID/helper-<call>-<n>.ipynb`` (the CLI's default session folder
is ``.codeagent/sessions/``, the server's its ``sessions_dir``). Notebooks recorded before
(``.codeagent/delegates/ID/delegate-<call>-<n>.ipynb``) are session notebooks like any
other: they still open, replay and resume where they are.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .helper_sections import HEADING
from .recorder import NotebookRecorder

FOLDER = "helpers"


def helpers_folder(session_notebook: Path, session_id: str) -> Path:
    """The folder of session ``session_id``'s helpers' notebooks."""
    return Path(session_notebook).parent / FOLDER / session_id


def helper_recorders(folder: Path) -> Any:
    """``label -> NotebookRecorder`` writing helper ``label``'s notebook in ``folder``."""

    def record(label: str) -> NotebookRecorder:
        return NotebookRecorder(Path(folder) / f"helper-{label}.ipynb")

    return record


def helpers_started(notebook: Any) -> tuple[int, int]:
    """``(helpers, delegate calls)`` a session notebook already holds, so a resumed session
    numbers its new helpers after them (labels stay unique)."""
    metas = [c.metadata.get("codeagent", {}) for c in notebook.cells]
    heads = [m for m in metas if m.get("kind") == HEADING and m.get("child")]
    return len(heads), len({m.get("parent_tool_call_id") for m in heads})
