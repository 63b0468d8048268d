"""``codeagent-sandbox`` is a conformant Jupyter kernel that a person can pick directly.

The protocol checks are ``jupyter_kernel_test``'s, with the samples its own ipykernel
tests use (the ``python3`` kernel passes them). The rest are what notebook runners and
people do with a kernel: pass ``extra_arguments``, fork a worker after kernels came and
went, read the kernel's console, run many cells, start many threads.

The kernel spec under test is this checkout's ``kernels/`` (put first on JUPYTER_PATH).
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import shutil
import struct
import subprocess
import sys
import tempfile
from dataclasses import fields
from pathlib import Path
from typing import Any

import jupyter_kernel_test as jkt
import pytest
from jupyter_client.manager import KernelManager, start_new_kernel

from codeagent_jupyter.config import SandboxLimits
from codeagent_jupyter.sandbox import Sandbox
from codeagent_jupyter.sandbox.cpu import EXCEEDED_NAME

ROOT = Path(__file__).resolve().parents[2]
SPEC_DIR = ROOT / "kernels" / "codeagent-sandbox"
KERNEL = "codeagent-sandbox"
_saved_jupyter_path = os.environ.get("JUPYTER_PATH")


def setUpModule() -> None:
    os.environ["JUPYTER_PATH"] = os.pathsep.join(filter(None, [str(ROOT), _saved_jupyter_path]))


def tearDownModule() -> None:
    if _saved_jupyter_path is None:
        os.environ.pop("JUPYTER_PATH", None)
    else:
        os.environ["JUPYTER_PATH"] = _saved_jupyter_path


class _InTempDir:
    """Start the class's kernel in a scratch folder: the workspace is the only writable place."""

    workdir: str

    @classmethod
    def _scratch(cls) -> str:
        cls.workdir = tempfile.mkdtemp(prefix="conformance-")
        return cls.workdir

    @classmethod
    def _cleanup(cls) -> None:
        shutil.rmtree(cls.workdir, ignore_errors=True)


class SandboxKernelTests(_InTempDir, jkt.KernelTests):
    kernel_name = KERNEL
    language_name = "python"
    file_extension = ".py"
    code_hello_world = "print('hello, world')"
    code_stderr = "import sys; print('test', file=sys.stderr)"
    completion_samples = [{"text": "zi", "matches": {"zip"}}]
    complete_code_samples = ["1", "print('hello, world')", "def f(x):\n  return x*2\n\n\n"]
    incomplete_code_samples = ["print('''hello", "def f(x):\n  x*2"]
    invalid_code_samples = ["import = 7q"]
    code_page_something = "zip?"
    code_generate_error = "raise"
    code_execute_result = [
        {"code": "1+2+3", "result": "6"},
        {"code": "[n*n for n in range(1, 4)]", "result": "[1, 4, 9]"},
    ]
    code_display_data = [
        {
            "code": "from IPython.display import HTML, display; display(HTML('<b>test</b>'))",
            "mime": "text/html",
        },
        {
            "code": "from IPython.display import Math, display; display(Math('\\frac{1}{2}'))",
            "mime": "text/latex",
        },
    ]
    code_history_pattern = "1?2*"
    supported_history_operations = ("tail", "search")  # python3 fails "range" too
    code_inspect_sample = "zip"
    code_clear_output = "from IPython.display import clear_output; clear_output()"

    @classmethod
    def setUpClass(cls) -> None:
        cls.km, cls.kc = start_new_kernel(kernel_name=cls.kernel_name, cwd=cls._scratch())

    @classmethod
    def tearDownClass(cls) -> None:
        super().tearDownClass()
        cls._cleanup()


class SandboxIopubWelcomeTests(_InTempDir, jkt.IopubWelcomeTests):
    kernel_name = KERNEL
    support_iopub_welcome = True

    @classmethod
    def setUpClass(cls) -> None:
        cls.km = KernelManager(kernel_name=cls.kernel_name)
        cls.km.start_kernel(cwd=cls._scratch())
        cls.kc = cls.km.client()

    @classmethod
    def tearDownClass(cls) -> None:
        super().tearDownClass()
        cls._cleanup()


def _startup_output(kc: Any) -> list[dict[str, Any]]:
    """The stream messages on iopub from the kernel's start until it answered kernel_info
    (``wait_for_ready`` would throw them away)."""
    msg_id = kc.kernel_info()
    streams = []
    for _ in range(1000):
        with contextlib.suppress(queue.Empty):
            msg = kc.get_iopub_msg(timeout=60)
            if msg["msg_type"] == "stream":
                streams.append(msg["content"])
            idle = msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle"
            if idle and msg["parent_header"].get("msg_id") == msg_id:
                return streams
    raise AssertionError("no kernel_info reply")


def _run(kc: Any, code: str) -> str:
    """Execute ``code`` and return its stdout; fail with the traceback if it raised."""
    out: list[str] = []
    reply = kc.execute_interactive(
        code, timeout=60, output_hook=lambda m: out.append(m["content"].get("text", ""))
    )
    content = reply["content"]
    assert content["status"] == "ok", "\n".join(content.get("traceback", []))
    return "".join(out)


