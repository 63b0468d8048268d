"""What a session did to the files, on the command line: the summary at the end of ``codeagent
run`` / ``resume``, ``codeagent diff`` (whole, ``--step``, ``--stat``) and the session
notebook's last cell. Real processes, real sandboxes, the scripted model.

The session cleans a CSV into a new one (57 rows), deletes another, edits ``report.py``
twice (``write_file``, then code), saves a chart as PNG and writes a notebook.
"""

from __future__ import annotations

import io
import re
from pathlib import Path

import nbformat
import pytest
from PIL import Image

from tests.cli.test_cli import codeagent, one_line_error
from tests.scripted_model import text, tool_calls

REPORT_BEFORE = 'import pandas as pd\n\ndf = pd.read_csv("raw.csv")\nprint(df.describe())\n'
REPORT_STEP2 = (
    'import pandas as pd\n\ndf = pd.read_csv("clean.csv")\nprint(df.describe())\nprint(len(df))\n'
)
CLEAN = (
    "import pandas as pd, os\n"
    "df = pd.read_csv('raw.csv').dropna()\n"
    "df.to_csv('clean.csv', index=False)\n"
    "os.remove('old.csv')\n"
    "print(len(df))"
)
EDIT_AND_PLOT = (
    "src = open('report.py').read().replace('df.describe()', 'df.sum()')\n"
    "open('report.py', 'w').write(src)\n"
    "import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n"
    "plt.figure(figsize=(4, 3), dpi=50)\nplt.bar(['a', 'b'], [1, 2])\nplt.savefig('totals.png')"
)
NOTEBOOK = (
    "import nbformat\nfrom nbformat.v4 import new_notebook, new_code_cell, new_markdown_cell\n"
    "nb = new_notebook(cells=[new_markdown_cell('# Totals'), "
    "new_code_cell('import pandas as pd')])\n"
    "nbformat.write(nb, 'analysis.ipynb')"
)
pytestmark = pytest.mark.timeout(900)
"""A dozen CLI processes a test: on a loaded machine each takes seconds to start."""

SUMMARY = (
    "5 files changed: analysis.ipynb (new, 2 cells), clean.csv (new, 57 rows), "
    "old.csv (deleted), report.py (+3 \u22122), totals.png (new)"
)


def _workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    rows = [f"{i},{i * 10}" for i in range(60)]
    for bad in (5, 17, 42):
        rows[bad] = f"{bad},"
    (ws / "raw.csv").write_text("id,amount\n" + "\n".join(rows) + "\n")
    (ws / "old.csv").write_text("id\n1\n")
    (ws / "report.py").write_text(REPORT_BEFORE)
    return ws


def _session(scripted_model, tmp_path: Path) -> tuple[Path, Path, str]:
    ws = _workspace(tmp_path)
    scripted_model.set_script(
        [
            tool_calls(("run_cell", {"code": CLEAN})),
            tool_calls(("write_file", {"path": "report.py", "content": REPORT_STEP2})),
            tool_calls(("run_cell", {"code": EDIT_AND_PLOT})),
            tool_calls(("run_cell", {"code": NOTEBOOK})),
            text("Cleaned and plotted."),
        ]
    )
    out = ws / ".codeagent" / "sessions" / "s.ipynb"
    model = ("--model", "m", "--base-url", scripted_model.url)
    result = codeagent("run", "clean the data", *model, "--workdir", str(ws), "--out", str(out))
    assert result.returncode == 0, result.stderr
    return ws, out, result.stdout


