"""The sandbox plants links and FIFOs in the workspace; the change set shows them as what they
are and reads nothing outside the workspace, and "Revert this file" writes nothing there.

The attack: the model's code replaces ``report.py`` by a symlink to a file outside the
workspace (the victim), adds a symlink to a secret, a symlink to a folder outside, a FIFO,
and a symlink to a FIFO outside (a reader that followed it would block for ever). Through
the CLI (summary, ``codeagent diff``, the notebook's last cell) and the REST API (the
change set, and a revert of ``report.py``, forced too) the secret never shows, nothing
blocks, and the victim keeps its bytes.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import nbformat
import pytest

from tests.cli.test_cli import codeagent
from tests.scripted_model import text, tool_calls
from tests.server.helpers import Api

SECRET = "SECRET-OUTSIDE-THE-WORKSPACE-6f1c"
VICTIM = b"the victim's own bytes\n"


def _outside(tmp_path: Path) -> dict[str, Path]:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text(SECRET)
    (outside / "inner.csv").write_text(SECRET + "\n")
    (outside / "victim.txt").write_bytes(VICTIM)
    os.mkfifo(outside / "fifo")  # no writer: a blocking open of it never returns
    return {name: outside / name for name in ("secret.txt", "victim.txt", "fifo")} | {
        "dir": outside
    }


def _attack(out: dict[str, Path]) -> str:
    return (
        "import os\n"
        "os.remove('report.py')\n"
        f"os.symlink({str(out['victim.txt'])!r}, 'report.py')\n"
        f"os.symlink({str(out['secret.txt'])!r}, 'leak.txt')\n"
        f"os.symlink({str(out['dir'])!r}, 'data')\n"
        f"os.symlink({str(out['fifo'])!r}, 'pipe_link')\n"
        "os.mkfifo('queue')\n"
        "open('fine.txt', 'w').write('ok\\n')"
    )


SUMMARY = (
    "6 files changed: data (new symlink, not followed), fine.txt (new, 1 line), "
    "leak.txt (new symlink, not followed), pipe_link (new symlink, not followed), "
    "queue (new FIFO, not read), report.py (now a symlink, not followed)"
)


def test_cli_lists_links_and_fifos_and_reads_nothing_outside(
    scripted_model: Any, tmp_path: Path
) -> None:
    outside = _outside(tmp_path)
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "report.py").write_text("print('report')\n")
    scripted_model.set_script([tool_calls(("run_cell", {"code": _attack(outside)})), text("ok")])
    out = tmp_path / "s.ipynb"
    model = ("--model", "m", "--base-url", scripted_model.url)
    # --isolation none: about what the server reads, not the sandbox, so it runs in CI's
    # bubblewrap-hidden lane too
    args = ("run", "go", *model, "--workdir", str(ws), "--out", str(out), "--isolation", "none")
    result = codeagent(*args, timeout=180)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[1] == SUMMARY
    shown = codeagent("diff", str(out), "--workdir", str(ws), timeout=60)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.splitlines()[0] == SUMMARY
    assert "+ok" in shown.stdout  # the regular file's diff is there
    notebook = out.read_text()
    for where in (result.stdout, result.stderr, shown.stdout, shown.stderr, notebook):
        assert SECRET not in where
    last = nbformat.reads(notebook, as_version=4).cells[-1]
    assert last.metadata["codeagent"]["kind"] == "changes" and SUMMARY in last.source
    assert (outside["victim.txt"]).read_bytes() == VICTIM


async def _finished(api: Api, sid: str) -> None:
    for _ in range(600):
        detail = await api.ok("GET", f"sessions/{sid}")
        if detail["status"] is not None and detail["state"] == "idle":
            return
        await asyncio.sleep(0.2)
    raise AssertionError(f"session {sid} did not finish")


@pytest.mark.codeagent(allow_unconfined=True)  # about the server's reads, not isolation
async def test_rest_lists_them_and_revert_writes_nothing_outside(
    api: Api, scripted_model: Any, jp_root_dir: Path, tmp_path: Path
) -> None:
    outside = _outside(tmp_path)
    (jp_root_dir / "report.py").write_text("print('report')\n")
    scripted_model.set_script([tool_calls(("run_cell", {"code": _attack(outside)})), text("ok")])
    sid = (await api.start("go"))["id"]
    await _finished(api, sid)
    changes = await asyncio.wait_for(api.ok("GET", f"sessions/{sid}/changes"), 60)
    assert changes["summary"] == SUMMARY
    kinds = {f["path"]: (f["status"], f["kind"], f["revertible"]) for f in changes["files"]}
    assert kinds == {
        "data": ("added", "symlink", False),
        "fine.txt": ("added", "text", True),
        "leak.txt": ("added", "symlink", False),
        "pipe_link": ("added", "symlink", False),
        "queue": ("added", "fifo", False),
        "report.py": ("modified", "symlink", False),
    }
    assert SECRET not in json.dumps(changes)

    revert = f"sessions/{sid}/changes/revert"
    for body in ({"path": "report.py"}, {"path": "report.py", "force": True}):
        code, reply = await asyncio.wait_for(api.call("POST", revert, body), 60)
        assert code == 409 and "symlink" in reply["message"], (body, code, reply)
    assert outside["victim.txt"].read_bytes() == VICTIM
    assert os.path.islink(jp_root_dir / "report.py")  # left as it is, not written through
    for path in ("data/inner.csv", "leak.txt", "queue", "pipe_link"):
        code, reply = await asyncio.wait_for(api.call("POST", revert, {"path": path}), 60)
        assert code in (404, 409), (path, code, reply)
        assert SECRET not in json.dumps(reply)
    assert (outside["dir"] / "inner.csv").read_text() == SECRET + "\n"
    assert (jp_root_dir / "queue").exists() and os.path.islink(jp_root_dir / "leak.txt")
