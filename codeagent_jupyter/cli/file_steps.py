"""What a file step changed, as the trace shows it: the file named in the step's header,
its diff under the result, bounded, and coloured line by line on a terminal.

An ``edit_file`` call carries its own unified diff; a ``write_file`` call says only what
the file holds now (not what it held before), so its whole new content is shown as added
lines. Everything here is someone else's text: ``diff_line`` makes it visible before any
colour is added.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text

from .. import events as ev
from ..util.visible import visible

DIFF_LINES = 40
"""Lines of one file step's diff shown; ``codeagent diff SESSION --step N`` shows all."""
DIFF_INDENT = " " * 6
DIFF_STYLES = (("+++", "bold"), ("---", "bold"), ("@@", "cyan"), ("+", "green"), ("-", "red"))
"""How a diff line looks on a terminal, by how it starts (first match wins)."""


def title(name: str, arguments: dict[str, Any]) -> str:
    """A step's name as the header says it: the tool, and the file it works on."""
    path = arguments.get("path")
    return f"{name} {path}" if isinstance(path, str) and path else name


def edited_path(e: ev.ToolCallFinished) -> str:
    path = (e.edit or {}).get("path")
    return path if isinstance(path, str) else ""


def file_diff(e: ev.ToolCallFinished, written: tuple[str, str] | None) -> list[str]:
    """What a file step changed, as diff lines: an edit's own diff, or a whole file written
    (the tool does not say what it held before: its new content, every line added)."""
    diff = (e.edit or {}).get("diff")
    path = edited_path(e)
    if isinstance(diff, str) and diff and path:
        lines = diff.splitlines()
        headed = lines[0].startswith("--- ")  # the tool's own unified header
        return lines if headed else [f"--- {path}", f"+++ {path}", *lines]
    if written is None:
        return []
    path, content = written
    lines = content.splitlines()
    return [f"+++ {path} (whole file, {count(len(lines), 'line')})", *(f"+{x}" for x in lines)]


def bounded(lines: list[str], step: int) -> list[str]:
    if len(lines) <= DIFF_LINES:
        return [clip(line) for line in lines]
    more = len(lines) - DIFF_LINES
    note = f"... ({count(more, 'more line')}: codeagent diff SESSION.ipynb --step {step})"
    return [clip(line) for line in lines[:DIFF_LINES]] + [note]


def count(n: int, noun: str) -> str:
    """``1 line``, ``3 lines``."""
    return f"{n:,} {noun}" + ("" if n == 1 else "s")


def clip(line: Any, width: int = 160) -> str:
    text = str(line)
    return text if len(text) <= width else text[: width - 3] + "..."


def diff_line(line: str, indent: str = "") -> Text:
    """One line of a unified diff, made visible, then coloured by its first character."""
    shown = visible(line)
    for prefix, style in DIFF_STYLES:
        if shown.startswith(prefix):
            return Text(indent + shown, style=style)
    return Text(indent + shown)
