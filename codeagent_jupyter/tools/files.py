"""File tools confined to the workspace: read, write, list and search.

They run in the agent's process (not in the sandbox), which may be privileged, while code in
the sandbox can change the workspace under them. So every path goes through
``codeagent_jupyter.util.confined``: resolved beneath the workspace root without following
symlinks, regular files only, never blocking. The tools run on their own small thread pool
with a time limit (``run``), so a slow or hostile workspace cannot stall the server's event
loop or its shared default thread pool. Everything returned is bounded.
"""

from __future__ import annotations

import asyncio
import functools
import re
import stat
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

from ..errors import ToolArgumentError, ToolError
from ..util.confined import ConfinementError, Entry, TooLargeError, Workspace, kind
from ..util.disk_budget import DiskBudgetError, check_room
from ..util.elision import whole_definitions_end
from . import decoding

MAX_READ_BYTES = 20_000_000
MAX_WRITE_BYTES = 5_000_000
MAX_SEARCH_FILE_BYTES = 2_000_000
MAX_LIST_ENTRIES = 400
MAX_WALK_ENTRIES = 50_000
MAX_MATCHES = 200
MAX_LINE_CHARS = 300
TIMEOUT_S = 30.0
SKIP_DIRS = frozenset(
    {".git", "__pycache__", ".ipynb_checkpoints", "node_modules", ".venv", ".mypy_cache"}
)

_POOL = ThreadPoolExecutor(max_workers=8, thread_name_prefix="codeagent-files")
"""File tools only: the default pool is shared with the rest of the server."""


async def run(fn: Callable[..., str], *args: object, timeout: float) -> str:
    """Run ``fn(*args)`` on the file tools' pool; ``TimeoutError`` after ``timeout`` seconds.

    A call that times out keeps its thread until it notices its own deadline (list and
    search check it between entries); reads and writes are bounded in size and never wait
    on a FIFO, so no thread stays busy for long.
    """
    future = _POOL.submit(functools.partial(fn, *args))
    return await asyncio.wait_for(asyncio.wrap_future(future), timeout)


def _is_binary(head: bytes) -> bool:
    return b"\x00" in head[:8192]


def _needs_path(tool: str, path: str) -> None:
    if not path.strip():
        raise ToolArgumentError(
            f"{tool} needs a file path relative to the workspace, got an empty one "
            "(list_files shows what is there)"
        )


def read_file(
    ws: Workspace,
    path: str,
    start: int | None,
    end: int | None,
    budget: int,
    encoding: str | None = None,
) -> str:
    """Numbered lines ``start..end`` (1-based, inclusive), stopping before ``budget`` chars;
    decoded as ``decoding.decode`` says (a line names any encoding but UTF-8)."""
    _needs_path("read_file", path)
    try:
        data = ws.read_bytes(path, MAX_READ_BYTES)
    except (FileNotFoundError, NotADirectoryError):
        raise ToolError(f"file not found: {path}") from None
    except IsADirectoryError:
        raise ToolError(f"{path} is a directory; use list_files") from None
    except TooLargeError as e:
        raise ToolError(
            f"{path} is too big to read ({e.size} bytes); inspect it with run_cell"
        ) from None
    if encoding is None and decoding.is_binary(data):
        raise ToolError(decoding.describe_binary(path, data, len(data)))
    decoded = decoding.decode(data, encoding)
    lines = decoded.text.splitlines()
    total = len(lines)
    first = start or 1
    last = min(end or total, total)
    if end is not None and start is not None and end < start:
        raise ToolArgumentError("end_line must be >= start_line")
    if total == 0:
        return f"{path} is empty"
    if decoded.note:
        budget -= len(decoded.note) + 1
    if first > total:
        raise ToolError(f"start_line {first} is past the end of {path} ({total} lines)")
    width = len(str(last))
    out: list[str] = []
    used = 0
    shown_to = first - 1
    for number in range(first, last + 1):
        text = lines[number - 1]
        if len(text) > 2000:
            text = text[:2000] + f" [... line cut, {len(text)} chars]"
        row = f"{number:>{width}}| {text}"
        if out and used + len(row) + 200 > budget:
            break
        out.append(row)
        used += len(row) + 1
        shown_to = number
    if shown_to < total and path.endswith(".py"):  # end before a def, not inside one
        keep = whole_definitions_end(lines[first - 1 :], len(out))
        out, shown_to = out[:keep], first - 1 + keep
    if shown_to < total:
        out.append(
            f"[showing lines {first}-{shown_to} of {total}; "
            f"call read_file with start_line={shown_to + 1} for more]"
        )
    return "\n".join([decoded.note, *out] if decoded.note else out)


