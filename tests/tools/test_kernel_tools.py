"""run_cell / run_command through a real sandbox kernel (one kernel shared by this module)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import pytest_asyncio

from codeagent_jupyter.config import SandboxLimits
from codeagent_jupyter.tools import ToolBox

try:
    from codeagent_jupyter.sandbox import Sandbox
except ImportError:  # the sandbox package exports Sandbox once it is complete
    try:
        from codeagent_jupyter.sandbox.kernel import Sandbox
    except ImportError:
        Sandbox = None

pytestmark = [
    pytest.mark.skipif(Sandbox is None, reason="codeagent_jupyter.sandbox.Sandbox not available"),
    pytest.mark.asyncio(loop_scope="module"),
]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def sandbox(tmp_path_factory: pytest.TempPathFactory):
    workdir = tmp_path_factory.mktemp("ws")
    async with Sandbox(workdir=workdir, limits=SandboxLimits(cell_timeout=20)) as sb:
        yield sb


async def test_run_cell_returns_traceback_state_and_outputs(sandbox):
    tb = ToolBox(sandbox, sandbox.workdir)
    seen: list[dict] = []
    res = await tb.call("run_cell", {"code": "x = 41\nprint(x + 1)\n1/0"}, on_output=seen.append)
    assert res.status == "error"
    assert res.text.startswith("[cell status: error, after ") and "ZeroDivisionError" in res.text
    assert " s]\n42\n" in res.text
    assert "\x1b[" not in res.text  # ANSI colours are stripped for the model
    assert res.code == "x = 41\nprint(x + 1)\n1/0"
    assert [o["output_type"] for o in res.outputs] == ["stream", "error"]
    assert seen == res.outputs  # streamed live as well
    assert isinstance(res.execution_count, int) and res.duration_s > 0
    again = await tb.call("run_cell", {"code": "x"})
    assert again.status == "ok" and again.text.startswith("41\n[ran ")  # state kept


async def test_run_cell_result_is_bounded(sandbox):
    tb = ToolBox(sandbox, sandbox.workdir, result_chars=2000)
    res = await tb.call("run_cell", {"code": "for i in range(20000): print(i)"})
    assert len(res.text) <= 2120  # the limit, one marker line and the duration
    assert res.text.startswith("0\n1\n") and res.text.split("\n[ran ")[0].endswith("19999")
    assert re.search(r"\[lines \d+-\d+ of 20000 not shown \([\d,]+ chars\): print only", res.text)


async def test_run_command_in_the_sandbox_workdir(sandbox):
    tb = ToolBox(sandbox, sandbox.workdir)
    await tb.call("write_file", {"path": "hello.txt", "content": "hi there\n"})
    res = await tb.call("run_command", {"command": "cat hello.txt && pwd"})
    assert res.status == "ok"
    assert res.text.splitlines()[:2] == ["hi there", str(sandbox.workdir)]
    assert res.code == "cat hello.txt && pwd"
    failed = await tb.call("run_command", {"command": "echo out; exit 3"})
    assert failed.status == "error" and "out" in failed.text and "3" in failed.text


async def test_file_written_by_a_tool_is_visible_to_the_kernel(sandbox: object):
    workdir: Path = sandbox.workdir  # type: ignore[attr-defined]
    tb = ToolBox(sandbox, workdir)
    await tb.call("write_file", {"path": "sub/data.csv", "content": "a,b\n1,2\n"})
    res = await tb.call("run_cell", {"code": "open('sub/data.csv').read().splitlines()"})
    assert res.text.splitlines()[0] == "['a,b', '1,2']"


async def test_real_outputs_record_into_a_valid_notebook(sandbox, tmp_path: Path):
    import nbformat

    from codeagent_jupyter import events as ev
    from codeagent_jupyter.record.recorder import NotebookRecorder

    tb = ToolBox(sandbox, sandbox.workdir)
    code = (
        "import matplotlib\nmatplotlib.use('module://matplotlib_inline.backend_inline')\n"
        "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.show()\nprint('drawn')\n"
        "undefined_name"
    )
    res = await tb.call("run_cell", {"code": code})
    rec = NotebookRecorder(tmp_path / "s.ipynb")
    rec.emit(ev.RunStarted(prompt="plot"))
    rec.emit(
        ev.ToolCallFinished(
            step=1,
            tool_call_id="c1",
            name="run_cell",
            status=res.status,
            result=res.text,
            code=res.code,
            outputs=res.outputs,
            execution_count=res.execution_count,
        )
    )
    nb = nbformat.read(tmp_path / "s.ipynb", as_version=4)
    nbformat.validate(nb)
    cell = nb.cells[-1]
    kinds = [o.output_type for o in cell.outputs]
    assert "display_data" in kinds and kinds[-1] == "error", kinds
    image = next(o for o in cell.outputs if o.output_type == "display_data")
    assert image.data["image/png"].startswith("iVBOR")  # a PNG, kept in the recording
    assert cell.outputs[-1].ename == "NameError" and cell.execution_count == res.execution_count
