"""Each tool of a capable agent, end to end through ``codeagent run``: a real process, a real
sandbox, the scripted model (which validates every request as the real API would).

Sight (images to a seeing model, the placeholder for a blind one), ``edit_file``,
``read_file``'s encodings, the plan without filler, the budget and durations the model is
told, and the agent's own folder kept out of its listings.
"""

from __future__ import annotations

import base64
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import nbformat
import pytest
from PIL import Image

from tests.scripted_model import ScriptedModelServer, text, tool_calls

PLOT = (
    "import matplotlib.pyplot as plt\n"
    "fig = plt.figure(figsize=(16, 6), dpi=100)\n"  # 1600x600: scaled down before it is sent
    "plt.plot([1, 3, 2]); plt.show()"
)


def codeagent(server: ScriptedModelServer, workdir: Path, *args: str, model: str = "m") -> Any:
    env = {**os.environ, "OPENAI_API_KEY": "test-key"}
    out = workdir.parent / f"{workdir.name}-session.ipynb"
    command = [sys.executable, "-m", "codeagent_jupyter.cli", "run", "do it", "--model", model]
    command += ["--base-url", server.url, "--workdir", str(workdir), "--out", str(out), *args]
    return subprocess.run(
        command,
        capture_output=True,
        text=True,
        env=env,
        timeout=180,
    ), out


def tool_text(request: dict[str, Any], index: int = -1) -> str:
    """The content of the ``index``-th tool message of a request."""
    tools = [m for m in request["messages"] if m["role"] == "tool"]
    return str(tools[index]["content"])


def image_parts(request: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        part
        for m in request["messages"]
        if m["role"] == "user" and isinstance(m["content"], list)
        for part in m["content"]
        if part["type"] == "image_url"
    ]


def decoded(part: dict[str, Any]) -> tuple[str, bytes]:
    head, b64 = part["image_url"]["url"].split(",", 1)
    return head, base64.b64decode(b64)


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    return path


def test_vision_on_sends_the_plot_and_view_image_as_image_parts(scripted_model, workdir):
    big = Image.new("RGB", (2400, 1200), (200, 30, 30))
    big.save(workdir / "chart.png")
    scripted_model.set_script(
        [
            tool_calls(("run_cell", {"code": PLOT})),
            tool_calls(("view_image", {"path": "chart.png"})),
            text("Seen."),
        ]
    )
    result, out = codeagent(scripted_model, workdir, "--vision", "on")
    assert result.returncode == 0, result.stderr
    first, second, third = scripted_model.requests
    assert "view_image" in {t["function"]["name"] for t in first["tools"]}
    assert "shown to you after the tool results" in first["messages"][0]["content"]
    assert image_parts(first) == []
    # After the cell: its one figure, right after the tool result, scaled to <= 1024 px.
    after_cell = second["messages"]
    assert after_cell[-2]["role"] == "tool" and after_cell[-1]["role"] == "user"
    assert re.search(r"\[image/png 1\d{3}x\d+: shown to you below\]", after_cell[-2]["content"])
    parts = image_parts(second)
    assert len(parts) == 1
    head, data = decoded(parts[0])
    assert head in ("data:image/png;base64", "data:image/jpeg;base64")
    with Image.open(io.BytesIO(data)) as img:
        assert max(img.size) == 1024  # the figure is wider: scaled down
    assert len(data) <= 150_000
    # view_image: the workspace file, scaled from 2400x1200.
    parts = image_parts(third)
    assert len(parts) == 2  # the earlier one stays where it was: the history is append-only
    with Image.open(io.BytesIO(decoded(parts[1])[1])) as img:
        assert img.size == (1024, 512)
    assert "chart.png: 1024x512, scaled from 2400x1200" in tool_text(third)
    assert third["messages"][: len(second["messages"])] == second["messages"]
    nb = nbformat.read(out, as_version=4)
    viewed = [c for c in nb.cells if c.metadata.get("codeagent", {}).get("tool") == "view_image"]
    assert len(viewed) == 1 and viewed[0].metadata["codeagent"]["status"] == "ok"


