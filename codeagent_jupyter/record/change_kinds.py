"""What one file's two versions say to a reviewer: a bounded diff, cells, rows, dimensions.

The change set (``changes``) hands this module the bytes of a file before and after a
session, taken from the snapshot store (never from the workspace), each at most
``changes.READ_MAX`` bytes. Everything here is pure and bounded: a unified diff keeps its
first ``max_lines`` lines and says where it was cut, line counts stop being computed past
``MAX_LINES`` lines a side, and image dimensions are read from the first bytes of the PNG,
JPEG or GIF header (no image library decodes untrusted pixels).
"""

from __future__ import annotations

import difflib
import json
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

MAX_LINES = 20_000
"""Lines a side beyond which a modified text file is not diffed (difflib can be quadratic)."""
DIFF_CHANGED = 2_000
"""Changed lines a side (what is left once the lines both versions begin and end with are set
aside) beyond which difflib is not run: its matching costs up to the product of the two sides
(times the depth of its recursion), so a sandbox could make one diff take minutes with ten
thousand similar lines. Within this bound the worst case measured is a fraction of a second."""
TABLES = (".csv", ".tsv")
"""Text files whose lines are rows after a header line."""


@dataclass
class Described:
    """What ``describe`` found; ``kind`` is text, notebook, image or binary."""

    kind: str
    added: int | None = None
    removed: int | None = None
    diff: list[str] = field(default_factory=list)
    cut: int | None = None
    """The diff was cut at this many lines (None: it is whole)."""
    rows: int | None = None
    rows_before: int | None = None
    lines: int | None = None
    cells: list[str] = field(default_factory=list)
    cell_count: int | None = None
    cells_changed: int | None = None
    image: dict[str, Any] | None = None
    note: str = ""


def describe(path: str, before: bytes | None, after: bytes | None, max_lines: int) -> Described:
    """The change from ``before`` to ``after`` (None: absent) of the file at ``path``."""
    sample = after if after is not None else before or b""
    image = image_info(sample)
    if image is not None:
        return Described("image", image=image)
    old, new = _text(before), _text(after)
    if (before is not None and old is None) or (after is not None and new is None):
        return Described("binary")
    if path.endswith(".ipynb"):
        found = _notebook(old, new, max_lines)
        if found is not None:
            return found
    return _text_change(path, old, new, max_lines)


def image_info(data: bytes) -> dict[str, Any] | None:
    """``{"format", "width", "height"}`` from a PNG, JPEG or GIF header, else None."""
    if data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR" and len(data) >= 24:
        width, height = struct.unpack(">II", data[16:24])
        return {"format": "png", "width": width, "height": height}
    if data[:6] in (b"GIF87a", b"GIF89a") and len(data) >= 10:
        width, height = struct.unpack("<HH", data[6:10])
        return {"format": "gif", "width": width, "height": height}
    if data[:3] == b"\xff\xd8\xff":
        size = _jpeg_size(data)
        return {"format": "jpeg", "width": size[0], "height": size[1]} if size else None
    return None


_SOF = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}
"""JPEG start-of-frame markers (0xC4, 0xC8 and 0xCC are tables, not frames)."""


def _jpeg_size(data: bytes) -> tuple[int, int] | None:
    """Width and height from the first start-of-frame segment; None if there is none."""
    at = 2
    while at + 4 <= len(data):
        if data[at] != 0xFF:
            return None
        marker = data[at + 1]
        if marker == 0xFF:  # fill byte
            at += 1
            continue
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:  # no length field
            at += 2
            continue
        (length,) = struct.unpack(">H", data[at + 2 : at + 4])
        if marker in _SOF and at + 9 <= len(data):
            height, width = struct.unpack(">HH", data[at + 5 : at + 9])
            return width, height
        if length < 2:
            return None
        at += 2 + length
    return None


def _text(data: bytes | None) -> str | None:
    """``data`` as text when it is UTF-8 without NUL bytes; None otherwise (and for None)."""
    if data is None or b"\x00" in data[:8192]:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _text_change(path: str, old: str | None, new: str | None, max_lines: int) -> Described:
    a = old.splitlines() if old is not None else []
    b = new.splitlines() if new is not None else []
    found = Described("text", lines=len(b) if new is not None else len(a))
    if path.lower().endswith(TABLES):
        found.rows = _rows(b) if new is not None else None
        found.rows_before = _rows(a) if old is not None else None
    if old is not None and new is not None and max(len(a), len(b)) > MAX_LINES:
        found.note = f"too many lines to diff ({len(a):,} → {len(b):,} lines)"
        return found
    if old is None or new is None:
        found.added, found.removed, found.diff, found.cut = _whole(
            path, a, b, new is None, max_lines
        )
        return found
    changed = _changed_lines(a, b)
    if changed > DIFF_CHANGED:
        found.note = f"diff omitted: too costly, {changed:,} lines changed"
        return found
    rows = difflib.unified_diff(a, b, f"a/{path}", f"b/{path}", lineterm="")
    found.added, found.removed, found.diff, found.cut = _count_and_cut(rows, max_lines)
    return found


