"""Cutting a long result for the model so that the cut says how to get back what it hid.

A bare ``[… 2113 characters elided …]`` over the middle of a listing leaves the model to
guess what it missed (the one method it needed was often in the gap). Here a cut falls on
line boundaries and its marker names the hidden lines in units the model can ask for again:
``[lines 212-260 of 512 not shown (2,113 chars): read_file("m.py", start_line=212,
end_line=260) or print a slice]``. Text with too few lines to cut between falls back to the
character cut of ``textbounds.head_tail``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable

from .textbounds import head_tail

Hint = Callable[[int, int], str]
"""``hint(first, last)``: how the model can see hidden lines ``first..last`` (1-based)."""

PRINT_SLICE = "print only those lines (a slice) to see them"
"""The hint for a cell's output, where no file holds the hidden lines."""

_MARKER_ROOM = 200
"""Characters kept free for the marker line itself."""

_DEFINITION = re.compile(r"^[ \t]*(?:@|async[ \t]+def[ \t]|def[ \t]|class[ \t])")
_DECORATOR = re.compile(r"^[ \t]*@")


def definition_starts(lines: list[str]) -> list[int]:
    """Indexes of the lines where a Python ``def``/``class`` begins (at its first
    decorator): a source listing cut just before one of them keeps whole definitions."""
    starts = []
    for i, line in enumerate(lines):
        if _DEFINITION.match(line) and not (i and _DECORATOR.match(lines[i - 1])):
            starts.append(i)
    return starts


def whole_definitions_end(lines: list[str], shown: int) -> int:
    """How many of the first ``shown`` lines to keep so the kept part ends before a
    definition starts (when one starts in its second half), else ``shown``."""
    candidates = [
        i for i in definition_starts(lines[: shown + 1]) if max(1, shown // 2) <= i <= shown
    ]
    return max(candidates) if candidates else shown


def read_hint(path: str, offset: int = 0) -> Hint:
    """A hint naming the ``read_file`` call that shows the hidden lines of ``path``, whose
    first shown line is the file's line ``offset + 1``."""

    def hint(first: int, last: int) -> str:
        start, end = first + offset, last + offset
        return f"read_file({json.dumps(path)}, start_line={start}, end_line={end}) or print a slice"

    return hint


def elide_lines(text: str, limit: int, hint: Hint | None = None, *, source: bool = False) -> str:
    """``text`` if it fits in ``limit`` characters, else whole head lines, a marker line
    naming the hidden lines, their size and ``hint(first, last)``, and whole tail lines.
    For a Python ``source`` listing the cut moves to definition boundaries where that
    keeps at least half of each side, so no ``def`` or ``class`` is shown half.

    The result stays within ``limit`` plus the marker line. Text whose first or last line
    alone fills half the room is cut by characters instead (``head_tail``).
    """
    if len(text) <= limit:
        return text
    lines = text.split("\n")
    half = max(limit - _MARKER_ROOM, 0) // 2
    head: list[str] = []
    used = 0
    for line in lines:
        if used + len(line) + 1 > half:
            break
        head.append(line)
        used += len(line) + 1
    tail: list[str] = []
    used = 0
    for line in reversed(lines[len(head) :]):
        if used + len(line) + 1 > half:
            break
        tail.append(line)
        used += len(line) + 1
    tail.reverse()
    if source and head and tail:
        head = head[: whole_definitions_end(lines, len(head))]
        start = len(lines) - len(tail)
        later = [i for i in definition_starts(lines) if start <= i <= start + len(tail) // 2]
        if later:
            tail = lines[later[0] :]
    if not head or not tail or len(head) + len(tail) >= len(lines):
        return head_tail(text, limit)
    first, last = len(head) + 1, len(lines) - len(tail)
    hidden = sum(len(line) + 1 for line in lines[first - 1 : last])
    how = (hint or (lambda _a, _b: PRINT_SLICE))(first, last)
    marker = f"[lines {first}-{last} of {len(lines)} not shown ({hidden:,} chars): {how}]"
    return "\n".join([*head, marker, *tail])
