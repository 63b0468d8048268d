"""A traceback shows, under each frame's arrow, the line of the cell that really ran.

IPython 9.12+ on Python <= 3.12 showed the wrong text for a generator expression's frame
in a kernel (``Cell In[2], line 14, in <genexpr>`` above the cell's first line); the sandbox
kernel corrects it at start (``sandbox/tracebacks.py``). Each check runs in a real sandbox
kernel and compares every frame with the source of the cell it names.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from codeagent_jupyter.sandbox import Sandbox
from codeagent_jupyter.util.textbounds import render_outputs

from .conftest import SMALL

FRAME = re.compile(r"^Cell In\[(\d+)\], line (\d+)(?:, in (.+))?$")
ARROW = re.compile(r"^-*> +(\d+) (.*)$")

FILLER = "".join(f"# line {n}\n" for n in range(3, 14))
SAME_CELL = "rows = [1, 2, 3]\nfirst = sum(r for r in rows)\n" + FILLER
SAME_CELL += "total = sum(r * missing for r in rows)\n"  # line 14
LAZY = "rows = [1, 2, 3]\nlazy = (r * missing for r in rows)\n" + FILLER + "total = sum(lazy)\n"
DEFINES = "import math\n\n\ndef f(rows):\n    return sum(r * missing for r in rows)\n"
CALLS = "# calls f\nvalue = math.pi\nf([1, 2])\n"


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def kernel(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Sandbox]:
    work = Path(tmp_path_factory.mktemp("tracebacks"))
    async with Sandbox(workdir=work, limits=SMALL, allow_unconfined=True) as sb:
        yield sb


def frames(text: str) -> list[tuple[int, int, str, int, str]]:
    """(cell number, line in the header, function, line under the arrow, its text) per frame."""
    found: list[tuple[int, int, str, int, str]] = []
    header: tuple[int, int, str] | None = None
    for row in text.splitlines():
        if match := FRAME.match(row):
            header = (int(match[1]), int(match[2]), match[3] or "<module>")
        elif header and (arrow := ARROW.match(row)):
            found.append((*header, int(arrow[1]), arrow[2]))
            header = None
    return found


async def _fails(sb: Sandbox, code: str, sources: dict[int, str]) -> list[tuple]:
    """Run ``code`` (it must fail); every frame checked against the cell it names."""
    r = await sb.execute(code)
    assert r.status == "error", r.text
    sources[r.execution_count or 0] = code
    shown = frames(render_outputs(r.outputs))  # what the model reads (the panel shows the same)
    assert shown, render_outputs(r.outputs)
    for cell, line, function, arrow, text in shown:
        assert arrow == line, (function, render_outputs(r.outputs))
        assert text == sources[cell].splitlines()[line - 1], (function, render_outputs(r.outputs))
    return [(line, function) for _, line, function, _, _ in shown]


@pytest.mark.asyncio(loop_scope="module")
async def test_a_generator_expression_shows_its_own_line(kernel: Sandbox) -> None:
    sources: dict[int, str] = {}
    assert await _fails(kernel, SAME_CELL, sources) == [(14, "<module>"), (14, "<genexpr>(.0)")]


@pytest.mark.asyncio(loop_scope="module")
async def test_a_generator_consumed_later_shows_where_it_was_written(kernel: Sandbox) -> None:
    sources: dict[int, str] = {}
    assert await _fails(kernel, LAZY, sources) == [(14, "<module>"), (2, "<genexpr>(.0)")]


@pytest.mark.asyncio(loop_scope="module")
async def test_a_function_from_an_earlier_cell_shows_that_cells_lines(kernel: Sandbox) -> None:
    defined = await kernel.execute(DEFINES)
    assert defined.status == "ok", defined.text
    sources = {defined.execution_count or 0: DEFINES}
    assert await _fails(kernel, CALLS, sources) == [
        (3, "<module>"),
        (5, "f(rows)"),
        (5, "<genexpr>(.0)"),
    ]