def _changed_lines(a: list[str], b: list[str]) -> int:
    """The larger side of what differs between ``a`` and ``b`` once their common first and
    last lines are set aside: linear, and an upper bound of what difflib has to match."""
    start, short = 0, min(len(a), len(b))
    while start < short and a[start] == b[start]:
        start += 1
    end = 0
    while end < short - start and a[-1 - end] == b[-1 - end]:
        end += 1
    return max(len(a), len(b)) - start - end


def _rows(lines: list[str]) -> int:
    """Data rows of a table: its non-empty lines after the header line."""
    return max(sum(1 for line in lines if line.strip()) - 1, 0)


def _whole(
    path: str, a: list[str], b: list[str], deleted: bool, max_lines: int
) -> tuple[int, int, list[str], int | None]:
    """The diff of a new or deleted file, built directly: no matching, no pass over the
    lines beyond those kept."""
    lines = a if deleted else b
    if not lines:
        return 0, 0, [], None
    head = [
        f"--- a/{path}" if deleted else "--- /dev/null",
        "+++ /dev/null" if deleted else f"+++ b/{path}",
        f"@@ -1,{len(a)} +0,0 @@" if deleted else f"@@ -0,0 +1,{len(b)} @@",
    ]
    sign = "-" if deleted else "+"
    rows = head + [sign + line for line in lines[: max(max_lines - len(head), 0)]]
    cut = max_lines if len(lines) + len(head) > max_lines else None
    return (0, len(lines), rows, cut) if deleted else (len(lines), 0, rows, cut)


def _count_and_cut(rows: Iterator[str], max_lines: int) -> tuple[int, int, list[str], int | None]:
    """Lines added and removed (all of them), and the diff's first ``max_lines`` lines."""
    added = removed = total = 0
    kept: list[str] = []
    for row in rows:
        total += 1
        if total <= max_lines:
            kept.append(row)
        if row.startswith("+") and not row.startswith("+++ "):
            added += 1
        elif row.startswith("-") and not row.startswith("--- "):
            removed += 1
    return added, removed, kept, (max_lines if total > max_lines else None)


def _notebook(old: str | None, new: str | None, max_lines: int) -> Described | None:
    """A cell-level summary of a notebook's change; None when a side is not a notebook."""
    import nbformat  # slow to import: only when a notebook changed

    cells: list[list[Any]] = []
    for text in (old, new):
        if text is None:
            cells.append([])
            continue
        try:
            cells.append(list(nbformat.reads(text, as_version=4).cells))
        except Exception:  # not a notebook after all: diffed as text
            return None
    lines = list(_cell_lines(cells[0], cells[1]))
    found = Described("notebook", cell_count=len(cells[1] if new is not None else cells[0]))
    found.cells_changed = len(lines)
    found.cells = lines[:max_lines]
    found.cut = max_lines if len(lines) > max_lines else None
    return found


def _cell_lines(before: list[Any], after: list[Any]) -> Iterator[str]:
    """One line per cell added, removed or changed (source or outputs), matched by id."""

    def key(i: int, cell: Any) -> str:
        return str(cell.get("id") or f"#{i}")

    old = {key(i, c): c for i, c in enumerate(before)}
    seen = set()
    for number, cell in enumerate(after, 1):
        ident = key(number - 1, cell)
        seen.add(ident)
        was = old.get(ident)
        label = f"cell {number} ({cell.get('cell_type', '?')})"
        if was is None:
            yield f"+ {label} added: {_first_line(cell)}"
        elif was.get("source") != cell.get("source"):
            yield f"~ {label} changed: {_first_line(cell)}"
        elif _outputs(was) != _outputs(cell):
            yield f"~ {label} outputs changed"
    for number, cell in enumerate(before, 1):
        if key(number - 1, cell) not in seen:
            yield f"- cell {number} ({cell.get('cell_type', '?')}) removed: {_first_line(cell)}"


def _first_line(cell: Any) -> str:
    source = cell.get("source") or ""
    text = "".join(source) if isinstance(source, list) else str(source)
    line = next((s.strip() for s in text.splitlines() if s.strip()), "")
    return (line[:77] + "…") if len(line) > 78 else (line or "(empty)")


def _outputs(cell: Any) -> str:
    return json.dumps(cell.get("outputs", []), sort_keys=True, default=str)
