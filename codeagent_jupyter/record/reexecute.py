"""Re-execute a recorded session's cells in a fresh sandbox and compare the outputs.

A session notebook is only worth sharing if it still runs: this answers "does it reproduce?"
cell by cell. Outputs are compared after normalising what legitimately changes between
runs (memory addresses, ANSI codes, image bytes), so a mismatch means the behaviour changed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..core.ports import SandboxPort
from ..traits import traits_for
from ..util.textbounds import strip_ansi

_ADDRESS = re.compile(r"0x[0-9a-fA-F]{6,}")
_TIMING = re.compile(r"\b\d+(\.\d+)?\s?(ms|s|µs|us|ns)\b")


@dataclass
class CellCheck:
    """The outcome for one recorded cell."""

    index: int
    step: Any
    matched: bool
    detail: str = ""


def normalise(outputs: list[dict[str, Any]]) -> list[tuple[str, ...]]:
    """Reduce outputs to what should be identical on every run of the same code."""
    result: list[tuple[str, ...]] = []
    streams: dict[str, str] = {}
    for out in outputs:
        kind = out.get("output_type")
        if kind == "stream":
            streams[out.get("name", "stdout")] = streams.get(out.get("name", "stdout"), "") + (
                _text(out.get("text", ""))
            )
        elif kind == "error":
            result.append(("error", str(out.get("ename")), _clean(str(out.get("evalue", "")))))
        elif kind in ("execute_result", "display_data"):
            data = out.get("data", {})
            mimes = ",".join(sorted(data))
            plain = _clean(_text(data.get("text/plain", ""))) if "image/png" not in data else ""
            result.append(("data", mimes, plain))
    for name in sorted(streams):
        result.append(("stream", name, _clean(streams[name])))
    return sorted(result)


def outputs_recorded(meta: dict[str, Any]) -> bool:
    """Whether a code cell's recorded outputs are its own, to compare with a re-run: a
    cell of a tool that runs in the kernel, or one not made by a tool call. A file tool's
    cell (``%%writefile``) recreates a file, and its own output was never recorded."""
    tool = meta.get("tool")
    return not tool or traits_for(str(tool)).runs == "kernel"


async def reexecute(notebook: Any, sandbox: SandboxPort) -> list[CellCheck]:
    """Run every code cell the agent ran, in order, and compare with the recording."""
    checks = []
    for index, cell in enumerate(notebook.get("cells", [])):
        if cell.get("cell_type") != "code":
            continue
        meta = cell.get("metadata", {}).get("codeagent", {})
        if meta.get("child"):
            continue  # a helper's cell: it ran in the helper's own sandbox and workspace
        result = await sandbox.execute(_text(cell.get("source", "")))
        if not outputs_recorded(meta):
            continue  # it recreates a file later cells read; its own output is not recorded
        expected = normalise(list(cell.get("outputs", [])))
        actual = normalise(result.outputs)
        detail = "" if expected == actual else difference(expected, actual)
        checks.append(CellCheck(index, meta.get("step"), expected == actual, detail))
    return checks


def difference(expected: list[tuple[str, ...]], actual: list[tuple[str, ...]]) -> str:
    """The first output that differs between two ``normalise``d runs, in one line."""
    missing = [e for e in expected if e not in actual]
    extra = [a for a in actual if a not in expected]
    first = (missing or extra)[0]
    label = "recorded" if missing else "new"
    return f"{label} {first[0]} output differs: {first[-1][:120]!r}"


def _text(value: str | list[str]) -> str:
    return value if isinstance(value, str) else "".join(value)


def _clean(text: str) -> str:
    text = _ADDRESS.sub("0x…", strip_ansi(text))
    text = _TIMING.sub("<time>", text)
    return "\n".join(line.rstrip() for line in text.strip().splitlines())
