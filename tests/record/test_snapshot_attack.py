"""The sandbox plants a symlink to a secret outside the workspace, and a FIFO, then the
workspace is snapshotted and resumed: the secret must never enter the store or a restore."""

from __future__ import annotations

from pathlib import Path

import nbformat

from tests.cli.test_cli import codeagent
from tests.scripted_model import text, tool_calls


def test_planted_symlink_and_fifo_are_skipped_not_followed(scripted_model, tmp_path: Path):
    secret = tmp_path / "secret.txt"
    secret.write_text("SECRET-OUTSIDE-THE-WORKSPACE")
    ws = tmp_path / "ws"
    ws.mkdir()
    attack = (
        "import os\n"
        f"os.symlink({str(secret)!r}, 'leak.txt')\n"
        "os.mkfifo('pipe')\n"
        "open('fine.txt', 'w').write('ok')"
    )
    scripted_model.set_script([tool_calls(("run_cell", {"code": attack})), text("done")])
    out = tmp_path / "s.ipynb"
    model = ("--model", "m", "--base-url", scripted_model.url)
    result = codeagent("run", "go", *model, "--workdir", str(ws), "--out", str(out))
    assert result.returncode == 0, result.stderr
    entry = nbformat.read(out, as_version=4).metadata.codeagent.snapshots[-1]
    assert entry["step"] == 1 and entry["changed"] == ["fine.txt"]
    assert "symlink" in entry["skipped"]["leak.txt"]
    assert "fifo" in entry["skipped"]["pipe"]
    store = ws / ".codeagent" / "snapshots"
    for blob in (store / "objects").rglob("*"):
        if blob.is_file():
            assert b"SECRET-OUTSIDE" not in blob.read_bytes()

    fresh = tmp_path / "fresh"
    fresh.mkdir()
    scripted_model.set_script([text("resumed")])
    args = (
        "resume",
        str(out),
        "carry on",
        *model,
        "--workdir",
        str(fresh),
        "--snapshots-from",
        str(ws),
    )
    resumed = codeagent(*args, "--out", str(tmp_path / "r.ipynb"))
    assert resumed.returncode == 0, resumed.stderr
    assert (fresh / "fine.txt").read_text() == "ok"
    assert not (fresh / "leak.txt").exists() or (fresh / "leak.txt").is_symlink()
    for path in fresh.rglob("*"):
        if path.is_file() and not path.is_symlink():
            assert b"SECRET-OUTSIDE" not in path.read_bytes()
