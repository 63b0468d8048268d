"""The tools offered to the model, and ``ToolBox`` which checks and runs their calls.

Schemas are constants written here in one place; ``ToolBox.schemas()`` returns them in a fixed
order so every request carries byte-identical tool definitions (provider prompt caching).

Over 300 lines on purpose: the schemas are the model's contract, one list read as a whole;
the handlers they name live in their own modules (cells, files, edit_file, view, plan).
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
from . import cells as kernel
from . import edit_cell as edit
from . import edit_file, files, listing, plan, view
from ._schema import Tool, check, obj

_PATH = {"type": "string", "description": "Path relative to the workspace root."}


class ToolBox:
    """The standard tools bound to one sandbox and one workspace directory: a ``Toolset``.

    ``sandbox`` may still be starting (``core.starting.StartingSandbox``): a cell waits
    for it, the file tools do not need it. With ``vision`` (a model that sees) the images
    a cell displays travel on its outcome and ``view_image`` is offered.
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
    ) -> None:
        self.sandbox = sandbox
        self.root = Path(workdir).resolve()
        self.result_chars = result_chars
        self.notebook_cells = notebook_cells or {}
        self.cell_labels = cell_labels or {}
        self.vision = vision
        tools = _definitions() + ([EDIT_CELL] if self.notebook_cells else [])
        tools += [VIEW_IMAGE] if vision else []
        if enabled is not None:
            wanted = list(enabled)
            unknown = sorted(set(wanted) - {t.name for t in tools})
            if unknown:
                raise ConfigError(f"unknown tool(s): {', '.join(unknown)}")
            tools = [t for t in tools if t.name in wanted]
        self._tools = {t.name: t for t in tools}
        self._schemas = [t.schema() for t in tools]

    @property
    def names(self) -> set[str]:
        return set(self._tools)

    def schemas(self) -> list[dict[str, Any]]:
        """Tool definitions in OpenAI form; a copy, so callers cannot disturb the next call."""
        return copy.deepcopy(self._schemas)

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

    async def _in_thread(self, limit: int, fn: Any, *args: Any) -> ToolOutcome:
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

    # Each handler gets the call's arguments, ``on_output`` (live outputs) and ``limit`` (the
    # characters of its result the model may see: the run's ``AgentConfig.result_chars``).

    async def _run_cell(self, *, code: str, on_output: Any, limit: int) -> ToolOutcome:
        res = await kernel.run_cell(self.sandbox, code, on_output)
        return self._of_execution(res, code, limit)

    async def _run_command(self, *, command: str, on_output: Any, limit: int) -> ToolOutcome:
        res = await kernel.run_command(self.sandbox, command, on_output)
        return self._of_execution(res, command, limit)

    def _of_execution(self, res: Any, code: str, limit: int) -> ToolOutcome:
        """The outcome of a cell or command; a seeing model gets its images too."""
        hint = view.SHOWN_HINT if self.vision else view.BLIND_HINT
        outcome = ToolOutcome.of_execution(
            res,
            code,
            limit,
            image_hint=hint,
            hint=listing.hint_for(code),
            source=listing.lists_source(code),
            workspace=str(self.root),
        )
        if self.vision:
            outcome.images, total = view.images_of(res.outputs)
            if total > len(outcome.images):
                shown = f"only the first {len(outcome.images)} of {total} images are shown to you"
                outcome.text += f"\n[{shown}]"
        return outcome

    async def _read_file(
        self,
        *,
        path: str,
        start_line: int | None = None,
        end_line: int | None = None,
        encoding: str | None = None,
        on_output: Any,
        limit: int,
    ) -> ToolOutcome:
        return await self._in_thread(
            limit, files.read_file, path, start_line, end_line, limit, encoding
        )

    async def _write_file(
        self, *, path: str, content: str, on_output: Any, limit: int
    ) -> ToolOutcome:
        return await self._in_thread(limit, files.write_file, path, content, self.disk_mb)

    async def _list_files(self, *, path: str = ".", on_output: Any, limit: int) -> ToolOutcome:
        return await self._in_thread(limit, files.list_files, path, limit, self.file_timeout_s)

    async def _search_files(
        self, *, pattern: str, path: str = ".", on_output: Any, limit: int
    ) -> ToolOutcome:
        files.compile_pattern(pattern)
        return await self._in_thread(
            limit, files.search_files, pattern, path, limit, self.file_timeout_s
        )

    async def _edit_cell(
        self, *, cell_id: str, new_source: str, reason: str, on_output: Any, limit: int
    ) -> ToolOutcome:
        outcome = edit.propose(self.notebook_cells, cell_id, new_source, reason, self.cell_labels)
        outcome.text = head_tail(outcome.text, limit)
        return outcome

    async def _update_plan(
        self, *, steps: list[dict[str, Any]], on_output: Any, limit: int
    ) -> ToolOutcome:
        steps_ = plan.normalise(steps)
        return ToolOutcome(text=plan.summary(steps_), plan=steps_)

    _edit_file = edit_file.handle