def test_images_per_step_are_bounded(scripted_model, workdir):
    many = "import matplotlib.pyplot as plt\nfor i in range(6):\n    plt.plot([i, 1]); plt.show()"
    scripted_model.set_script([tool_calls(("run_cell", {"code": many})), text("ok")])
    result, _ = codeagent(scripted_model, workdir, "--vision", "on")
    assert result.returncode == 0, result.stderr
    parts = image_parts(scripted_model.requests[1])
    assert len(parts) == 3  # a few per call (and per step), not six
    note = scripted_model.requests[1]["messages"][-1]["content"][0]["text"]
    assert note.startswith("The images displayed by the tool results above")
    assert "[only the first 3 of 6 images are shown to you]" in tool_text(
        scripted_model.requests[1]
    )
    size = len(json.dumps(scripted_model.requests[1])) - len(json.dumps(scripted_model.requests[0]))
    assert size <= 3 * 210_000


def test_vision_auto_off_for_an_unknown_model_says_what_to_do_instead(scripted_model, workdir):
    scripted_model.set_script([tool_calls(("run_cell", {"code": PLOT})), text("ok")])
    result, _ = codeagent(scripted_model, workdir, model="local-coder-7b")
    assert result.returncode == 0, result.stderr
    first, second = scripted_model.requests
    assert "view_image" not in {t["function"]["name"] for t in first["tools"]}
    assert "you do not receive images" in first["messages"][0]["content"]
    assert image_parts(second) == []
    assert re.search(
        r"\[image/png \d+x\d+: not shown: this model receives no images", tool_text(second)
    )


def test_vision_auto_on_for_a_model_known_to_see(scripted_model, workdir):
    scripted_model.set_script([tool_calls(("run_cell", {"code": PLOT})), text("ok")])
    result, _ = codeagent(scripted_model, workdir, model="gpt-4o-mini")
    assert result.returncode == 0, result.stderr
    assert len(image_parts(scripted_model.requests[1])) == 1


def test_edit_file_changes_the_file_shows_the_diff_and_is_recorded(
    scripted_model, workdir, monkeypatch
):
    script = workdir / "report.py"
    script.write_text("total = 0\nfor x in [1, 2]:\n    total += x\nprint('sum', total)\n")
    scripted_model.set_script(
        [
            tool_calls(
                ("edit_file", {"path": "report.py", "old_string": "total", "new_string": "s"})
            ),
            tool_calls(
                (
                    "edit_file",
                    {
                        "path": "report.py",
                        "old_string": "print('sum', total)",
                        "new_string": "print('total:', total)",
                    },
                )
            ),
            tool_calls(("run_command", {"command": "python report.py"})),
            text("Fixed."),
        ]
    )
    result, out = codeagent(scripted_model, workdir)
    assert result.returncode == 0, result.stderr
    ambiguous = tool_text(scripted_model.requests[1])
    assert "old_string occurs 3 times in report.py" in ambiguous
    assert "at line 1:\n1| total = 0" in ambiguous and "at line 3:" in ambiguous
    edited = tool_text(scripted_model.requests[2])
    assert edited.startswith("edited report.py: 1 replacement (line 4)")
    assert "-print('sum', total)\n+print('total:', total)" in edited
    assert script.read_text().endswith("print('total:', total)\n")
    assert "total: 3" in tool_text(scripted_model.requests[3])
    nb = nbformat.read(out, as_version=4)
    cells = [c for c in nb.cells if c.metadata.get("codeagent", {}).get("tool") == "edit_file"]
    done = [c for c in cells if c.metadata["codeagent"]["status"] == "ok"]
    assert len(done) == 1 and done[0].cell_type == "code"
    assert "+print('total:', total)" in done[0].metadata["codeagent"]["diff"]
    # The recorded cell makes the same edit again (what a re-run of the session does).
    script.write_text("print('sum', total)\n")
    monkeypatch.chdir(workdir)
    exec(done[0].source, {})
    assert script.read_text() == "print('total:', total)\n"