def test_run_prints_the_change_set_and_diff_shows_it(scripted_model, tmp_path: Path) -> None:
    ws, out, stdout = _session(scripted_model, tmp_path)
    lines = stdout.splitlines()
    assert lines[0] == "Cleaned and plotted."
    assert lines[1] == SUMMARY  # after the answer, before the notebook's path
    assert lines[2] == f"Session: {out}"

    whole = codeagent("diff", str(out))
    assert whole.returncode == 0, whole.stderr
    assert whole.stdout.splitlines()[0] == SUMMARY
    assert "--- a/report.py\n+++ b/report.py" in whole.stdout
    assert '-df = pd.read_csv("raw.csv")\n-print(df.describe())' in whole.stdout
    assert '+df = pd.read_csv("clean.csv")\n+print(df.sum())\n+print(len(df))' in whole.stdout
    assert "+++ /dev/null" in whole.stdout and "-id\n-1" in whole.stdout  # old.csv's diff
    assert "+ cell 1 (markdown) added: # Totals" in whole.stdout
    assert "+ cell 2 (code) added: import pandas as pd" in whole.stdout
    width, height = Image.open(io.BytesIO((ws / "totals.png").read_bytes())).size
    assert f"PNG image, {width}\u00d7{height}" in whole.stdout
    assert (width, height) == (200, 150)

    stat = codeagent("diff", str(out), "--stat")
    assert stat.returncode == 0, stat.stderr
    assert stat.stdout.splitlines() == [
        " analysis.ipynb | new, 2 cells",
        " clean.csv      | new, 57 rows",
        " old.csv        | deleted",
        " report.py      | +3 \u22122",
        " totals.png     | new",
        SUMMARY,
    ]

    # Step 2 is the write_file call: report.py only; step 3 edited it again and drew the chart.
    step2 = codeagent("diff", str(out), "--step", "2", "--stat")
    assert step2.returncode == 0, step2.stderr
    assert step2.stdout.splitlines() == [
        "Step 2 of run 0:",
        " report.py | +2 \u22121",
        "1 file changed: report.py (+2 \u22121)",
    ]
    step3 = codeagent("diff", str(out), "--step", "3")
    assert step3.returncode == 0, step3.stderr
    assert "2 files changed: report.py (+1 \u22121), totals.png (new)" in step3.stdout
    assert "-print(df.describe())\n+print(df.sum())" in step3.stdout
    # From another folder, with --workdir naming the one the session ran in.
    elsewhere = codeagent("diff", str(out), "--stat", "--workdir", str(ws), cwd=tmp_path)
    assert elsewhere.returncode == 0 and elsewhere.stdout.splitlines()[-1] == SUMMARY

    # The session notebook ends with the same summary and the diffs, as markdown.
    nb = nbformat.read(out, as_version=4)
    nbformat.validate(nb)
    last = nb.cells[-1]
    assert last.cell_type == "markdown" and last.metadata["codeagent"]["kind"] == "changes"
    assert SUMMARY in last.source
    assert "<summary><code>report.py</code> (+3 \u22122)</summary>" in last.source
    assert "```diff\n--- a/report.py\n+++ b/report.py" in last.source
    assert nb.cells[-2].metadata["codeagent"]["kind"] == "answer"
    assert sum(c.metadata["codeagent"].get("kind") == "changes" for c in nb.cells) == 1


def test_resume_ends_with_the_whole_sessions_change_set(scripted_model, tmp_path: Path) -> None:
    ws, out, _ = _session(scripted_model, tmp_path)
    scripted_model.set_script(
        [
            tool_calls(("run_cell", {"code": "open('clean.csv', 'a').write('99,990\\n')"})),
            text("Added a row."),
        ]
    )
    model = ("--model", "m", "--base-url", scripted_model.url)
    result = codeagent("resume", str(out), "add a row", *model, cwd=ws)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[1] == SUMMARY.replace("57 rows", "58 rows")
    nb = nbformat.read(out, as_version=4)
    kinds = [c.metadata["codeagent"].get("kind") for c in nb.cells]
    assert kinds.count("changes") == 1 and kinds[-1] == "changes"  # moved to the end
    assert "58 rows" in nb.cells[-1].source
    step1 = codeagent("diff", str(out), "--step", "1", "--stat")  # the last run with a step 1
    assert step1.stdout.splitlines() == [
        "Step 1 of run 1:",
        " clean.csv | +1 \u22120",
        "1 file changed: clean.csv (+1 \u22120)",
    ]


def test_diff_without_snapshots_and_bad_input(scripted_model, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    scripted_model.set_script(
        [tool_calls(("run_cell", {"code": "open('a.txt', 'w')"})), text("ok")]
    )
    out = tmp_path / "plain.ipynb"
    model = ("--model", "m", "--base-url", scripted_model.url)
    args = ("run", "go", *model, "--workdir", str(ws), "--out", str(out), "--no-snapshots")
    result = codeagent(*args)
    assert result.returncode == 0, result.stderr
    assert "changed" not in result.stdout  # no snapshots: no summary either
    none = codeagent("diff", str(out), "--workdir", str(ws))
    assert none.returncode == 1
    assert "has no workspace snapshots" in one_line_error(none)

    missing = codeagent("diff", str(tmp_path / "nope.ipynb"))
    assert missing.returncode == 2 and "not found" in one_line_error(missing)
    (tmp_path / "other.ipynb").write_text(nbformat.writes(nbformat.v4.new_notebook()))
    other = codeagent("diff", str(tmp_path / "other.ipynb"))
    assert other.returncode == 2 and "not a codeagent session" in one_line_error(other)
    step = codeagent("diff", str(out), "--step", "9", "--workdir", str(ws))
    assert step.returncode == 2
    assert re.search(r"step 9 is not in this session \(its steps: 1, 2\)", one_line_error(step))
    for bad in ("abc", "0", "-1"):
        wrong = codeagent("diff", str(out), "--step", bad)
        assert wrong.returncode == 2 and "--step" in one_line_error(wrong), bad
    nowhere = codeagent("diff", str(out), "--workdir", str(tmp_path / "gone"))
    assert nowhere.returncode == 2 and "is not a directory" in one_line_error(nowhere)
