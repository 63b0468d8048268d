"""``GET …/sessions/{id}/changes[?step=N]`` and ``POST …/changes/revert``: a real server, real
sandboxes, the scripted model, and users told apart by their tokens (``TokenUsers``)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import nbformat
import pytest

from tests.scripted_model import delay, text, tool_calls
from tests.security.server.conftest import TokenUsers, as_user
from tests.server.helpers import Api

ALICE, BOB, CAROL = as_user("alice-token"), as_user("bob-token"), as_user("carol-token")
REPORT = b"total = 0\nfor x in data:\n    total += x\nprint(total)\n"
OLD = b"id,amount\n1,10\n2,20\n"
STEP_1 = (
    "open('report.py', 'w').write('total = sum(data)\\nprint(total)\\n')\n"
    "open('new.txt', 'w').write('made by the agent\\n')\n"
    "import os; os.remove('old.csv')\n"
    "open('analysis.ipynb', 'a').write(' ')"  # the user's own notebook: never listed
)
STEP_2 = (
    "import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n"
    "plt.figure(figsize=(2, 1), dpi=50)\nplt.plot([1, 2])\nplt.savefig('chart.png')"
)


def _cell(code: str) -> dict[str, Any]:
    return tool_calls(("run_cell", {"code": code}))


async def _finished(api: Api, sid: str, headers: dict[str, str]) -> None:
    for _ in range(600):
        detail = (await api.call("GET", f"sessions/{sid}", headers=headers))[1]
        if detail["status"] is not None and detail["state"] == "idle":
            return
        await asyncio.sleep(0.2)
    raise AssertionError(f"session {sid} did not finish: {detail}")


@pytest.mark.server_app(identity_provider_class=TokenUsers)
@pytest.mark.codeagent(read_groups=["instructors"])
async def test_changes_route_and_revert(
    api: Api, scripted_model: Any, jp_root_dir: Path, jp_data_dir: Path
) -> None:
    proj = jp_root_dir / "proj"
    proj.mkdir()
    (proj / "report.py").write_bytes(REPORT)
    (proj / "old.csv").write_bytes(OLD)
    nbformat.write(nbformat.v4.new_notebook(), proj / "analysis.ipynb")
    scripted_model.set_script([_cell(STEP_1), _cell(STEP_2), text("done")])
    body = {"prompt": "tidy up", "notebook_path": "proj/analysis.ipynb"}
    code, session = await api.call("POST", "sessions", body, headers=ALICE)
    assert code == 201, session
    sid = session["id"]
    await _finished(api, sid, ALICE)

    code, changes = await api.call("GET", f"sessions/{sid}/changes", headers=ALICE)
    assert code == 200 and changes["available"], changes
    files = {f["path"]: f for f in changes["files"]}
    assert sorted(files) == ["chart.png", "new.txt", "old.csv", "report.py"]
    assert changes["summary"] == (
        "4 files changed: chart.png (new), new.txt (new, 1 line), old.csv (deleted), "
        "report.py (+1 \u22123)"
    )
    assert files["report.py"]["diff"][:2] == ["--- a/report.py", "+++ b/report.py"]
    assert "+total = sum(data)" in files["report.py"]["diff"]
    assert files["chart.png"]["image"] == {"format": "png", "width": 100, "height": 50}
    assert files["chart.png"]["thumbnail"].startswith("data:image/png;base64,iVBOR")
    assert all(f["revertible"] for f in files.values())
    step2_of = {"params": {"step": "2"}, "headers": ALICE}
    code, step2 = await api.call("GET", f"sessions/{sid}/changes", **step2_of)
    assert code == 200 and [f["path"] for f in step2["files"]] == ["chart.png"]
    assert (step2["run"], step2["step"]) == (0, 2)
    for bad in ("9", "abc", "0", "-1"):
        asked = {"params": {"step": bad}, "headers": ALICE}
        code, reply = await api.call("GET", f"sessions/{sid}/changes", **asked)
        assert code == 400 and "step" in reply["message"], (bad, reply)

    # The session notebook ends with the same change set, as markdown.
    saved = (await api.call("GET", f"sessions/{sid}/notebook", headers=ALICE))[1]
    last = nbformat.from_dict(saved).cells[-1]
    assert last.metadata["codeagent"]["kind"] == "changes"
    assert changes["summary"] in last.source

    # Per owner: bob gets the 404 of a session that does not exist; carol (a reader) may look.
    code, reply = await api.call("GET", f"sessions/{sid}/changes", headers=BOB)
    assert code == 404 and reply["message"] == f"no session {sid}"
    assert (await api.call("GET", f"sessions/{sid}/changes", headers=CAROL))[0] == 200
    revert = f"sessions/{sid}/changes/revert"
    assert (await api.call("POST", revert, {"path": "report.py"}, headers=BOB))[0] == 404
    assert (await api.call("POST", revert, {"path": "report.py"}, headers=CAROL))[0] == 403
    assert (proj / "report.py").read_bytes() != REPORT  # neither of them changed anything

    # Alice reverts: the file is back byte for byte, and the change set no longer lists it.
    code, done = await api.call("POST", revert, {"path": "report.py"}, headers=ALICE)
    assert code == 200, done
    assert done["reverted"]["action"] == "restored"
    assert (proj / "report.py").read_bytes() == REPORT
    assert [f["path"] for f in done["changes"]["files"]] == ["chart.png", "new.txt", "old.csv"]
    assert done["changes"]["reverted"] == ["report.py"]
    code, done = await api.call("POST", revert, {"path": "new.txt"}, headers=ALICE)
    assert code == 200 and done["reverted"]["action"] == "removed"
    assert not (proj / "new.txt").exists()

    # A file the user changed since the session's last snapshot is not overwritten silently.
    (proj / "old.csv").write_bytes(b"mine\n")
    code, reply = await api.call("POST", revert, {"path": "old.csv"}, headers=ALICE)
    assert code == 409 and "changed since the session's last snapshot" in reply["message"]
    assert (proj / "old.csv").read_bytes() == b"mine\n"
    code, done = await api.call("POST", revert, {"path": "old.csv", "force": True}, headers=ALICE)
    assert code == 200 and (proj / "old.csv").read_bytes() == OLD

    for path, status in (("report.py", 404), ("analysis.ipynb", 404), ("../x", 400), ("", 400)):
        code, reply = await api.call("POST", revert, {"path": path}, headers=ALICE)
        assert code == status, (path, code, reply)
    code, reply = await api.call("POST", revert, {"path": "a", "extra": 1}, headers=ALICE)
    assert code == 400

    # The session notebook ends with what is left: the chart.
    code, saved = await api.call("GET", f"sessions/{sid}/notebook", headers=ALICE)
    assert code == 200
    notebook = nbformat.from_dict(saved)
    last = notebook.cells[-1]
    assert last.metadata["codeagent"]["kind"] == "changes"
    assert "1 file changed: chart.png (new)" in last.source
    reverts = [e["revert"] for e in notebook.metadata["codeagent"]["snapshots"] if "revert" in e]
    assert reverts == ["report.py", "new.txt", "old.csv"]

    # While a run is under way nothing is reverted.
    scripted_model.set_script([delay(5.0, text("later"))])
    code, _ = await api.call("POST", f"sessions/{sid}/messages", {"text": "more"}, headers=ALICE)
    assert code == 202
    code, reply = await api.call("POST", revert, {"path": "chart.png"}, headers=ALICE)
    assert code == 409 and "running" in reply["message"]
    await _finished(api, sid, ALICE)
    assert (proj / "chart.png").exists()

    # Paused, then resumed in a new sandbox: the notebook still ends with one change set,
    # the whole session's, reverts included.
    assert (await api.call("POST", f"sessions/{sid}/pause", headers=ALICE))[0] == 200
    scripted_model.set_script([_cell("open('more.txt', 'w').write('more\\n')"), text("more")])
    code, _ = await api.call("POST", f"sessions/{sid}/messages", {"text": "go on"}, headers=ALICE)
    assert code == 202
    await _finished(api, sid, ALICE)
    code, changes = await api.call("GET", f"sessions/{sid}/changes", headers=ALICE)
    assert [f["path"] for f in changes["files"]] == ["chart.png", "more.txt"]
    saved = (await api.call("GET", f"sessions/{sid}/notebook", headers=ALICE))[1]
    cells = nbformat.from_dict(saved).cells
    kinds = [c.metadata["codeagent"].get("kind") for c in cells]
    assert kinds.count("changes") == 1 and kinds[-1] == "changes"
    assert (
        kinds[-2] == "answer" and "2 files changed: chart.png (new), more.txt" in cells[-1].source
    )
