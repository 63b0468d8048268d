"""What the model reads of a real cell: library frames trimmed, environment paths hidden,
warnings once with a count, output cut short marked, and how long the cell ran.

One real sandbox kernel for the module; the recording (``outcome.outputs``) keeps the
outputs as they were.
"""

from __future__ import annotations

import sys

import pytest
import pytest_asyncio

from codeagent_jupyter.config import SandboxLimits
from codeagent_jupyter.sandbox import Sandbox
from codeagent_jupyter.tools import ToolBox
from codeagent_jupyter.util.modeltext import clean_model_text

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def box(tmp_path_factory: pytest.TempPathFactory):
    workdir = tmp_path_factory.mktemp("ws")
    async with Sandbox(workdir=workdir, limits=SandboxLimits(cell_timeout=60)) as sb:
        yield ToolBox(sb, sb.workdir)


async def test_a_pandas_error_keeps_the_cells_frames_and_the_last_library_frame(box):
    pytest.importorskip("pandas")
    code = "import pandas as pd\n\ndef load():\n    return pd.read_csv('missing.csv')\n\nload()"
    res = await box.call("run_cell", {"code": code})
    full = "\n".join(res.outputs[-1]["traceback"])
    assert full.count("site-packages") >= 3  # what the recording keeps
    text = res.text
    assert text.startswith("[cell status: error, after ")
    assert "Cell In[" in text and "load()" in text and "pd.read_csv('missing.csv')" in text
    assert "library frames left out" in text
    assert text.count("File <env>/pandas/") == 1  # only the last library frame
    assert "site-packages" not in text and sys.prefix not in text
    assert text.rstrip().endswith("No such file or directory: 'missing.csv'")
    assert len(text) < len(full) / 2


async def test_a_script_run_by_run_command_is_trimmed_too(box):
    pytest.importorskip("pandas")
    (box.root / "job.py").write_text("import pandas as pd\npd.read_csv('missing.csv')\n")
    res = await box.call("run_command", {"command": f"{sys.executable} job.py"})
    assert 'File "' in res.text and 'job.py", line 2' in res.text
    assert "library frames left out" in res.text and "site-packages" not in res.text
    assert "FileNotFoundError" in res.text


async def test_a_pandas_parser_error_comes_without_cython_noise(box):
    pytest.importorskip("pandas")
    (box.root / "bad.csv").write_text("a,b\n1,2\n3,4,5,6\n")
    res = await box.call("run_cell", {"code": "import pandas as pd\npd.read_csv('bad.csv')"})
    full = "\n".join(res.outputs[-1]["traceback"])
    assert "Could not get source" in full and ".pyx" in full  # what the recording keeps
    text = res.text
    assert "Could not get source" not in text and ".pyx" not in text
    assert "Cell In[" in text and "pd.read_csv('bad.csv')" in text
    assert text.count("library frames left out") == 1  # one line for the group
    assert text.count("File <env>/pandas/") == 1  # the last library frame, a Python one
    lines = text.rstrip().split("\n")
    assert lines[-1].startswith("ParserError: Error tokenizing data")
    assert lines[-2] == ""  # nothing between the last library frame and the exception


async def test_a_workspace_script_frame_is_shown_relative_to_the_workspace(box):
    (box.root / "tools").mkdir(exist_ok=True)
    (box.root / "tools" / "calc.py").write_text("def half(x):\n    return x / 0\n")
    code = "import sys\nsys.path.insert(0, 'tools')\nimport calc\ncalc.half(4)"
    res = await box.call("run_cell", {"code": code})
    assert str(box.root) in "\n".join(res.outputs[-1]["traceback"])  # the recording's
    assert str(box.root) not in res.text
    assert "File tools/calc.py:2, in half" in res.text


async def test_warnings_appear_once_with_a_count(box):
    code = (
        "import warnings\n"
        "for i in range(50):\n"
        "    warnings.warn_explicit('old API', FutureWarning, 'lib.py', 7)\n"
        "print('done')"
    )
    res = await box.call("run_cell", {"code": code})
    assert res.text.count("old API") == 1
    assert "FutureWarning: old API (lib.py:7)" in res.text
    assert res.text.startswith("done\n") or "done" in res.text


async def test_repeated_distinct_warnings_are_counted_each(box):
    code = (
        "import sys\n"
        "for i in range(20):\n"
        "    print('/env/lib/python3.11/site-packages/pkg/m.py:3: DeprecationWarning: a',"
        " file=sys.stderr)\n"
        "    print('  old_call()', file=sys.stderr)\n"
        "print('/x/y.py:9: UserWarning: b', file=sys.stderr)"
    )
    res = await box.call("run_cell", {"code": code})
    assert "DeprecationWarning: a (<env>/pkg/m.py:3) [20 times]" in res.text
    assert "UserWarning: b (/x/y.py:9)" in res.text and "old_call" not in res.text


async def test_output_cut_short_says_so_and_the_cell_says_how_long_it_ran(box):
    res = await box.call("run_cell", {"code": "for i in range(5000): print('line', i)"})
    assert "of 5000 not shown" in res.text  # head and tail, the cut names the lines
    assert "line 0" in res.text and "line 4999" in res.text
    assert res.text.rstrip().endswith(" s]") and "\n[ran " in res.text


async def test_printed_paths_are_left_alone():
    text = "/srv/env/lib/python3.11/site-packages/pandas/__init__.py"
    assert clean_model_text(text) == text
