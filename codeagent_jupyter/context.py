"""What the model is told about its surroundings in the first user message.

The workspace listing and the user's notebook let the model build on what the user already
did instead of guessing. Both are bounded: a notebook with huge outputs must not blow up the
request, and the text must be deterministic so repeated runs hit the provider's prompt cache.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from .textbounds import head_tail

SKIP_DIRS = {".git", "__pycache__", ".ipynb_checkpoints", "node_modules", ".codeagent", ".venv"}


def workspace_listing(root: Path, *, max_entries: int = 100) -> str:
    """List files under ``root`` (sorted, sizes, hidden and cache folders skipped)."""
    root = Path(root)
    lines: list[str] = []
    total = 0
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.startswith("."))
        rel = Path(dirpath).relative_to(root)
        for name in sorted(filenames):
            if name.startswith("."):
                continue
            total += 1
            if len(lines) < max_entries:
                try:
                    size = (Path(dirpath) / name).stat().st_size
                except OSError:
                    continue
                lines.append(f"- {(rel / name).as_posix()} ({_size(size)})")
    if not lines:
        return "The workspace is empty."
    more = f"\n… and {total - len(lines)} more files" if total > len(lines) else ""
    return "Files in the workspace:\n" + "\n".join(lines) + more


def notebook_context(nb: Any, *, max_chars: int = 12_000, output_chars: int = 600) -> str:
    """Render a notebook's cells (sources, short text outputs) as context for the model."""
    parts: list[str] = []
    for index, cell in enumerate(nb.get("cells", [])):
        source = _source(cell.get("source", ""))
        kind = cell.get("cell_type", "code")
        if kind == "markdown":
            parts.append(f"[{index}] markdown:\n{source}")
            continue
        if kind != "code":
            continue
        count = cell.get("execution_count")
        label = f"In [{count}]" if count else "In [ ]"
        block = f"[{index}] code {label}:\n```python\n{source}\n```"
        shown = _outputs_text(cell.get("outputs", []))
        if shown:
            block += "\nOutput:\n" + head_tail(shown, output_chars)
        parts.append(block)
    if not parts:
        return "The user's notebook is empty."
    return "The user's notebook (their own kernel's cells):\n\n" + head_tail(
        "\n\n".join(parts), max_chars
    )


def build_context(workdir: Path, notebook: Any | None = None) -> str:
    """The context section of the first user message."""
    pieces = ["## Context", workspace_listing(workdir)]
    if notebook is not None:
        pieces.append(notebook_context(notebook))
    return "\n\n".join(pieces)


def _outputs_text(outputs: list[dict[str, Any]]) -> str:
    texts = []
    for out in outputs:
        kind = out.get("output_type")
        if kind == "stream":
            texts.append(_source(out.get("text", "")))
        elif kind == "error":
            texts.append(f"{out.get('ename')}: {out.get('evalue')}")
        elif kind in ("execute_result", "display_data"):
            data = out.get("data", {})
            if "text/plain" in data:
                texts.append(_source(data["text/plain"]))
            else:
                texts.append(f"[{', '.join(sorted(data))}]")
    return "\n".join(t.rstrip("\n") for t in texts if t)


def _source(value: str | list[str]) -> str:
    return value if isinstance(value, str) else "".join(value)


def _size(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return f"{n} B"
