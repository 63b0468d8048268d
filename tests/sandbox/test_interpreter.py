"""Inside the sandbox ``python``, ``python3`` and ``pip`` are the kernel's own interpreter,
even from a virtual environment nobody activated; and pyarrow allocates from the system.

The venv is real (``python -m venv``), holds only ``python3`` (its ``python`` removed), and
reaches this checkout's packages through a ``.pth`` file; ``codeagent run`` is started with
its interpreter and a ``PATH`` that does not contain it, as a server started by its full
path would be.
"""

from __future__ import annotations

import os
import site
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

import codeagent_jupyter
from tests.scripted_model import text, tool_calls

SHARE = Path(sys.prefix) / "share" / "jupyter"
CHECKOUT = Path(codeagent_jupyter.__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("env") / "kernel-env"
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", "--without-pip", str(root)], check=True, timeout=120)
    (root / "bin" / "python").unlink()  # a venv with only python3: still gets `python`
    purelib = Path(sysconfig.get_path("purelib", vars={"base": str(root)}))
    ours = [p for p in site.getsitepackages() if Path(p).is_dir()]
    lines = [f"import site; site.addsitedir({p!r})" for p in ours]
    lines.append(f"import sys; sys.path.insert(0, {str(CHECKOUT)!r})")  # this checkout first
    (purelib / "checkout.pth").write_text("\n".join(lines) + "\n")
    return root


def run_in_venv(venv: Path, server, workdir: Path, out: Path) -> subprocess.CompletedProcess:
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("VIRTUAL_ENV", "PYTHONHOME", "PYTHONPATH")
    }
    env |= {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "OPENAI_API_KEY": "test-key",
        "JUPYTER_PATH": str(SHARE),  # the kernel spec installed with the package
    }
    command = [str(venv / "bin" / "python3"), "-m", "codeagent_jupyter.cli", "run", "go"]
    command += ["--model", "m", "--base-url", server.url, "--workdir", str(workdir)]
    command += ["--out", str(out)]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=180)


def test_run_command_python_is_the_kernels_unactivated_venv(scripted_model, venv, tmp_path):
    probe = "import sys; print(sys.prefix)"
    scripted_model.set_script(
        [
            tool_calls(("run_command", {"command": f'python -c "{probe}"'})),
            tool_calls(("run_command", {"command": f'python3 -c "{probe}"'})),
            tool_calls(("run_command", {"command": 'pip --version; cat "$(command -v pip)"'})),
            tool_calls(("run_cell", {"code": f'!python -c "{probe}"'})),
            tool_calls(
                (
                    "run_cell",
                    {"code": f"import subprocess\nsubprocess.run(['python', '-c', {probe!r}])"},
                )
            ),
            text("done"),
        ]
    )
    workdir = tmp_path / "ws"
    workdir.mkdir()
    result = run_in_venv(venv, scripted_model, workdir, tmp_path / "s.ipynb")
    assert result.returncode == 0, result.stderr
    results = [
        str(r["messages"][-1]["content"]) for r in scripted_model.requests[1:]
    ]  # each request ends with the previous step's tool result
    for shown in (results[0], results[1], results[3]):
        assert shown.splitlines()[0] == str(venv), shown
    assert f"exec '{venv}/bin/python3' -m pip" in results[2], results[2]  # its interpreter
    # The child's stdout and the cell's result come on separate streams: either may be first.
    assert str(venv) in results[4].splitlines(), results[4]


def test_pyarrow_uses_the_system_allocator(scripted_model, tmp_path):
    pytest.importorskip("pyarrow")
    code = (
        "import os, pyarrow as pa, pyarrow.compute as pc\n"
        "pool = pa.default_memory_pool().backend_name\n"
        "print(os.environ.get('ARROW_DEFAULT_MEMORY_POOL'), pool)\n"
        "print(pc.utf8_upper(pa.array(['zürich'] * 1000))[0])"  # a string op, under 768 MiB
    )
    scripted_model.set_script([tool_calls(("run_cell", {"code": code})), text("done")])
    env = {**os.environ, "OPENAI_API_KEY": "test-key"}
    workdir = tmp_path / "ws"
    workdir.mkdir()
    command = [sys.executable, "-m", "codeagent_jupyter.cli", "run", "go", "--model", "m"]
    command += ["--base-url", scripted_model.url, "--workdir", str(workdir)]
    command += ["--out", str(tmp_path / "s.ipynb"), "--memory-mb", "768"]
    result = subprocess.run(command, capture_output=True, text=True, env=env, timeout=180)
    assert result.returncode == 0, result.stderr
    shown = str(scripted_model.requests[1]["messages"][-1]["content"])
    assert shown.startswith("system system\nZÜRICH\n"), shown