def _definitions() -> list[Tool]:
    """Every tool, in the order the model sees them."""
    return [
        Tool(
            "run_cell",
            "Run Python code in the persistent IPython kernel (a Jupyter cell). Variables, "
            "imports and files persist between calls; the working directory is the workspace. "
            "Returns printed output, the value of the last expression, the traceback if it "
            "fails, and how long it ran. Plots shown with plt.show() reach the user as images.",
            obj(["code"], code={"type": "string", "description": "Python source of the cell."}),
            ToolBox._run_cell,
        ),
        Tool(
            "run_command",
            "Run a shell command in the sandbox (same limits and working directory as "
            "run_cell). Returns combined stdout and stderr and the exit status when non-zero. "
            "Use it for ls -la, wc, git, file conversions and similar; not for long-running "
            "servers. There is no network unless the administrator allowed it.",
            obj(["command"], command={"type": "string", "description": "Shell command line."}),
            ToolBox._run_command,
        ),
        Tool(
            "read_file",
            "Read a text file from the workspace, with line numbers. Long files are shown in "
            "parts: pass start_line/end_line (1-based, inclusive) to read a range. A file that "
            "is not UTF-8 is decoded in its detected encoding, which the result names; pass "
            "encoding to choose. Binary files are described, not shown.",
            obj(
                ["path"],
                path=_PATH,
                start_line={"type": "integer", "minimum": 1, "description": "First line."},
                end_line={"type": "integer", "minimum": 1, "description": "Last line."},
                encoding={
                    "type": "string",
                    "minLength": 1,
                    "description": "Decode as this encoding (e.g. latin-1, cp1252, utf-16).",
                },
            ),
            ToolBox._read_file,
        ),
        Tool(
            "write_file",
            "Create or overwrite a text file in the workspace with the given content "
            "(parent directories are created). Use it for scripts, data and config files.",
            obj(
                ["path", "content"],
                path=_PATH,
                content={"type": "string", "description": "The complete new file content."},
            ),
            ToolBox._write_file,
        ),
        edit_file.TOOL,
        Tool(
            "list_files",
            "List files and directories under a workspace path, recursively (directories end "
            "with /, files show their size).",
            obj([], path={**_PATH, "default": "."}),
            ToolBox._list_files,
        ),
        Tool(
            "search_files",
            "Search text files under a workspace path for a Python regular expression; "
            "returns matching lines as file:line: text.",
            obj(
                ["pattern"],
                pattern={"type": "string", "minLength": 1, "description": "Regular expression."},
                path={**_PATH, "default": "."},
            ),
            ToolBox._search_files,
        ),
        Tool(
            "update_plan",
            "Show the user your plan as a short checklist, if the work has several steps "
            "worth tracking; optional. Send the whole list each time; at most one step "
            "in_progress.",
            obj(
                ["steps"],
                steps={
                    "type": "array",
                    "minItems": 1,
                    "description": "All steps of the plan, in order.",
                    "items": obj(
                        ["step", "status"],
                        step={"type": "string", "description": "What this step does."},
                        status={"type": "string", "enum": list(plan.STATUSES)},
                    ),
                },
            ),
            ToolBox._update_plan,
        ),
    ]


EDIT_CELL = Tool(
    "edit_cell",
    "Propose a new source for one of the user's own notebook cells (cell ids are in the "
    "notebook context). Nothing runs: the user sees a diff with your reason and accepts or "
    "rejects it. Check the new code with run_cell first when the variables it needs are in "
    "your sandbox.",
    obj(
        ["cell_id", "new_source", "reason"],
        cell_id={"type": "string", "minLength": 1, "description": "The cell's id."},
        new_source={"type": "string", "description": "The complete new source of the cell."},
        reason={"type": "string", "description": "One sentence: what the edit fixes or adds."},
    ),
    ToolBox._edit_cell,
)
"""Offered only when the session knows the user's notebook (its code cells by id)."""

VIEW_IMAGE = Tool(
    "view_image",
    "Look at an image file of the workspace (PNG, JPEG, GIF, WebP…), e.g. a chart a script "
    "saved: it is shown to you after the tool results. Size cap: an image whose longer side "
    f"is over {view.MAX_SIDE} px is scaled down to {view.MAX_SIDE} px, so enlarging a crop "
    "shows no more detail; crop the region you need at its own pixels instead. Sent as PNG "
    "when it fits (lossless), else as JPEG.",
    obj(["path"], path=_PATH),
    view.handle_view_image,
)
"""Offered only to a model that sees (``vision``)."""
