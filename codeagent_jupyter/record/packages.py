"""The packages a recorded session installed, as a resume or a fork must reinstall them.

The recorder keeps the installed set in ``metadata.codeagent.packages`` (name, version,
sha256, and the run and step that installed it); a fork from step N of run R reinstalls
only what was installed up to there. Anyone may have edited a shared notebook: what is
read here is only a list of names, versions and hashes, each checked again by the
installer (``packages.reinstall``) before anything is fetched or installed.
"""

from __future__ import annotations

import logging
from typing import Any

from ..errors import ToolError

log = logging.getLogger(__name__)


def recorded_packages(notebook: Any, run: int | None = None, step: int | None = None) -> list:
    """The session's installed wheels (plain dicts), cut after ``step`` of ``run`` if given."""
    meta = notebook.metadata.get("codeagent", {}) if notebook is not None else {}
    kept = []
    for item in meta.get("packages", []) or []:
        if not isinstance(item, dict) or not item.get("name") or not item.get("version"):
            continue
        at_run, at_step = _count(item.get("run", 0)), _count(item.get("step", 0))
        cut = step is not None and run is not None
        if cut and (at_run > run or (at_run == run and at_step > step)):
            continue
        kept.append(dict(item))
    return kept


async def reinstall(tool: Any, todo: Any) -> Any:
    """Reinstall, with ``tool`` (an ``install_packages`` tool, or None when installs are
    off), what a resumed session (``todo``, a ``ResumePlan``) had installed at its cut,
    before its cells run again. Logged, never fatal: a package that cannot come back makes
    its cells fail, and the rebuild says so. Returns ``tool``."""
    pins = recorded_packages(todo.notebook, todo.run, todo.step)
    if tool is None or not pins:
        return tool
    try:
        await tool.restore(pins)
    except ToolError as e:
        log.warning("could not reinstall the session's packages: %s", e)
    return tool


def _count(value: Any) -> int:
    """A recorded run or step number; anything else (an edited notebook) counts as the
    last one, so a cut leaves it out rather than failing."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return 1 << 62
