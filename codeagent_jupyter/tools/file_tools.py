"""The workspace file tools as the model sees them: ``read_file``, ``write_file``,
``list_files`` and ``search_files``, declared here; their work is in ``files``, run
confined to the workspace on the file tools' pool (``ToolBox.confined``)."""

from __future__ import annotations

import shlex
from typing import Any

from ..core.outcome import ToolOutcome
from ..traits import ToolTraits
from . import files
from ._schema import Tool, obj

PATH = {"type": "string", "description": "Path relative to the workspace root."}

READS = ToolTraits("workspace")
"""A tool that reads the workspace's files (confined to it) and changes nothing."""


async def _read(
    box: Any,
    *,
    path: str,
    start_line: int | None = None,
    end_line: int | None = None,
    encoding: str | None = None,
    on_output: Any,
    limit: int,
) -> ToolOutcome:
    return await box.in_thread(limit, files.read_file, path, start_line, end_line, limit, encoding)


async def _write(box: Any, *, path: str, content: str, on_output: Any, limit: int) -> ToolOutcome:
    return await box.in_thread(limit, files.write_file, path, content, box.disk_mb)


async def _list(box: Any, *, path: str = ".", on_output: Any, limit: int) -> ToolOutcome:
    return await box.in_thread(limit, files.list_files, path, limit, box.file_timeout_s)


async def _search(
    box: Any, *, pattern: str, path: str = ".", on_output: Any, limit: int
) -> ToolOutcome:
    files.compile_pattern(pattern)
    return await box.in_thread(limit, files.search_files, pattern, path, limit, box.file_timeout_s)


def writefile_source(args: dict[str, Any]) -> str | None:
    """``write_file``'s notebook cell: ``%%writefile`` of the same content (a re-run of the
    session writes it again); None for a path that would not survive the magic's line."""
    path, content = args["path"], args["content"]
    if isinstance(path, str) and isinstance(content, str) and "\n" not in path:
        return f"%%writefile {shlex.quote(path)}\n{content}"
    return None


READ_FILE = Tool(
    "read_file",
    "Read a text file from the workspace, with line numbers. Long files are shown in "
    "parts: pass start_line/end_line (1-based, inclusive) to read a range. A file that "
    "is not UTF-8 is decoded in its detected encoding, which the result names; pass "
    "encoding to choose. Binary files are described, not shown.",
    obj(
        ["path"],
        path=PATH,
        start_line={"type": "integer", "minimum": 1, "description": "First line."},
        end_line={"type": "integer", "minimum": 1, "description": "Last line."},
        encoding={
            "type": "string",
            "minLength": 1,
            "description": "Decode as this encoding (e.g. latin-1, cp1252, utf-16).",
        },
    ),
    _read,
    READS,
    prompt="Read files with read_file: a file that is not UTF-8 comes back decoded in its "
    "detected encoding, which the result names (use that encoding in your own code too).",
    prompt_rank=40,
)

WRITE_FILE = Tool(
    "write_file",
    "Create or overwrite a text file in the workspace with the given content "
    "(parent directories are created). Use it for scripts, data and config files.",
    obj(
        ["path", "content"],
        path=PATH,
        content={"type": "string", "description": "The complete new file content."},
    ),
    _write,
    ToolTraits("workspace", writes_workspace=True),
    cell=writefile_source,
)

LIST_FILES = Tool(
    "list_files",
    "List files and directories under a workspace path, recursively (directories end "
    "with /, files show their size).",
    obj([], path={**PATH, "default": "."}),
    _list,
    READS,
    prompt="list_files and search_files show what is in the workspace.",
    prompt_rank=60,
)

SEARCH_FILES = Tool(
    "search_files",
    "Search text files under a workspace path for a Python regular expression; "
    "returns matching lines as file:line: text.",
    obj(
        ["pattern"],
        pattern={"type": "string", "minLength": 1, "description": "Regular expression."},
        path={**PATH, "default": "."},
    ),
    _search,
    READS,
)
