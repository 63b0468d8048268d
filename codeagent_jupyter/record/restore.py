"""Rebuild a session's state in a fresh sandbox: its files, then its kernel's variables.

Order matters: the snapshot of the cut step is restored, the successful cells are run again
in order (so the kernel gets its variables back, and cells that read files find them), then
the snapshot is restored once more, because re-running a cell that appends to a file or
writes one with ``%%writefile`` would otherwise leave the files at a different state than
the step had. What cannot be rebuilt (a cell that now fails, or prints something else, a
file whose content is gone) is said in one line each, for the user and for the model.
A snapshot whose files would take the new workspace past its disk budget, or one a full
store has collected since, is not restored: one line says so, and the cells still re-run.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.ports import SandboxPort
from ..errors import ConfigError
from ..util.disk_budget import DiskBudgetError
from . import rerun_leftovers
from .reexecute import difference, normalise, outputs_recorded
from .resume import ResumePlan
from .snapshots import SnapshotStore


@dataclass
class Rebuilt:
    """What ``rebuild`` did; ``summary`` is the line the panel and CLI show."""

    step: int | None
    cells: int = 0
    seconds: float = 0.0
    files: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def summary(self) -> str:
        where = "the end" if self.step is None else f"step {self.step}"
        line = f"restored from {where} ({self.cells} cells re-run, {self.seconds:.1f} s)"
        return line + (f"; {len(self.problems)} problem(s)" if self.problems else "")

    def note_for_model(self) -> str:
        """One message telling the model the session was restored, and what was not."""
        text = f"[The session was {self.summary}: a new sandbox, its state rebuilt."
        if self.problems:
            text += " Not rebuilt: " + " | ".join(self.problems)
        return text + "]"

    def event_fields(self) -> dict[str, Any]:
        """The fields of the ``SessionRestored`` event that tells the panel and the CLI."""
        return {
            "from_step": self.step,
            "cells_rerun": self.cells,
            "seconds": round(self.seconds, 3),
            "files": self.files,
            "problems": list(self.problems),
            "summary": self.summary,
        }

    def to_dict(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "cells_rerun": self.cells,
            "seconds": round(self.seconds, 3),
            "files": self.files,
            "problems": list(self.problems),
        }


async def rebuild(plan: ResumePlan, sandbox: SandboxPort, store: SnapshotStore | None) -> Rebuilt:
    """Restore ``plan``'s snapshot into ``sandbox.workdir`` and re-run ``plan.cells``."""
    started = time.monotonic()
    done = Rebuilt(step=plan.step)
    target = Path(sandbox.workdir)
    budget = getattr(sandbox.limits, "disk_mb", None)
    snapshot = (plan.snapshot or {}).get("snapshot")
    if snapshot is None or store is None:
        done.problems.append("no workspace snapshot in this session: files not restored")
    else:
        try:
            restored = await asyncio.to_thread(store.restore, snapshot, target, budget_mb=budget)
        except (DiskBudgetError, ConfigError) as e:
            done.problems.append(f"files not restored: {e}")
            snapshot = None
        else:
            done.files = restored.written + len(restored.kept)
            done.problems += restored.problems
    had = rerun_leftovers.before(target) if snapshot is not None and plan.cells else None
    for index, cell in plan.cells:
        source = cell.source if isinstance(cell.source, str) else "".join(cell.source)
        result = await sandbox.execute(source)
        done.cells += 1
        meta = cell.metadata.get("codeagent", {})
        label = f"cell {index} (step {meta.get('step')})"
        if result.status != "ok":
            reason = _error_line(result.outputs) or result.note or result.status
            done.problems.append(f"{label} failed on re-run: {reason}")
        elif outputs_recorded(meta):
            expected, actual = normalise(list(cell.outputs)), normalise(result.outputs)
            if expected != actual:
                done.problems.append(f"{label} differs on re-run: {difference(expected, actual)}")
    if snapshot is not None and store is not None and plan.cells:
        try:  # the files as the step left them, not as re-run
            await asyncio.to_thread(store.restore, snapshot, target, budget_mb=budget)
            kept = set(store.manifest(snapshot)["files"]) | set(plan.snapshot.get("skipped") or {})
            rerun_leftovers.remove_new(target, had, kept)
        except (DiskBudgetError, ConfigError) as e:
            done.problems.append(f"files not restored after the re-run: {e}")
    done.seconds = time.monotonic() - started
    return done


def _error_line(outputs: list[dict[str, Any]]) -> str:
    for out in outputs:
        if out.get("output_type") == "error":
            return f"{out.get('ename')}: {str(out.get('evalue', ''))[:160]}"
    return ""
