"""The data-science task suite: one module per task, found by name (``t<NN>_<name>.py``).

``load_tasks(pattern, tier)`` returns them in order as ``Task`` values; see ``_common`` for
what a task module defines. Tasks come in two tiers: ``easy`` ones a strong model can solve
blind from the prompt and the file list, and ``hard`` ones it cannot (the structure or the
problem shows only in the data, or only when code is run), each with the naive one-shot
script that fails it beside it.
"""

from __future__ import annotations

import fnmatch
import importlib
import pkgutil
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ._common import Result, Script

CATEGORIES = (
    "load/clean",
    "aggregate",
    "join/reshape",
    "time series",
    "statistics",
    "plotting",
    "modelling",
    "debugging",
    "file search",
    "multi-step",
)
TIERS = ("easy", "hard")
RECORDINGS = Path(__file__).with_name("recordings")
_MODULE = re.compile(r"t\d\d_\w+")


@dataclass(frozen=True)
class Task:
    """One task: its data, its request, its budget, its checker and its scripted proofs."""

    name: str
    category: str
    prompt: str
    trap: str
    max_steps: int
    max_tokens: int
    setup: Callable[[Path], None]
    check: Callable[[Path, str], Result]
    solved: Script
    wrong: Script
    tier: str = "easy"
    naive: str | None = None
    """The script a model would write blind from the prompt and the file list (hard tier):
    it fails the checker, and the one-shot baseline replays it offline."""
    limits: Mapping[str, Any] = field(default_factory=dict)
    """Sandbox limits that are part of the task (a memory budget); they replace the run's."""

    def recording(self, variant: str) -> Path:
        """The recorded session (``solved`` or ``wrong``) that proves the checker."""
        return RECORDINGS / f"{self.name}.{variant}.ipynb"


def _task(module: Any, name: str) -> Task:
    if module.CATEGORY not in CATEGORIES:
        raise ValueError(f"task {name}: unknown category {module.CATEGORY!r}")
    tier = getattr(module, "TIER", "easy")
    if tier not in TIERS:
        raise ValueError(f"task {name}: unknown tier {tier!r}")
    return Task(
        name=name,
        category=module.CATEGORY,
        prompt=module.PROMPT.strip(),
        trap=module.TRAP,
        max_steps=getattr(module, "MAX_STEPS", 15),
        max_tokens=getattr(module, "MAX_TOKENS", 150_000),
        setup=module.setup,
        check=module.check,
        solved=module.SOLVED,
        wrong=module.WRONG,
        tier=tier,
        naive=getattr(module, "NAIVE", None),
        limits=dict(getattr(module, "LIMITS", {})),
    )


def all_tasks() -> list[Task]:
    """Every task, in file order."""
    names = sorted(m.name for m in pkgutil.iter_modules(__path__) if _MODULE.fullmatch(m.name))
    return [_task(importlib.import_module(f"{__name__}.{n}"), n.split("_", 1)[1]) for n in names]


def load_tasks(pattern: str = "*", tier: str = "all") -> list[Task]:
    """Tasks of ``tier`` (``easy``, ``hard`` or ``all``) whose name or category matches one
    of the comma-separated glob patterns."""
    if tier != "all" and tier not in TIERS:
        raise ValueError(f"unknown tier {tier!r} (one of {', '.join(TIERS)}, all)")
    patterns = [p.strip() for p in pattern.split(",") if p.strip()] or ["*"]
    return [
        t
        for t in all_tasks()
        if tier in ("all", t.tier)
        and any(fnmatch.fnmatch(t.name, p) or fnmatch.fnmatch(t.category, p) for p in patterns)
    ]