def test_extra_arguments_no_banner_and_threads_with_default_limits(tmp_path: Path) -> None:
    """nbclient's ``--matplotlib=inline`` reaches ipykernel through both launcher stages;
    nothing but the kernel's own messages is printed; 100 threads start by default."""
    console = tmp_path / "console.txt"
    km = KernelManager(kernel_name=KERNEL)
    with console.open("w") as sink:
        km.start_kernel(
            extra_arguments=["--matplotlib=inline", "--IPKernelApp.exec_lines=forwarded = 42"],
            cwd=str(tmp_path),
            stdout=sink,
            stderr=sink,
        )
    kc = km.client()
    kc.start_channels()
    try:
        streams = _startup_output(kc)
        assert streams == []  # a fresh kernel says nothing (no debugger warning on stderr)
        kc.wait_for_ready(timeout=60)
        seen = _run(
            kc,
            "from ipykernel.kernelapp import IPKernelApp\n"
            "print(IPKernelApp.instance().matplotlib, forwarded)",
        )
        assert seen.split() == ["inline", "42"]
        code = (
            "import json, os, threading\n"
            "gate = threading.Event()\n"
            "workers = [threading.Thread(target=gate.wait) for _ in range(100)]\n"
            "for w in workers: w.start()\n"
            "alive = threading.active_count()\n"
            "gate.set()\n"
            "for w in workers: w.join()\n"
            "print(json.dumps({'alive': alive, 'omp': os.environ.get('OMP_NUM_THREADS')}))"
        )
        found = json.loads(_run(kc, code))
        assert found["alive"] > 100
        assert 1 <= int(found["omp"]) <= len(os.sched_getaffinity(0))
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    printed = console.read_text()
    assert "Ctrl-C will not work" not in printed and "--existing" not in printed, printed


_FORK_SCRIPT = """
import multiprocessing, sys, tempfile
from jupyter_client import KernelManager

def cycle(tag):
    km = KernelManager(kernel_name="codeagent-sandbox")
    km.start_kernel(cwd=tempfile.mkdtemp())
    km.shutdown_kernel(now=True)
    print(tag, "down", flush=True)

cycle("first")
cycle("second")
worker = multiprocessing.get_context("fork").Process(target=cycle, args=("forked",))
worker.start()
worker.join(60)
if worker.exitcode is None:  # hung: end it, or this script would wait for it at exit
    worker.kill()
    worker.join()
    sys.exit("the forked worker hung")
sys.exit(worker.exitcode)
"""


def test_worker_forked_after_kernels_shut_down_does_not_hang() -> None:
    """What multiprocessing notebook runners do: kernels in the parent, then more in a fork."""
    done = subprocess.run(
        [sys.executable, "-c", _FORK_SCRIPT],
        capture_output=True,
        text=True,
        timeout=120,
        env=os.environ.copy(),
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.split() == ["first", "down", "second", "down", "forked", "down"]


_BURN = "import time\nt0 = time.process_time()\nwhile time.process_time() - t0 < {s}: pass"


async def test_cpu_budget_is_per_cell_and_a_runaway_cell_gets_a_clear_error(
    tmp_path: Path,
) -> None:
    limits = SandboxLimits(cpu_seconds=2, cell_timeout=60)
    async with Sandbox(workdir=tmp_path, limits=limits) as sb:
        if sb.enforcement.get("cpu") != "rlimit":
            pytest.skip(f"no CPU rlimit here ({sb.enforcement.get('cpu')})")
        await sb.execute("kept = 'yes'")
        for _ in range(3):  # 3.6 CPU seconds in all, well past one budget
            r = await sb.execute(_BURN.format(s=1.2))
            assert r.status == "ok", (r.text, r.note)
        r = await sb.execute("try:\n    while True: pass\nexcept Exception:\n    pass")
        assert r.status == "error"
        assert EXCEEDED_NAME in r.text and "CPU budget of 2 CPU seconds" in r.text
        assert "CPU budget of 2 s" in r.note and "state kept" in r.note
        assert (await sb.execute("kept")).text == "'yes'"


def test_kernel_spec_says_what_it_is() -> None:
    """The launcher picker shows a person that this kernel is limited, with the real figures."""
    spec = json.loads((SPEC_DIR / "kernel.json").read_text())
    assert "no network" in spec["display_name"] and "limited" in spec["display_name"]
    described = spec["metadata"]["codeagent"]["limits"]
    defaults = SandboxLimits()
    enforced = [f.name for f in fields(SandboxLimits) if f.metadata["enforced_as"]]
    assert described == {name: getattr(defaults, name) for name in enforced}  # real field names
    for size in (32, 64):
        png = (SPEC_DIR / f"logo-{size}x{size}.png").read_bytes()
        assert png[:8] == b"\x89PNG\r\n\x1a\n"
        assert struct.unpack(">II", png[16:24]) == (size, size)
    assert "<svg" in (SPEC_DIR / "logo-svg.svg").read_text()
