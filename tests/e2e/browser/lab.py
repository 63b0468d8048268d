"""Drive a notebook in JupyterLab from a test, the way a user would, but with explicit waits.

`LabPage` wraps a Playwright page. Reading state goes through `window.jupyterapp` (exposed by
the test server's config) because the notebook model, not the DOM, is the truth: a windowed
notebook does not render cells that are scrolled away. Actions a user performs (command
palette, clicks) go through the page.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import quote

import nbformat

# JavaScript run in the page: the notebook panel showing `path`, or null.
_PANEL_JS = """
(path) => {
  const app = window.jupyterapp;
  for (const widget of app.shell.widgets('main')) {
    if (widget.context && widget.context.path === path && widget.content.model) {
      return widget;
    }
  }
  return null;
}
"""


class LabPage:
    """One JupyterLab tab, with helpers for a single notebook at a time."""

    def __init__(self, page: Any, base_url: str, token: str) -> None:
        self.page = page
        self.base_url = base_url
        self.token = token
        self.path = ""

    def _js(self, body: str, arg: Any = None) -> Any:
        """Evaluate `body` with `panel` (the open notebook) and `arg` in scope."""
        return self.page.evaluate(
            f"async ([path, arg]) => {{ const panel = ({_PANEL_JS})(path); {body} }}",
            [self.path, arg],
        )

    def _wait(self, condition: str, arg: Any = None, timeout: float = 30_000) -> None:
        """Wait until the JavaScript expression `condition` (with `panel`, `arg`) is true."""
        self.page.wait_for_function(
            f"([path, arg]) => {{ const panel = ({_PANEL_JS})(path); return !!({condition}); }}",
            arg=[self.path, arg],
            timeout=timeout,
        )

    def open_notebook(self, path: str) -> None:
        """Open `path` (relative to the server root) and wait for an idle kernel."""
        self.path = path
        self.page.goto(f"{self.base_url}lab/tree/{quote(path)}?token={self.token}")
        self.page.wait_for_function("() => window.jupyterapp !== undefined")
        self.page.evaluate("async () => { await window.jupyterapp.restored; }")
        self._wait("panel && panel.context.isReady")
        self.wait_kernel_idle(timeout=60_000)

    def wait_kernel_idle(self, timeout: float = 30_000) -> None:
        self._wait(
            "panel && panel.sessionContext.session?.kernel?.status === 'idle'", timeout=timeout
        )

    def has_command(self, command: str) -> bool:
        return bool(
            self.page.evaluate("(id) => window.jupyterapp.commands.hasCommand(id)", command)
        )

    def cells(self) -> list[dict[str, Any]]:
        """The notebook's cells as nbformat dicts (id, cell_type, source, metadata, ...)."""
        return list(self._js("return panel.content.model.sharedModel.toJSON().cells;"))

    def wait_cell_count(self, count: int, timeout: float = 30_000) -> None:
        self._wait("panel.content.model.sharedModel.cells.length === arg", count, timeout)

    def index_of(self, cell_id: str) -> int:
        return int(
            self._js(
                "return panel.content.model.sharedModel.cells.findIndex(c => c.id === arg);",
                cell_id,
            )
        )

    def index_of_active(self) -> int:
        return int(self._js("return panel.content.activeCellIndex;"))

    def wait_edit_mode(self) -> None:
        """Wait until the active cell's editor has the keyboard, ready for typing."""
        self._wait("panel.content.mode === 'edit'")

    def wait_source(self, index: int, source: str) -> None:
        self._wait(
            "panel.content.model.sharedModel.cells[arg[0]]?.getSource() === arg[1]",
            [index, source],
        )

    def select_cell(self, cell_id: str) -> None:
        """Make the cell active (command mode), as a click on its prompt would."""
        index = self.index_of(cell_id)
        if index < 0:
            raise LookupError(f"no cell {cell_id} in {self.path}")
        self._js(
            "panel.content.mode = 'command'; panel.content.activeCellIndex = arg;"
            " panel.content.deselectAll();",
            index,
        )
        self._wait("panel.content.activeCellIndex === arg", index)

    def run_cell(self, cell_id: str, *, advance: bool = False) -> dict[str, Any]:
        """Run one cell (Shift+Enter when `advance`), wait until done; return the cell."""
        self.select_cell(cell_id)
        self._js("panel.content.activeCell.model.executionCount = null;")
        command = "notebook:run-cell-and-select-next" if advance else "notebook:run-cell"
        self.execute_command(command)
        self._wait(
            "panel.content.model.sharedModel.cells.find(c => c.id === arg)"
            "?.execution_count != null"
            " && panel.sessionContext.session?.kernel?.status === 'idle'",
            cell_id,
            timeout=60_000,
        )
        return next(cell for cell in self.cells() if cell["id"] == cell_id)

    def execute_command(self, command: str, args: dict[str, Any] | None = None) -> Any:
        return self.page.evaluate(
            "async ([id, args]) => await window.jupyterapp.commands.execute(id, args)",
            [command, args or {}],
        )

    def run_from_palette(self, label: str) -> None:
        """Open the command palette, search `label`, and run the item with that exact label."""
        self.execute_command("apputils:activate-command-palette")
        search = self.page.locator(".lm-CommandPalette-input")
        search.wait_for(state="visible")
        search.fill(label)
        item = self.page.locator(".lm-CommandPalette-item", has_text=label).first
        item.wait_for(state="visible")
        item.click()

    def save(self) -> None:
        """Save through the document manager and wait until the model is clean."""
        self.execute_command("docmanager:save")
        self._wait("!panel.context.model.dirty")

    def read_saved(self, root_dir: Path) -> nbformat.NotebookNode:
        """The notebook as written on disk by the last `save()`."""
        return nbformat.read(root_dir / self.path, as_version=4)
