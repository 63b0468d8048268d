"""A change set as text: for the terminal (``codeagent diff``) and for the session notebook.

The terminal gets unified diffs as ``git diff`` prints them (``--stat``: one line per file).
The notebook gets one markdown cell: the summary line, then each file folded in a
``<details>`` block holding its diff in a fenced ``diff`` block. File names and contents
come from the sandbox, so the cell escapes them: names as HTML text, contents inside a
fence longer than any run of backticks they contain (Markdown renders them as code, never
as markup).
"""

from __future__ import annotations

import html
import re

from .changes import TIMES, ChangeSet, FileChange, human

CELL_KIND = "changes"
"""``metadata.codeagent.kind`` of the session notebook's change-set cell."""


def details(change: FileChange) -> list[str]:
    """The lines that say more than the summary: dimensions, sizes, cells, notes."""
    found = change.found
    lines = []
    if found is not None and found.image:
        image = found.image
        lines.append(f"{image['format'].upper()} image, {image['width']}{TIMES}{image['height']}")
    if change.kind in ("binary", "large", "image", "unread") or (
        change.size_before is not None and change.size_after is not None and not found
    ):
        sizes = [human(s) for s in (change.size_before, change.size_after) if s is not None]
        lines.append(" → ".join(sizes))
    if found is not None and found.rows is not None and found.rows_before is not None:
        lines.append(f"{found.rows_before} → {found.rows} rows")
    if found is not None and found.cells:
        lines.extend(found.cells)
    note = change.note or (found.note if found else "")
    if note:
        lines.append(note)
    return lines


def cut_mark(change: FileChange) -> list[str]:
    """``[diff cut at N lines]`` when the file's diff or cell list was cut."""
    found = change.found
    return [f"[diff cut at {found.cut} lines]"] if found is not None and found.cut else []


def terminal(changes: ChangeSet, *, stat: bool = False) -> str:
    """What ``codeagent diff`` prints."""
    head = _heading(changes)
    if stat or not changes.files:
        width = max((len(f.path) for f in changes.files), default=0)
        rows = [f" {f.path.ljust(width)} | {f.brief()}" for f in changes.files]
        return "\n".join([*head, *rows, changes.summary()])
    out = [*head, changes.summary()]
    for change in changes.files:
        out += ["", f"{change.path} ({change.brief()})"]
        found = change.found
        out += [f"  {line}" for line in details(change)]
        out += found.diff if found is not None else []
        out += cut_mark(change)
    return "\n".join(out)


def _heading(changes: ChangeSet) -> list[str]:
    lines = []
    if changes.step is not None:
        lines.append(f"Step {changes.step} of run {changes.run}:")
    lines += [f"note: {note}" for note in changes.notes]
    lines += [changes.network.line()] if changes.network is not None else []
    if changes.reverted:
        lines.append("reverted since: " + ", ".join(changes.reverted))
    return lines


def markdown(changes: ChangeSet) -> str:
    """The session notebook's last cell: the summary, and each file's diff folded."""
    parts = [f"**Files changed by this session:** {html.escape(changes.summary())}"]
    if changes.network is not None:
        parts.append(f"**{html.escape(changes.network.line())}**")
    parts += [f"*{html.escape(note)}*" for note in changes.notes]
    for change in changes.files:
        title = f"<code>{html.escape(change.path)}</code> ({html.escape(change.brief())})"
        body = list(details(change))
        found = change.found
        block = "\n".join([*(found.diff if found else []), *body, *cut_mark(change)])
        if not block:
            parts.append(f"- {title}")
            continue
        fence = "`" * max(3, _longest_backticks(block) + 1)
        language = "diff" if found is not None and found.diff else ""
        parts.append(
            f"<details><summary>{title}</summary>\n\n{fence}{language}\n{block}\n{fence}\n\n"
            "</details>"
        )
    return "\n\n".join(parts)


def _longest_backticks(text: str) -> int:
    return max((len(run) for run in re.findall(r"`+", text)), default=0)
