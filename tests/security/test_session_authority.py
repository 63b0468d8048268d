"""A session notebook is data, never authority: ``codeagent resume`` and ``replay`` of an
edited notebook through the real CLI, real sandboxes and the scripted model.

Notebooks are shared files. The attacks are the ones a shared notebook can carry: recorded
limits that ask for the network, 64 GiB and a day per cell; a recorded workspace that names
someone else's folder. Resumed with no flags, the sandbox must get this command's limits (the
defaults) and this command's folder; and the CLI must say, first, that the notebook is not
one it wrote. ``--isolation none`` lets every CI lane start a sandbox (bubblewrap hidden
included); the network check needs a network namespace, which every lane has.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbformat.sign import NotebookNotary

from codeagent_jupyter.config import SandboxLimits
from tests.cli.test_cli import codeagent, one_line_error
from tests.scripted_model import text, tool_calls

GREEDY = {"network": True, "memory_mb": 65536, "cell_timeout": 86400}
SECRET = "VICTIM-SECRET-1f4e"
UNSIGNED = "is not signed by codeagent on this machine"


def _cell(code: str) -> dict[str, Any]:
    return tool_calls(("run_cell", {"code": code}))


def _env(tmp_path: Path) -> dict[str, str]:
    """The user's Jupyter data dir (where the CLI keeps its signing key): a temp folder."""
    return {"JUPYTER_DATA_DIR": str(tmp_path / "jupyter-data")}


def _model(scripted_model: Any) -> tuple[str, ...]:
    return ("--model", "m", "--base-url", scripted_model.url, "--isolation", "none")


