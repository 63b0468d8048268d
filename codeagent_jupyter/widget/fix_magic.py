"""``%agent fix`` in the magic: which failure, read from where, asked how.

A mixin of ``AgentMagics`` (``magic.py``), apart from it because finding the failed cell —
in this kernel's memory, by id, by the number the notebook shows, or in the open notebook
through the labextension — is its own question. The pure helpers are ``fixing``.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from .fixing import FailedCell, failed_in_notebook, fix_request, fix_title, names_used


class FixCommands:
    """Needs ``shell``, ``watcher`` (``FailureWatcher``) and ``counts`` (cell id -> the
    execution count this kernel gave it) from the class it is mixed into."""

    shell: Any
    watcher: Any
    counts: dict[str, int]

    def fix_request(self, failed: FailedCell, brought: list[str]) -> str:
        """The request of ``%agent fix``: the failed cell, source and traceback."""
        suggest = [n for n in names_used(failed.source, self.shell.user_ns) if n not in brought]
        if suggest and not brought:
            print(
                f"codeagent: to let the agent reproduce the error, copy what the cell uses: "
                f"%agent --with {','.join(suggest)} fix"
            )
        return fix_request(failed, brought, suggest)

    async def _fix_from_notebook(
        self,
        panel: Any,
        brought: list[str],
        *,
        cell_id: str | None = None,
        number: int | None = None,
    ) -> None:
        """``%agent fix In[9]`` / ``--cell ID fix`` for a failure this kernel did not see (it
        happened before ``%load_ext``, or in an earlier kernel): the source and error output
        come from the open notebook, through the labextension."""
        bridge = panel.inserter.bridge if panel.inserter is not None else None
        live = await bridge.notebook_cells() if bridge is not None else None
        failed = failed_in_notebook(live, cell_id=cell_id, number=number)
        if isinstance(failed, str):
            panel.say(failed)
            return
        suggest = [n for n in names_used(failed.source, self.shell.user_ns) if n not in brought]
        await panel.start(fix_request(failed, brought, suggest), title=fix_title(failed))

    def _failed(self, cell_id: str | None, number: int | None) -> FailedCell | None:
        """The failure ``%agent fix`` is about, as this kernel saw it (None: it did not):
        the cell ``cell_id``, the cell that ran as ``In [number]``, or the last one."""
        if number is not None:
            cell_id = self.cell_of(number)
            if cell_id is None:
                return None
        failed = self.watcher.failed(cell_id)
        if failed is None or failed.cell_id is None:
            return failed
        return dataclasses.replace(failed, count=self.counts.get(failed.cell_id))

    def cell_of(self, number: int) -> str | None:
        """The notebook cell that ran as ``In [number]`` in this kernel, if one did."""
        return next((c for c, n in self.counts.items() if n == number), None)
