"""``ToolBox``: the standard tools bound to one sandbox and workspace, checking and running
their calls.

Each tool is declared in its own module (schema, handler, traits, prompt line) and listed in
``standard``; ``ToolBox.schemas()`` returns their schemas in that fixed order, so every
request carries byte-identical tool definitions (provider prompt caching).
"""

from __future__ import annotations

import copy
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..config import AgentConfig
from ..core.outcome import ToolOutcome
from ..core.ports import OutputCallback
from ..core.toolset import ToolContext
from ..errors import ConfigError, ToolArgumentError, ToolError
from ..util.confined import ConfinementError, Workspace
from ..util.textbounds import head_tail
from . import files, view
from ._schema import Tool, check
from .standard import FOR_NOTEBOOK, FOR_SEEING, STANDARD


class ToolBox:
    """The standard tools bound to one sandbox and one workspace directory: a ``Toolset``.

    ``sandbox`` may still be starting (``core.starting.StartingSandbox``): a cell waits
    for it, the file tools do not need it. With ``vision`` (a model that sees) the images
    a cell displays travel on its outcome and ``view_image`` is offered. ``tools``: more
    tools it runs (a plugin's ``Tool``s), offered after its own.
    """

    def __init__(
        self,
        sandbox: Any,
        workdir: Path,
        *,
        result_chars: int = AgentConfig.result_chars,
        enabled: Iterable[str] | None = None,
        notebook_cells: dict[str, str] | None = None,
        cell_labels: dict[str, str] | None = None,
        vision: bool = False,
        tools: Iterable[Tool] = (),
    ) -> None:
        self.sandbox = sandbox
        self.root = Path(workdir).resolve()
        self.result_chars = result_chars
        self.notebook_cells = notebook_cells or {}
        self.cell_labels = cell_labels or {}
        self.vision = vision
        offered = [*STANDARD, *(FOR_NOTEBOOK if self.notebook_cells else ())]
        offered += [*(FOR_SEEING if vision else ()), *tools]
        if enabled is not None:
            wanted = list(enabled)
            unknown = sorted(set(wanted) - {t.name for t in offered})
            if unknown:
                raise ConfigError(f"unknown tool(s): {', '.join(unknown)}")
            offered = [t for t in offered if t.name in wanted]
        self._tools = {t.name: t for t in offered}
        if len(self._tools) < len(offered):
            raise ConfigError("a tool name is offered twice")
        self._schemas = [t.schema() for t in offered]

    @property
    def names(self) -> set[str]:
        return set(self._tools)

    def schemas(self) -> list[dict[str, Any]]:
        """Tool definitions in OpenAI form; a copy, so callers cannot disturb the next call."""
        return copy.deepcopy(self._schemas)

    def definition(self, name: str) -> Tool | None:
        """The declaration of tool ``name`` (traits, display code, cell), or None."""
        return self._tools.get(name)

    def prompt_lines(self) -> list[tuple[int, str]]:
        """This box's lines of the system prompt, ranked; the images line among them."""
        lines = [(t.prompt_rank, t.prompt) for t in self._tools.values() if t.prompt]
        if not self.vision:
            lines.append((view.IMAGES_RANK, view.BLIND_PROMPT))
        return lines

    async def call(
        self,
        name: str,
        arguments: dict[str, Any],
        ctx: ToolContext | None = None,
        *,
        on_output: OutputCallback | None = None,
    ) -> ToolOutcome:
        """Check ``arguments`` against the tool's schema and run it (a ``Toolset``).

        Live outputs go to ``ctx.on_output``, and the model is shown at most
        ``ctx.config.result_chars`` characters of the result (without a context:
        ``on_output`` and this box's ``result_chars``). Raises ToolArgumentError for
        unknown tools and arguments that do not fit the schema, ToolError when the tool
        refuses; a cell that fails is a result, not an exception.
        """
        tool = self._tools.get(name)
        if tool is None:
            available = ", ".join(self._tools)
            raise ToolArgumentError(f"unknown tool {name!r}; available: {available}")
        if not isinstance(arguments, dict):
            raise ToolArgumentError(f"{name}: arguments must be a JSON object")
        args = check(arguments, tool.parameters, name)
        started = time.perf_counter()
        output = ctx.on_output if ctx is not None else on_output
        limit = ctx.config.result_chars if ctx is not None else self.result_chars
        result = await tool.handler(self, on_output=output, limit=limit, **args)
        if not result.duration_s:
            result.duration_s = time.perf_counter() - started
        return result

    file_timeout_s: float = files.TIMEOUT_S
    """Seconds a file tool may run before the model gets a timeout error instead."""

    async def in_thread(self, limit: int, fn: Any, *args: Any) -> ToolOutcome:
        """Run a file tool confined to the workspace, on the file tools' own bounded pool;
        its text bounded to ``limit`` characters."""
        return ToolOutcome(text=head_tail(await self.confined(fn, *args), limit))

    async def confined(self, fn: Any, *args: Any) -> Any:
        """``fn(workspace, *args)`` on the file tools' pool, its failures as ``ToolError``."""
        try:
            return await files.run(fn, Workspace(self.root), *args, timeout=self.file_timeout_s)
        except TimeoutError:
            raise ToolError(
                f"{fn.__name__} took longer than {self.file_timeout_s:g} s and was stopped; "
                "try a smaller path"
            ) from None
        except ConfinementError as e:
            raise ToolError(str(e)) from None
        except OSError as e:  # permissions, disk full, name too long...
            raise ToolError(f"{fn.__name__} failed: {e.strerror or e}") from None

    @property
    def disk_mb(self) -> int | None:
        """The workspace's disk budget (the sandbox's), which writes are checked against."""
        return getattr(getattr(self.sandbox, "limits", None), "disk_mb", None)
