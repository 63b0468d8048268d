"""``edit_file``: change part of a workspace file by exact replacement.

Rewriting a whole file to fix three lines costs a reply's worth of tokens and risks
changing what was not meant to change. The model names the exact text to replace; zero
or several matches (without ``replace_all``) is an error that shows where the candidates
are, so the next call can quote more context. The file is read and written through the
confined workspace (never following a symlink out of it), atomically; the unified diff
goes to the panel and the session notebook (``ToolOutcome.edit``).
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Any

from ..core.outcome import ToolOutcome
from ..errors import ToolArgumentError, ToolError
from ..traits import ToolTraits
from ..util.confined import TooLargeError, Workspace
from ..util.disk_budget import DiskBudgetError, check_room
from ..util.textbounds import head_tail
from ._schema import Tool, obj

MAX_EDIT_BYTES = 20_000_000
MAX_CANDIDATES = 5
CONTEXT_LINES = 2
MAX_DIFF_CHARS = 20_000


@dataclass(frozen=True)
class FileEdit:
    """What an edit did: the model's text, and the panel's and notebook's record."""

    text: str
    path: str
    diff: str
    replacements: int
    old_string: str
    new_string: str

    def record(self) -> dict[str, object]:
        """``ToolCallFinished.edit`` of an ``edit_file`` call."""
        return {
            "path": self.path,
            "diff": self.diff,
            "replacements": self.replacements,
            "old_string": self.old_string,
            "new_string": self.new_string,
        }


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _lines_of(text: str, starts: list[int]) -> list[int]:
    """The line of each offset in ``starts`` (ascending), in one pass over ``text``."""
    lines, line, at = [], 1, 0
    for start in starts:
        line += text.count("\n", at, start)
        at = start
        lines.append(line)
    return lines


def _candidates(text: str, needle: str, starts: list[int]) -> str:
    """Where ``needle`` occurs: each place's line numbers with a few lines around it."""
    lines = text.splitlines()
    width = len(str(len(lines)))
    blocks = []
    for start in starts[:MAX_CANDIDATES]:
        first = _line_of(text, start)
        last = first + needle.count("\n")
        lo, hi = max(1, first - CONTEXT_LINES), min(len(lines), last + CONTEXT_LINES)
        rows = [f"{n:>{width}}| {lines[n - 1][:300]}" for n in range(lo, hi + 1)]
        where = f"line {first}" if first == last else f"lines {first}-{last}"
        blocks.append(f"at {where}:\n" + "\n".join(rows))
    more = len(starts) - MAX_CANDIDATES
    tail = f"\n… and {more} more" if more > 0 else ""
    return "\n".join(blocks) + tail


def _near_misses(text: str, needle: str) -> str:
    """For zero matches: the lines most like the first line of ``needle`` (whitespace and
    small typos are the usual reasons), so the model can quote the file exactly."""
    probe = next((line.strip() for line in needle.splitlines() if line.strip()), "")
    if not probe:
        return ""
    lines = text.splitlines()
    stripped = [line.strip() for line in lines]
    close = difflib.get_close_matches(probe, stripped, n=3, cutoff=0.6)
    if not close:
        return ""
    width = len(str(len(lines)))
    rows = []
    for candidate in close:
        number = stripped.index(candidate) + 1
        rows.append(f"{number:>{width}}| {lines[number - 1][:300]}")
    return "\nclosest lines:\n" + "\n".join(rows)


def edit_file(
    ws: Workspace,
    path: str,
    old_string: str,
    new_string: str,
    replace_all: bool = False,
    budget_mb: int | None = None,
) -> FileEdit:
    """Replace ``old_string`` by ``new_string`` in ``path`` (exactly once, or every time
    with ``replace_all``); ``ToolError`` for no match, several (without ``replace_all``),
    a file that is not UTF-8 text, or a result over the workspace's disk budget."""
    if not path.strip():
        raise ToolArgumentError("edit_file needs a file path relative to the workspace")
    if not old_string:
        raise ToolArgumentError(
            "edit_file: old_string must not be empty (use write_file to create a file)"
        )
    if old_string == new_string:
        raise ToolArgumentError("edit_file: new_string is the same as old_string")
    rel = ws.relpath(path)
    try:
        data = ws.read_bytes(path, MAX_EDIT_BYTES)
    except (FileNotFoundError, NotADirectoryError):
        raise ToolError(f"file not found: {path} (write_file creates files)") from None
    except IsADirectoryError:
        raise ToolError(f"{path} is a directory") from None
    except TooLargeError as e:
        raise ToolError(f"{path} is too big to edit ({e.size} bytes); use run_cell") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ToolError(
            f"{path} is not UTF-8 text; edit it with run_cell in its own encoding"
        ) from None
    starts = _find_all(text, old_string)
    if not starts:
        raise ToolError(
            f"edit_file: old_string was not found in {rel} (it must match exactly, "
            f"whitespace and indentation included; read_file shows the text)"
            + _near_misses(text, old_string)
        )
    if len(starts) > 1 and not replace_all:
        raise ToolError(
            f"edit_file: old_string occurs {len(starts)} times in {rel}; quote more "
            f"surrounding text to pick one, or pass replace_all=true:\n"
            + _candidates(text, old_string, starts)
        )
    count = len(starts) if replace_all else 1
    updated = text.replace(old_string, new_string, count)
    encoded = updated.encode("utf-8")
    if budget_mb is not None:
        try:
            check_room(ws.root, budget_mb, len(encoded), f"editing {rel}", replacing=len(data))
        except DiskBudgetError as e:
            raise ToolError(str(e)) from None
    ws.write_bytes(path, encoded)  # atomic; an existing file keeps its permission bits
    diff = _diff(text, rel, starts[:count], old_string, new_string)
    lines = sorted(set(_lines_of(text, starts[:count])))
    where = ", ".join(map(str, lines[:10])) + (" …" if len(lines) > 10 else "")
    noun = "replacement" if count == 1 else "replacements"
    return FileEdit(
        f"edited {rel}: {count} {noun} (line {where})\n{diff}",
        rel,
        diff,
        count,
        old_string,
        new_string,
    )


