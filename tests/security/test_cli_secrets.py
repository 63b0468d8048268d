"""The CLI holds the API key; an unconfined sandbox of the same user must not read it.

The attack is real: the sandbox runs without pid or filesystem isolation (no bubblewrap
on PATH, ``--isolation none``) as the same uid as the CLI, and its cell walks up its
parent processes reading each ``/proc/<pid>/environ``. The CLI clears its dumpable flag,
so the kernel refuses that read for the CLI's process; the key must appear nowhere.
As root every ``/proc`` file is readable anyway, so there the CLI runs as ``nobody``.
"""

from __future__ import annotations

import os
import shutil
import site
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from codeagent_jupyter.sandbox.bubblewrap import BWRAP_ENV
from tests.scripted_model import ScriptedModelServer, text, tool_calls

KEY = "sk-cli-secret-0123456789abcdefghij"
REPO = Path(__file__).resolve().parents[2]
NOBODY = 65534

ATTACK = """
import os
def parent(pid):
    return int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[1])
pid = parent(os.getpid())
while pid > 1:
    try:
        cmd = open(f"/proc/{pid}/cmdline", "rb").read().replace(b"\\0", b" ")[:60].decode()
        env = open(f"/proc/{pid}/environ", "rb").read().decode(errors="replace")
        print(pid, "READ", cmd, env)
    except OSError as e:
        print(pid, "DENIED", cmd, type(e).__name__)
    pid = parent(pid)
"""


def _runnable_as_nobody() -> tuple[list[str], str, dict[str, str]] | None:
    """How to run the CLI as ``nobody``: the setpriv prefix, an interpreter that user may
    execute (this one may live in a private home), and the paths that find our packages."""
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        return None
    prefix = [setpriv, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
    paths = {
        "PYTHONPATH": os.pathsep.join([str(REPO), *site.getsitepackages()]),
        "JUPYTER_PATH": str(Path(sys.prefix) / "share" / "jupyter"),  # the sandbox kernel spec
    }
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    probe = [*prefix, "/usr/bin/env", "-i", *(f"{k}={v}" for k, v in paths.items())]
    check = "import codeagent_jupyter.cli, jupyter_client, zmq"
    for python in (sys.executable, shutil.which(version), f"/usr/bin/{version}"):
        if not python or not os.path.exists(python):
            continue
        if subprocess.run([*probe, python, "-c", check], capture_output=True).returncode == 0:
            return prefix, python, paths
    return None


@pytest.fixture
def home() -> Iterator[Path]:
    """A home the CLI's user can write (pytest's tmp dirs are private to root)."""
    path = Path(tempfile.mkdtemp(prefix="codeagent-cli-"))
    try:
        (path / "bin").mkdir()  # nothing in it: no bwrap, no unshare
        (path / "work").mkdir()
        if os.geteuid() == 0:
            for item in [path, *path.rglob("*")]:
                os.lchown(item, NOBODY, NOBODY)
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def test_unconfined_sandbox_cannot_read_the_cli_key(home: Path) -> None:
    script = [tool_calls(("run_cell", {"code": ATTACK})), text("looked around")]
    out = home / "work" / "s.ipynb"
    prefix: list[str] = []
    python, paths = sys.executable, {"PYTHONPATH": str(REPO)}
    if os.geteuid() == 0:  # root reads every /proc file: the attack needs an ordinary uid
        found = _runnable_as_nobody()
        if found is None:
            pytest.skip("no way to run the CLI as an ordinary user here")
        prefix, python, paths = found
    with ScriptedModelServer(script) as model:
        options = ["--model", "m", "--base-url", model.url, "--workdir", str(home / "work")]
        options += ["--out", str(out), "--isolation", "none"]
        env = {
            **paths,
            "PATH": str(home / "bin"),
            BWRAP_ENV: "system",  # unconfined: not even the bundled bwrap
            "HOME": str(home),
            "OPENAI_API_KEY": KEY,
            "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
        }
        proc = subprocess.Popen(
            [*prefix, python, "-m", "codeagent_jupyter.cli", "run", "find the key", *options],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 0, stderr
    lines = stderr.splitlines()
    assert lines[0].startswith("sandbox: none"), lines[0]
    assert "NOT enforced" in lines[0] and "filesystem" in lines[0]
    assert lines[1].startswith("WARNING: the sandbox is UNCONFINED")
    notebook = out.read_text()
    assert f"{proc.pid} DENIED" in notebook, "the cell did not reach the CLI's process"
    for where in (stdout, stderr, notebook):
        assert KEY not in where
