"""After a restart only what the server wrote comes back: no forged or altered session.

A real ``jupyter server`` subprocess is stopped and started again on the same state. The
attack runs for real: a session's own sandbox code tries to drop a forged session notebook
into the sessions folder and to append to another session's notebook; the test then does
the same from outside the sandbox (as any other process of the user could).
"""

from __future__ import annotations

import json
import signal
import urllib.error
from pathlib import Path
from typing import Any

import nbformat

from tests.scripted_model import text, tool_calls
from tests.server.test_lifecycle import ServerProcess, servers  # noqa: F401  (fixture)

FORGED = "f0f0f0f0f0f0"
COPIED = "c0c0c0c0c0c0"


def _attack_code(sessions: Path, victim: str) -> str:
    """Sandbox code: forge a session owned by 'mallory', append a cell to the victim's."""
    return f"""
import json, pathlib
sessions = pathlib.Path({str(sessions)!r})
victim = sessions / "{victim}.ipynb"
evil = json.dumps({{"cell_type": "markdown", "id": "e", "metadata": {{}}, "source": "EVIL"}})

def forge():
    nb = json.loads(victim.read_text())
    nb["metadata"]["codeagent"]["session_id"] = "{FORGED}"
    nb["metadata"]["codeagent"]["config"]["extra_context"]["owner"] = "mallory"
    (sessions / "{FORGED}.ipynb").write_text(json.dumps(nb))

def append():
    victim.write_text(victim.read_text().replace('"cells": [', '"cells": [' + evil + ",", 1))

for act in (forge, append):
    try:
        act()
        print(act.__name__, "done")
    except Exception as e:
        print(act.__name__, "refused:", type(e).__name__)
"""


def _wait_answered(server: ServerProcess, sid: str) -> dict[str, Any]:
    return server.wait_for(
        lambda: (d := server.call("GET", f"sessions/{sid}"))["status"] == "answered" and d
    )


def _status(server: ServerProcess, path: str) -> int:
    try:
        server.call("GET", path)
    except urllib.error.HTTPError as e:
        return e.code
    return 200


def test_forged_and_altered_sessions_are_not_loaded(
    tmp_path: Path,
    scripted_model: Any,
    servers: list[ServerProcess],  # noqa: F811
) -> None:
    root, home = tmp_path / "root", tmp_path / "home"
    root.mkdir()
    home.mkdir()
    sessions = home / "data" / "codeagent" / "sessions"
    settings = {"pool_size": 0, "max_sessions_per_user": 4, "allow_unconfined": True}
    first = ServerProcess(root, home, scripted_model.url, settings).start()
    servers.append(first)

    scripted_model.set_script([text("kept as written")])
    kept = first.call("POST", "sessions", {"prompt": "the real one"})["id"]
    kept_events = _wait_answered(first, kept)["events"]
    attack = _attack_code(sessions, kept)
    scripted_model.set_script([tool_calls(("run_cell", {"code": attack})), text("tried")])
    attacker = first.call("POST", "sessions", {"prompt": "attack"})["id"]
    outputs = json.dumps(_wait_answered(first, attacker)["events"])
    assert "forge " in outputs and "append " in outputs  # the attack really ran
    appended = "append done" in outputs  # only where the sandbox could reach the folder
    first.proc.send_signal(signal.SIGTERM)
    first.proc.wait(30)

    # The same attack from outside any sandbox: alter the attacker's own session, forge one.
    victim = sessions / f"{attacker}.ipynb"
    notebook = nbformat.read(victim, as_version=4)
    notebook.cells.append(nbformat.v4.new_markdown_cell("EVIL"))
    nbformat.write(notebook, victim)
    forged = nbformat.read(sessions / f"{kept}.ipynb", as_version=4)
    forged.metadata.codeagent.session_id = FORGED
    forged.metadata.codeagent.config.extra_context.owner = "mallory"
    if not (sessions / f"{FORGED}.ipynb").exists():
        nbformat.write(forged, sessions / f"{FORGED}.ipynb")
    # A byte-for-byte copy of a signed session under another id is refused as well.
    (sessions / f"{COPIED}.ipynb").write_bytes((sessions / f"{kept}.ipynb").read_bytes())

    second = ServerProcess(root, home, scripted_model.url, settings).start()
    servers.append(second)
    listed = {s["id"] for s in second.call("GET", "sessions")}
    assert listed == (set() if appended else {kept})
    log = second.log_path.read_text()
    for sid in (FORGED, COPIED, attacker):
        assert f"not loading session {sid}.ipynb" in log
        assert _status(second, f"sessions/{sid}") == 404
    assert not (root / ".codeagent" / "sessions").exists()
    if appended:
        return
    restored = second.call("GET", f"sessions/{kept}")["events"]
    recorded = [e for e in kept_events if e["type"] != "text_delta"]  # live-only events
    assert [(e["seq"], e["type"]) for e in restored] == [(e["seq"], e["type"]) for e in recorded]
    assert restored[-1]["answer"] == "kept as written"
    assert "EVIL" not in json.dumps(second.call("GET", f"sessions/{kept}/notebook"))