def test_read_file_names_its_encoding_and_describes_binaries(scripted_model, workdir):
    (workdir / "survey.csv").write_bytes("city;score\nZürich;4\nGenève;5\n".encode("latin-1"))
    (workdir / "blob.parquet").write_bytes(b"PAR1" + bytes(range(256)) * 4)
    scripted_model.set_script(
        [
            tool_calls(("read_file", {"path": "survey.csv"})),
            tool_calls(("read_file", {"path": "survey.csv", "encoding": "utf-8"})),
            tool_calls(("read_file", {"path": "blob.parquet"})),
            text("ok"),
        ]
    )
    result, _ = codeagent(scripted_model, workdir)
    assert result.returncode == 0, result.stderr
    detected = tool_text(scripted_model.requests[1])
    assert detected.startswith("[decoded as cp1252, not UTF-8")
    assert "2| Zürich;4" in detected and "\ufffd" not in detected
    forced = tool_text(scripted_model.requests[2])
    assert forced.startswith("[decoded as utf-8, as asked; 2 undecodable bytes shown as")
    binary = tool_text(scripted_model.requests[3])
    assert binary.startswith("Error: blob.parquet is a binary file: Parquet file, 1,028 bytes")
    assert "pandas.read_parquet" in binary and "\x00" not in binary


def test_plan_result_has_no_filler_and_budget_and_duration_are_told(scripted_model, workdir):
    steps = [{"step": "Load", "status": "in_progress"}, {"step": "Fit", "status": "pending"}]
    scripted_model.set_script(
        [
            tool_calls(("update_plan", {"steps": steps})),
            tool_calls(("run_cell", {"code": "import time; time.sleep(0.3); 6 * 7"})),
            text("42"),
        ]
    )
    result, _ = codeagent(scripted_model, workdir, "--max-steps", "5")
    assert result.returncode == 0, result.stderr
    first, second, third = scripted_model.requests
    system = first["messages"][0]["content"]
    assert "use it when the work has several steps" in system and "first call" not in system
    assert first["messages"][1]["content"].startswith(
        "[budget left: 5 of 5 steps, 30 min, 2M tokens]\n\n## Context"
    )
    assert tool_text(second).startswith("ok\n[budget left: 4 of 5 steps, ")
    cell = tool_text(third)
    assert cell.startswith("42\n[ran ") and " s]\n[budget left: 3 of 5 steps, " in cell
    seconds = float(cell.split("[ran ")[1].split(" s]")[0])
    assert seconds >= 0.3
    # Byte-stable: every request starts with the one before it.
    for before, after in ((first, second), (second, third)):
        assert after["messages"][: len(before["messages"])] == before["messages"]
        assert after["tools"] == before["tools"]


def test_written_files_are_listed_and_the_agents_own_folder_is_not(scripted_model, workdir):
    (workdir / "data.csv").write_text("a\n1\n")
    (workdir / ".codeagent" / "sessions").mkdir(parents=True)
    (workdir / ".codeagent" / "sessions" / "old.ipynb").write_text("{}")
    scripted_model.set_script(
        [
            tool_calls(("write_file", {"path": "notes/new.txt", "content": "b\n2\n"})),
            tool_calls(("list_files", {})),
            tool_calls(("search_files", {"pattern": "."})),
            text("ok"),
        ]
    )
    result, _ = codeagent(scripted_model, workdir)
    assert result.returncode == 0, result.stderr
    assert tool_text(scripted_model.requests[1]).startswith("created notes/new.txt (4 bytes")
    assert (workdir / "notes" / "new.txt").read_text() == "b\n2\n"
    listing, found = tool_text(scripted_model.requests[2]), tool_text(scripted_model.requests[3])
    assert "data.csv" in listing and "notes/new.txt" in listing and ".codeagent" not in listing
    assert "data.csv:1: a" in found and ".codeagent" not in found
