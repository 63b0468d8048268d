"""File tools confined to the workspace: read, write, list and search.

They run in the agent's process (not in the sandbox), so confinement is enforced here:
absolute paths, ``..`` and symlinks that resolve outside the workspace are refused with a
message the model can act on. Everything returned is bounded.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

from ..errors import ToolArgumentError, ToolError

MAX_READ_BYTES = 20_000_000
MAX_WRITE_BYTES = 5_000_000
MAX_SEARCH_FILE_BYTES = 2_000_000
MAX_LIST_ENTRIES = 400
MAX_MATCHES = 200
MAX_LINE_CHARS = 300
SKIP_DIRS = {".git", "__pycache__", ".ipynb_checkpoints", "node_modules", ".venv", ".mypy_cache"}


def resolve(root: Path, path: str) -> Path:
    """Map a workspace-relative ``path`` to a real path under ``root`` or raise ToolError.

    ``root`` must already be resolved. The result is fully resolved (symlinks followed), so
    callers act on the real target and a symlink inside the workspace that points inside
    keeps working.
    """
    if "\x00" in path:
        raise ToolArgumentError("path must not contain NUL characters")
    pure = PurePosixPath(path.strip() or ".")
    if pure.is_absolute() or path.startswith("~"):
        raise ToolError(
            f"path {path!r} is outside the workspace (absolute); use a path relative to it"
        )
    if ".." in pure.parts:
        raise ToolError(f"path {path!r} is outside the workspace ('..' is not allowed)")
    real = (root / pure).resolve()
    if real != root and root not in real.parents:
        raise ToolError(f"path {path!r} is outside the workspace (a symlink leads out)")
    return real


def _rel(root: Path, real: Path) -> str:
    return real.relative_to(root).as_posix() if real != root else "."


def _is_binary(head: bytes) -> bool:
    return b"\x00" in head[:8192]


def read_file(root: Path, path: str, start: int | None, end: int | None, budget: int) -> str:
    """Numbered lines ``start..end`` (1-based, inclusive), stopping before ``budget`` chars."""
    real = resolve(root, path)
    if not real.exists():
        raise ToolError(f"file not found: {path}")
    if real.is_dir():
        raise ToolError(f"{path} is a directory; use list_files")
    size = real.stat().st_size
    if size > MAX_READ_BYTES:
        raise ToolError(f"{path} is too big to read ({size} bytes); inspect it with run_cell")
    data = real.read_bytes()
    if _is_binary(data):
        raise ToolError(f"{path} is a binary file ({size} bytes); inspect it with run_cell")
    lines = data.decode("utf-8", errors="replace").splitlines()
    total = len(lines)
    first = start or 1
    last = min(end or total, total)
    if end is not None and start is not None and end < start:
        raise ToolArgumentError("end_line must be >= start_line")
    if total == 0:
        return f"{path} is empty"
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
    if shown_to < total:
        out.append(
            f"[showing lines {first}-{shown_to} of {total}; "
            f"call read_file with start_line={shown_to + 1} for more]"
        )
    return "\n".join(out)


def write_file(root: Path, path: str, content: str) -> str:
    """Write ``content`` atomically (temp file + rename), creating parent directories."""
    real = resolve(root, path)
    data = content.encode("utf-8")
    if len(data) > MAX_WRITE_BYTES:
        raise ToolError(f"content is too big ({len(data)} bytes, limit {MAX_WRITE_BYTES})")
    if real.is_dir():
        raise ToolError(f"{path} is a directory")
    real.parent.mkdir(parents=True, exist_ok=True)
    existed = real.exists()
    mode = real.stat().st_mode & 0o7777 if existed else None
    fd, tmp = tempfile.mkstemp(dir=real.parent, prefix=f".{real.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, real)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    lines = content.count("\n") + (0 if content.endswith("\n") or not content else 1)
    verb = "overwrote" if existed else "created"
    return f"{verb} {_rel(root, real)} ({len(data)} bytes, {lines} lines)"


def _walk(root: Path, top: Path) -> Iterator[tuple[Path, bool]]:
    """Yield (path, is_dir) under ``top`` in sorted order, not following symlinks."""
    for dirpath, dirnames, filenames in os.walk(top):
        base = Path(dirpath)
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
        entries = [(base / d, True) for d in dirnames] + [(base / f, False) for f in filenames]
        yield from sorted(entries, key=lambda e: e[0].name)


def _size(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return str(n)


def list_files(root: Path, path: str, budget: int) -> str:
    """Recursive listing, directories marked with ``/``, files with their size."""
    real = resolve(root, path)
    if not real.exists():
        raise ToolError(f"directory not found: {path}")
    if not real.is_dir():
        return f"{_rel(root, real)}  ({_size(real.stat().st_size)})"
    out: list[str] = []
    count = 0
    used = 0
    for entry, is_dir in sorted(_walk(root, real), key=lambda e: e[0].as_posix()):
        count += 1
        if len(out) >= MAX_LIST_ENTRIES or used > budget - 200:
            continue
        rel = entry.relative_to(root).as_posix()
        if entry.is_symlink():
            target = entry.resolve()
            inside = target == root or root in target.parents
            out.append(f"{rel} -> {'(inside)' if inside else '(outside the workspace)'}")
        elif is_dir:
            out.append(rel + "/")
        else:
            out.append(f"{rel}  ({_size(entry.stat().st_size)})")
        used += len(out[-1]) + 1
    if not out:
        return f"{_rel(root, real)}/ is empty"
    if count > len(out):
        out.append(f"[{count - len(out)} more entries not shown; list a subdirectory]")
    return "\n".join(out)


def compile_pattern(pattern: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as e:
        raise ToolArgumentError(f"invalid regular expression {pattern!r}: {e}") from None


def search_files(root: Path, pattern: str, path: str, budget: int) -> str:
    """``file:line: text`` for every line matching ``pattern`` in text files under ``path``."""
    regex = compile_pattern(pattern)
    real = resolve(root, path)
    if not real.exists():
        raise ToolError(f"path not found: {path}")
    files = [real] if real.is_file() else [p for p, d in _walk(root, real) if not d]
    hits: list[str] = []
    more = 0
    used = 0
    for file in files:
        if file.is_symlink() and root not in file.resolve().parents:
            continue
        try:
            if file.stat().st_size > MAX_SEARCH_FILE_BYTES:
                continue
            data = file.read_bytes()
        except OSError:
            continue
        if _is_binary(data):
            continue
        rel = file.relative_to(root).as_posix()
        for number, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
            if regex.search(line):
                if len(hits) >= MAX_MATCHES or used > budget - 200:
                    more += 1
                    continue
                hits.append(f"{rel}:{number}: {line.strip()[:MAX_LINE_CHARS]}")
                used += len(hits[-1]) + 1
    if not hits:
        return f"no matches for {pattern!r} in {_rel(root, real)}"
    if more:
        hits.append(f"[{more} more matches not shown; narrow the pattern or the path]")
    return "\n".join(hits)