def _find_all(text: str, needle: str) -> list[int]:
    starts, at = [], text.find(needle)
    while at != -1:
        starts.append(at)
        at = text.find(needle, at + len(needle))
    return starts


def _diff(old: str, rel: str, starts: list[int], needle: str, repl: str) -> str:
    """A unified diff of the change, computed over the edited region only (from three
    lines before the first match to three after the last): a 1 MB file edited in one
    place costs a few lines of diffing, not a split of the whole file."""
    begin = starts[0]
    for _ in range(4):  # back to the start of the line three lines above
        begin = old.rfind("\n", 0, max(begin - 1, 0)) + 1 if begin > 0 else 0
    end = starts[-1] + len(needle)
    for _ in range(4):
        found = old.find("\n", end)
        end = len(old) if found == -1 else found + 1
    region = old[begin:end]
    a, b = region.splitlines(), region.replace(needle, repl, len(starts)).splitlines()
    offset = _line_of(old, begin) - 1
    rows = list(difflib.unified_diff(a, b, lineterm="", n=3))[2:]
    out = [f"--- a/{rel}", f"+++ b/{rel}"]
    for row in rows:
        hunk = _HUNK.match(row)
        if hunk:
            o, oc, n, nc = (int(g) if g else 1 for g in hunk.groups())
            row = f"@@ -{o + offset}{_count(oc)} +{n + offset}{_count(nc)} @@"
        out.append(row)
    return _bound("\n".join(out))


_HUNK = re.compile(r"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def _count(n: int) -> str:
    return "" if n == 1 else f",{n}"


def _bound(diff: str) -> str:
    if len(diff) <= MAX_DIFF_CHARS:
        return diff
    return diff[:MAX_DIFF_CHARS] + f"\n[diff cut: {len(diff) - MAX_DIFF_CHARS} more characters]"


async def handle(
    box: Any,
    *,
    path: str,
    old_string: str,
    new_string: str,
    replace_all: bool = False,
    on_output: Any,
    limit: int,
) -> ToolOutcome:
    """``edit_file``'s handler (a ``ToolBox`` tool): the diff is the edit's record."""
    done = await box.confined(edit_file, path, old_string, new_string, replace_all, box.disk_mb)
    return ToolOutcome(text=head_tail(done.text, limit), edit=done.record())


TOOL = Tool(
    "edit_file",
    "Change part of a workspace text file by exact replacement: old_string (copied exactly "
    "from the file, indentation included) becomes new_string. It must match once, unless "
    "replace_all is true; otherwise the error shows where the candidates are. Prefer it "
    "to write_file for changing existing files.",
    obj(
        ["path", "old_string", "new_string"],
        path={"type": "string", "description": "Path relative to the workspace root."},
        old_string={"type": "string", "minLength": 1, "description": "The exact text to replace."},
        new_string={"type": "string", "description": "The text to put in its place."},
        replace_all={
            "type": "boolean",
            "default": False,
            "description": "Replace every occurrence instead of exactly one.",
        },
    ),
    handle,
    ToolTraits("workspace", writes_workspace=True),
    cell=lambda args: edit_source(args),  # defined below: looked up at call time
    prompt="Change existing files with edit_file (an exact old_string -> new_string "
    "replacement) rather than rewriting them with write_file.",
    prompt_rank=50,
)


def edit_source(args: dict[str, Any]) -> str | None:
    """A notebook cell that makes the same edit again (the session notebook's record of an
    ``edit_file`` call: re-running a session re-applies it), or None for odd arguments."""
    path, old, new = args.get("path"), args.get("old_string"), args.get("new_string")
    if not all(isinstance(v, str) for v in (path, old, new)) or "\n" in str(path):
        return None
    count = "" if args.get("replace_all") else ", 1"
    return (
        f"# edit_file {path}\n"
        "import pathlib as _pathlib\n"
        f"_path = _pathlib.Path({path!r})\n"
        f"_text = _path.read_bytes().decode().replace({old!r}, {new!r}{count})\n"
        "_path.write_bytes(_text.encode())\n"
        "del _path, _pathlib, _text"
    )