def write_file(ws: Workspace, path: str, content: str, budget_mb: int | None = None) -> str:
    """Write ``content`` atomically (temp file + rename), creating parent directories;
    refused before writing when the workspace would pass its disk budget ``budget_mb``."""
    _needs_path("write_file", path)
    rel = ws.relpath(path)
    data = content.encode("utf-8")
    if len(data) > MAX_WRITE_BYTES:
        raise ToolError(f"content is too big ({len(data)} bytes, limit {MAX_WRITE_BYTES})")
    if budget_mb is not None:
        try:
            old = ws.stat(path)
            replacing = old.st_size if stat.S_ISREG(old.st_mode) else 0
        except (ConfinementError, OSError):
            replacing = 0
        try:
            check_room(ws.root, budget_mb, len(data), f"writing {rel}", replacing=replacing)
        except DiskBudgetError as e:
            raise ToolError(str(e)) from None
    try:
        existed = ws.write_bytes(path, data)
    except IsADirectoryError:
        raise ToolError(f"{path} is a directory") from None
    lines = content.count("\n") + (0 if content.endswith("\n") or not content else 1)
    verb = "overwrote" if existed else "created"
    return f"{verb} {rel} ({len(data)} bytes, {lines} lines)"


def _size(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return str(n)


def _entries(ws: Workspace, path: str, deadline: float, tool: str) -> Iterator[Entry]:
    """``ws.walk`` that stops with TimeoutError once ``deadline`` has passed, so a call
    the caller gave up on does not keep a pool thread busy."""
    for entry in ws.walk(path, skip=SKIP_DIRS, max_entries=MAX_WALK_ENTRIES):
        if time.monotonic() > deadline:
            raise TimeoutError(f"{tool} ran out of time")
        yield entry


def list_files(ws: Workspace, path: str, budget: int, timeout: float = TIMEOUT_S) -> str:
    """Recursive listing, directories marked with ``/``, files with their size."""
    deadline = time.monotonic() + timeout
    rel = ws.relpath(path)
    try:
        st = ws.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        raise ToolError(f"directory not found: {path}") from None
    if stat.S_ISREG(st.st_mode):
        return f"{rel}  ({_size(st.st_size)})"
    if not stat.S_ISDIR(st.st_mode):
        return f"{rel}  ({kind(st.st_mode)}, not read)"
    entries = sorted(_entries(ws, path, deadline, "list_files"), key=lambda e: e.path)
    capped = len(entries) >= MAX_WALK_ENTRIES
    out: list[str] = []
    used = 0
    for entry in entries:
        if len(out) >= MAX_LIST_ENTRIES or used > budget - 200:
            break
        if entry.kind == "symlink":
            out.append(f"{entry.path} -> (symlink, not followed)")
        elif entry.kind == "dir":
            out.append(entry.path + "/")
        elif entry.kind == "file":
            out.append(f"{entry.path}  ({_size(entry.size)})")
        else:
            out.append(f"{entry.path}  ({entry.kind}, not read)")
        used += len(out[-1]) + 1
    if not out:
        return f"{rel}/ is empty"
    if len(entries) > len(out):
        more = f"at least {len(entries) - len(out)}" if capped else len(entries) - len(out)
        out.append(f"[{more} more entries not shown; list a subdirectory]")
    return "\n".join(out)


def compile_pattern(pattern: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as e:
        raise ToolArgumentError(f"invalid regular expression {pattern!r}: {e}") from None


def search_files(
    ws: Workspace, pattern: str, path: str, budget: int, timeout: float = TIMEOUT_S
) -> str:
    """``file:line: text`` for every line matching ``pattern`` in text files under ``path``.

    Symlinks, special files, hard-linked files and files over ``MAX_SEARCH_FILE_BYTES`` are
    skipped; a single file named by ``path`` is refused with the reason instead.
    """
    deadline = time.monotonic() + timeout
    regex = compile_pattern(pattern)
    rel = ws.relpath(path)
    try:
        st = ws.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        raise ToolError(f"path not found: {path}") from None
    single = not stat.S_ISDIR(st.st_mode)
    if single:
        files: Iterator[str] = iter([rel])
    else:
        entries = _entries(ws, path, deadline, "search_files")
        files = (
            e.path
            for e in entries
            if e.kind == "file" and e.nlink == 1 and e.size <= MAX_SEARCH_FILE_BYTES
        )
    hits: list[str] = []
    more = 0
    used = 0
    for file in files:
        try:
            data = ws.read_bytes(file, MAX_SEARCH_FILE_BYTES)
        except TooLargeError:
            continue
        except (ConfinementError, OSError):
            if single:
                raise
            continue  # changed or removed since listed
        if _is_binary(data):
            continue
        for number, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
            if regex.search(line):
                if len(hits) >= MAX_MATCHES or used > budget - 200:
                    more += 1
                    continue
                hits.append(f"{file}:{number}: {line.strip()[:MAX_LINE_CHARS]}")
                used += len(hits[-1]) + 1
    if not hits:
        return f"no matches for {pattern!r} in {rel}"
    if more:
        hits.append(f"[{more} more matches not shown; narrow the pattern or the path]")
    return "\n".join(hits)
