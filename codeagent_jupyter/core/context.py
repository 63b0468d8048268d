"""What the model is told about its surroundings in the first user message.

The workspace listing and the user's notebook let the model build on what the user already
did instead of guessing. Both are bounded: a notebook with huge outputs must not blow up the
request, and the text must be deterministic so repeated runs hit the provider's prompt cache.
"""

from __future__ import annotations

import functools
import platform
from importlib import metadata
from pathlib import Path
from typing import Any

from ..util.confined import ConfinementError, Workspace
from ..util.textbounds import head_tail
from ..util.variables import MAX_NAMES, line

SKIP_DIRS = {".git", "__pycache__", ".ipynb_checkpoints", "node_modules", ".codeagent", ".venv"}


def workspace_listing(root: Path, *, max_entries: int = 100, max_scanned: int = 20_000) -> str:
    """List files under ``root`` (sorted, sizes, hidden and cache folders skipped).

    The workspace is written by the sandbox, so it is walked through ``confined.Workspace``:
    symlinks are not followed (nor listed), and at most ``max_scanned`` entries are looked
    at, so a cell that makes a million files cannot stall the server building this text.
    """
    lines: list[str] = []
    total = 0
    try:
        entries = list(
            Workspace(root).walk(".", skip=frozenset(SKIP_DIRS), max_entries=max_scanned)
        )
    except (ConfinementError, OSError):
        entries = []
    for entry in entries:
        if entry.kind != "file" or any(p.startswith(".") for p in entry.path.split("/")):
            continue
        total += 1
        if len(lines) < max_entries:
            lines.append(f"- {entry.path} ({_size(entry.size)})")
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
        if cell.get("id"):
            label += f" id={cell['id']}"
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


def namespace_context(entries: list[dict[str, Any]], *, max_chars: int = 4_000) -> str:
    """The user's kernel variables (names, types, shapes: never values), one line each.

    The model writes proposed cells against these real names; they are *not* in the
    sandbox unless they were copied with ``--with`` (then ``loaded_context`` says so).
    """
    lines = [f"- {line(e)}" for e in entries[-MAX_NAMES:]]
    if not lines:
        return ""
    return (
        "Variables in the user's own kernel (not in your sandbox; cells the user accepts "
        "run there and can use them):\n" + head_tail("\n".join(lines), max_chars)
    )


def loaded_context(lines: list[str]) -> str:
    """What was copied from the user's kernel into the sandbox before the first step."""
    if not lines:
        return ""
    return "Variables copied from the user's kernel, already defined in your sandbox:\n" + (
        "\n".join(f"- {text}" for text in lines)
    )


DATA_LIBRARIES = (
    "pandas",
    "numpy",
    "matplotlib",
    "scipy",
    "scikit-learn",
    "statsmodels",
    "seaborn",
    "polars",
    "pyarrow",
)
"""Libraries whose version changes what code works (pandas 3's ``str`` dtype, numpy 2)."""


@functools.cache
def library_versions() -> str:
    """``Python 3.11.7, pandas 3.0.1, numpy 2.3.4``: read from the packages' metadata, not by
    importing them, so building the first request never waits for the data stack. The
    sandbox kernel runs on this interpreter and its packages."""
    found = [f"Python {platform.python_version()}"]
    for name in DATA_LIBRARIES:
        try:
            found.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            continue
    return ", ".join(found)


def kernel_line() -> str:
    """What the model must not assume about the sandbox kernel it starts with."""
    return (
        "Your sandbox kernel is fresh: nothing from the user's notebook or an earlier run is "
        f"defined in it; import what you use. Installed there: {library_versions()}."
    )


def build_context(
    workdir: Path,
    notebook: Any | None = None,
    *,
    namespace: list[dict[str, Any]] | None = None,
    loaded: list[str] | None = None,
    preloaded: list[str] | None = None,
) -> str:
    """The context section of the first user message."""
    pieces = ["## Context", workspace_listing(workdir), kernel_line()]
    if preloaded:
        pieces.append(
            "Already imported in your sandbox (no need to wait for these imports): "
            + ", ".join(preloaded)
            + "."
        )
    if notebook is not None:
        pieces.append(notebook_context(notebook))
    for extra in (namespace_context(namespace or []), loaded_context(loaded or [])):
        if extra:
            pieces.append(extra)
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