def _record(scripted_model: Any, tmp_path: Path, ws: Path, code: str) -> Path:
    """A genuine one-cell session recorded by ``codeagent run`` in ``ws``."""
    scripted_model.set_script([_cell(code), text("done")])
    out = tmp_path / "shared.ipynb"
    result = codeagent(
        "run", "set up", *_model(scripted_model), "--workdir", str(ws), "--out", str(out),
        env=_env(tmp_path),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return out


def _edit(path: Path, **meta: Any) -> None:
    """What anyone holding the file can do: rewrite its metadata (and the run's event)."""
    nb = nbformat.read(path, as_version=4)
    codeagent_meta = nb.metadata.codeagent
    for key, value in meta.items():
        codeagent_meta[key] = value
    for event in codeagent_meta.events:
        if event.get("type") == "run_started":
            for key in set(meta) & {"workdir", "limits"}:
                event[key] = meta[key]
    nbformat.write(nb, path)


class Listener:
    """A TCP listener on the host's 127.0.0.1 that counts who reached it."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen()
        self.port = self.sock.getsockname()[1]
        self.reached = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.reached += 1
            conn.close()


@pytest.fixture
def listener() -> Iterator[Listener]:
    server = Listener()
    try:
        yield server
    finally:
        server.sock.close()


def _outputs(path: Path) -> str:
    nb = nbformat.read(path, as_version=4)
    return json.dumps([c.get("outputs", []) for c in nb.cells])


def test_edited_limits_do_not_widen_a_resume(
    scripted_model: Any, tmp_path: Path, listener: Listener
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    session = _record(scripted_model, tmp_path, ws, "x = 1")
    _edit(session, limits=GREEDY)

    probe = (
        "import socket\n"
        "try:\n"
        f"    socket.create_connection(('127.0.0.1', {listener.port}), timeout=3)\n"
        "    print('REACHED')\n"
        "except OSError as e:\n"
        "    print('REFUSED', type(e).__name__)\n"
    )
    scripted_model.set_script([_cell(probe), text("checked")])
    result = codeagent(
        "resume", str(session), "try the network", *_model(scripted_model),
        env=_env(tmp_path), cwd=ws,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    lines = result.stderr.splitlines()
    assert UNSIGNED in lines[0]  # said first: the notebook is not what the CLI wrote
    assert lines[1].startswith("sandbox: ")
    meta = nbformat.read(session, as_version=4).metadata.codeagent
    defaults = SandboxLimits()
    assert meta.limits["network"] is False
    assert meta.limits["memory_mb"] == defaults.memory_mb
    assert meta.limits["cell_timeout"] == defaults.cell_timeout
    assert "net off" in lines[1] and f"memory {defaults.memory_mb} MiB" in lines[1]
    assert "REACHED" not in _outputs(session) and "REFUSED" in _outputs(session)
    assert listener.reached == 0


def test_recorded_limits_may_only_tighten(scripted_model: Any, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    session = _record(scripted_model, tmp_path, ws, "x = 1")
    _edit(session, limits={"memory_mb": 700, "cell_timeout": 86400, "bogus": 1})
    scripted_model.set_script([text("ok")])
    args = ("resume", str(session), "go on", *_model(scripted_model), "--memory-mb", "900")
    result = codeagent(*args, "--network", "host", env=_env(tmp_path), cwd=ws)
    assert result.returncode == 0, result.stderr
    meta = nbformat.read(session, as_version=4).metadata.codeagent
    assert meta.limits["memory_mb"] == 700  # the recording asks for less: kept
    assert meta.limits["cell_timeout"] == SandboxLimits().cell_timeout  # for more: ignored
    assert meta.limits["network"] is True  # only because this command line says so


def test_a_recorded_workdir_never_picks_the_sandbox_folder(
    scripted_model: Any, tmp_path: Path
) -> None:
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "secret.txt").write_text(SECRET)
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "secret.txt").write_text("decoy")
    session = _record(scripted_model, tmp_path, mine, "print(open('secret.txt').read())")
    _edit(session, workdir=str(victim), snapshots=[])  # the victim's folder, nothing to restore
    elsewhere = tmp_path / "downloads"
    elsewhere.mkdir()
    before = len(scripted_model.requests)

    scripted_model.set_script([_cell("print(open('secret.txt').read())"), text("read")])
    refused = codeagent(
        "resume", str(session), "read it", *_model(scripted_model),
        env=_env(tmp_path), cwd=elsewhere,
    )  # fmt: skip
    assert refused.returncode == 2
    line = one_line_error(refused)
    assert str(victim) in line and "--workdir" in line
    assert len(scripted_model.requests) == before  # refused before any model call

    scripted_model.set_script([_cell("print(open('secret.txt').read())"), text("read")])
    here = codeagent(
        "resume", str(session), "read it", *_model(scripted_model), "--workdir", str(elsewhere),
        env=_env(tmp_path), cwd=elsewhere,
    )  # fmt: skip
    assert here.returncode == 0, here.stderr
    assert "FileNotFoundError" in _outputs(session)  # the new folder has no secret.txt
    sent = json.dumps(scripted_model.requests[before:])
    everything = sent + here.stdout + here.stderr + session.read_text()
    assert SECRET not in everything
    assert not (victim / ".codeagent").exists()  # no snapshot store, no notebook there
    assert (elsewhere / ".codeagent" / "snapshots").is_dir()  # the store of this folder


def test_cli_sessions_are_signed_and_old_ones_still_load(
    scripted_model: Any, tmp_path: Path
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    session = _record(scripted_model, tmp_path, ws, "x = 41")
    secret = tmp_path / "jupyter-data" / "codeagent" / "cli" / "signing_secret"
    assert secret.is_file() and secret.stat().st_mode & 0o077 == 0
    steal = f"print(open({str(secret)!r}, 'rb').read().hex())"
    scripted_model.set_script([_cell("print(x + 1)"), _cell(steal), text("42")])
    result = codeagent(
        "resume", str(session), "add one", *_model(scripted_model), env=_env(tmp_path), cwd=ws
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr.startswith("sandbox: ")  # signed: no warning
    assert "42" in _outputs(session)
    if "fs read-only" in result.stderr.splitlines()[0]:  # the sandbox cannot forge signatures
        assert secret.read_bytes().hex() not in _outputs(session)

    # Jupyter's own trust database is left alone: JupyterLab must not trust (and run) the
    # HTML and JavaScript that sandbox code printed into a session.
    data = tmp_path / "jupyter-data"
    jupyter = NotebookNotary(data_dir=str(data))
    assert not jupyter.check_signature(nbformat.read(session, as_version=4))

    scripted_model.set_script([text("again")])
    replayed = codeagent("replay", str(session), "--isolation", "none", env=_env(tmp_path), cwd=ws)
    assert replayed.returncode == 0, replayed.stderr
    assert replayed.stderr.startswith("sandbox: ")

    session.write_text(session.read_text().replace("x = 41", "x = 99"))  # altered
    for args in (("replay", str(session), "--isolation", "none"),):
        changed = codeagent(*args, env=_env(tmp_path), cwd=ws)
        assert UNSIGNED in changed.stderr.splitlines()[0]

    old = Path(__file__).resolve().parents[1] / "fixtures" / "session_before_event_bus.ipynb"
    copy = ws / "old.ipynb"
    copy.write_text(old.read_text())
    scripted_model.set_script([text("still loads")])
    loaded = codeagent(
        "replay", str(copy), "--model", "recorded", "--isolation", "none",
        env=_env(tmp_path), cwd=ws,
    )  # fmt: skip
    assert UNSIGNED in loaded.stderr.splitlines()[0]
    assert "Traceback" not in loaded.stderr


def test_the_projects_demo_is_not_warned_about_but_a_changed_copy_is(tmp_path: Path) -> None:
    """The README's first command opens on the sandbox's line, not on a warning about the
    project's own example; the demo's digest spares the warning and nothing else: a copy
    with one word changed (what anyone can ship under that name) is warned about first."""
    demo = Path(__file__).parents[2] / "examples" / "demo.ipynb"
    changed = tmp_path / "demo.ipynb"
    changed.write_text(demo.read_text(encoding="utf-8").replace("monthly", "Monthly", 1))
    for path, warned in ((demo, False), (changed, True)):
        work = tmp_path / f"work-{warned}"
        work.mkdir()
        result = codeagent(
            "replay", str(path), "--workdir", str(work), "--isolation", "none",
            env=_env(tmp_path),
        )  # fmt: skip
        assert result.returncode == 0, result.stdout + result.stderr
        first = result.stderr.splitlines()[0]
        assert (UNSIGNED in first) is warned, first
        assert result.stderr.splitlines()[int(warned)].startswith("sandbox: ")
