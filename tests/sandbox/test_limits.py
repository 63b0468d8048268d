"""One adversarial cell per limit, on one shared sandbox that each test leaves usable."""

from __future__ import annotations

import asyncio
import os
import time

import pytest
from jupyter_core.paths import jupyter_runtime_dir

from codeagent_jupyter.config import SandboxLimits
from codeagent_jupyter.core.ports import SandboxPort
from codeagent_jupyter.sandbox import Sandbox, cgroup
from codeagent_jupyter.sandbox.launcher import cgroup_memory_bytes

from .conftest import SECRETS, SMALL, needs

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def test_runs_code_keeps_state_and_reports_errors(sandbox: Sandbox) -> None:
    assert isinstance(sandbox, SandboxPort)
    r = await sandbox.execute("x = 41\nprint('hello')\nx + 1")
    assert r.status == "ok", r.text
    assert r.text == "hello\n42"
    assert [o["output_type"] for o in r.outputs] == ["stream", "execute_result"]
    r = await sandbox.execute("1/0")
    assert r.status == "error" and "ZeroDivisionError" in r.text
    assert (await sandbox.execute("x")).text == "41"


async def test_live_outputs_arrive_through_callback(sandbox: Sandbox) -> None:
    seen: list[dict] = []
    r = await sandbox.execute("print('a', flush=True); print('b')", on_output=seen.append)
    assert r.status == "ok"
    assert "".join(o["text"] for o in seen) == "a\nb\n"


async def test_infinite_loop_is_interrupted_state_and_partial_output_kept(
    sandbox: Sandbox,
) -> None:
    await sandbox.execute("kept = 'yes'")
    r = await sandbox.execute("print('before', flush=True)\nwhile True: pass")
    assert r.status == "timeout"
    assert "interrupted after 3 s" in r.note and "state kept" in r.note
    assert r.text.startswith("before")
    assert SMALL.cell_timeout <= r.duration_s < SMALL.cell_timeout + 2
    assert (await sandbox.execute("kept")).text == "'yes'"


async def test_memory_bomb_raises_memory_error_kernel_survives(sandbox: Sandbox) -> None:
    needs(sandbox, "memory")
    r = await sandbox.execute("hog = []\nwhile True: hog.append(bytearray(50_000_000))")
    assert r.status == "error" and "MemoryError" in r.text
    r = await sandbox.execute("del hog\nb = bytearray(2 << 30)")
    assert r.status == "error" and "MemoryError" in r.text
    assert (await sandbox.execute("print('alive')")).text == "alive"


async def test_huge_print_is_bounded(sandbox: Sandbox) -> None:
    r = await sandbox.execute("print('x' * 5_000_000)\nprint('the end')")
    assert r.status == "ok"
    recorded = sum(len(o.get("text", "")) for o in r.outputs)
    assert recorded < SMALL.output_bytes * 1.1 + 500  # the budget, plus the kept tail
    assert "output truncated" in r.outputs[-2]["text"]
    assert r.outputs[-1]["text"].endswith("x\nthe end\n")  # the end of the output survives
    # The text is the kept outputs' one rendering (the marker included); the model's bound
    # is the tool's (result_chars, see tests/tools/test_kernel_tools.py).
    assert "output truncated" in r.text and r.text.endswith("the end")
    assert len(r.text) < SMALL.output_bytes * 1.1 + 1000


async def test_input_fails_fast(sandbox: Sandbox) -> None:
    r = await sandbox.execute("input('name? ')")
    assert r.status == "error" and "StdinNotImplementedError" in r.text
    assert r.duration_s < 2


async def test_env_has_no_secrets_and_parent_environ_unreadable(sandbox: Sandbox) -> None:
    code = (
        "import os\n"
        "print(sorted(os.environ.items()))\n"
        "for pid in ('self', '1', str(os.getppid())):\n"
        "    try:\n"
        "        print(open(f'/proc/{pid}/environ', 'rb').read())\n"
        "    except PermissionError:  # a fork's pid 1: a user namespace of its own\n"
        "        print(pid, 'unreadable')"
    )
    r = await sandbox.execute(code)
    assert r.status == "ok" and "PATH" in r.text
    for name, value in SECRETS.items():
        assert name not in r.text and value not in r.text
    code = (
        "try:\n"
        f"    data = open('/proc/{os.getpid()}/environ', 'rb').read().decode(errors='replace')\n"
        "except OSError as e:\n"
        "    data = f'unreadable: {e}'\n"
        "print(data)"
    )
    r = await sandbox.execute(code)
    if sandbox.enforcement["pid"] == "none":
        pytest.skip("no PID namespace here: the server's /proc/<pid>/environ is readable")
    assert all(value not in r.text for value in SECRETS.values()), r.text


async def test_socket_to_local_listener_is_blocked(sandbox: Sandbox) -> None:
    needs(sandbox, "network")
    connections = 0

    def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal connections
        connections += 1
        writer.close()

    server = await asyncio.start_server(on_connect, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        _, writer = await asyncio.open_connection("127.0.0.1", port)  # the listener works
        writer.close()
        await asyncio.sleep(0.1)
        assert connections == 1
        code = f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=2)"
        r = await sandbox.execute(code)
        await asyncio.sleep(0.1)
    finally:
        server.close()
    assert r.status == "error" and ("OSError" in r.text or "Error" in r.text)
    assert connections == 1


async def test_huge_file_is_cut_by_file_size_limit(sandbox: Sandbox) -> None:
    needs(sandbox, "file_size")
    code = "with open('big.bin', 'wb') as f:\n    f.write(b'0' * (20 << 20))"
    r = await sandbox.execute(code)
    assert r.status == "error" and "File too large" in r.text
    size = (sandbox.workdir / "big.bin").stat().st_size
    assert size <= SMALL.file_size_mb << 20
    (sandbox.workdir / "big.bin").unlink()


async def test_filesystem_read_only_outside_workspace(sandbox: Sandbox) -> None:
    needs(sandbox, "filesystem")
    r = await sandbox.execute("open('note.txt', 'w').write('hi')")
    assert r.status == "ok" and (sandbox.workdir / "note.txt").read_text() == "hi"
    import sys

    target = os.path.join(sys.prefix, "codeagent-sandbox-escape.txt")
    r = await sandbox.execute(f"open({target!r}, 'w').write('x')")
    assert r.status == "error" and "Read-only file system" in r.text
    assert not os.path.exists(target)
    runtime = jupyter_runtime_dir()
    r = await sandbox.execute(  # nothing of the host's runtime folder but the kernel's own
        "import os\nfrom ipykernel import get_connection_file\n"
        "own = os.path.dirname(get_connection_file())\n"
        f"print(sorted(os.path.join(d, f) for d, _, fs in os.walk({runtime!r}) for f in fs\n"
        "             if not os.path.join(d, f).startswith(own + os.sep)))"
    )
    assert r.text == "[]"


async def test_matplotlib_plots_come_back_as_png(sandbox: Sandbox) -> None:
    code = "import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nplt.show()"
    start = time.monotonic()
    r = await sandbox.execute(code, timeout=30)  # a first matplotlib import is slow
    assert r.status == "ok", r.text
    assert any("image/png" in o.get("data", {}) for o in r.outputs)
    assert r.text.startswith("[image/png ")
    assert time.monotonic() - start < 30


async def test_run_command_captures_output_and_exit_code(sandbox: Sandbox) -> None:
    before = (await sandbox.execute("1")).execution_count
    r = await sandbox.run_command("echo out; echo err >&2; pwd")
    assert r.status == "ok", r.text
    assert r.text.splitlines() == ["out", "err", str(sandbox.workdir)]
    r = await sandbox.run_command("exit 3")
    assert r.status == "error" and r.note == "exit code 3"
    r = await sandbox.run_command("sleep 30")
    assert r.status == "timeout" and "state kept" in r.note
    assert (await sandbox.execute("1")).execution_count == before + 1


async def test_enforcement_claims_match_behaviour(sandbox: Sandbox) -> None:
    claims = sandbox.enforcement
    expected = {*SandboxLimits.enforced_keys(), "network", "filesystem", "pid"}
    assert {"memory", "cpu", "file_size", "processes"} <= expected  # the declarations say so
    assert expected | {"env", "cell_timeout", "output_bytes", "stdin"} <= set(claims)
    code = (
        "import json, os, resource\n"
        "print(json.dumps({\n"
        "    'data': resource.getrlimit(resource.RLIMIT_DATA)[0],\n"
        "    'cpu': resource.getrlimit(resource.RLIMIT_CPU)[0],\n"
        "    'cpu_used': sum(resource.getrusage(resource.RUSAGE_SELF)[:2]),\n"
        "    'fsize': resource.getrlimit(resource.RLIMIT_FSIZE)[0],\n"
        "    'pid': os.getpid(),\n"
        "    'root_ro': bool(os.statvfs('/').f_flag & os.ST_RDONLY),\n"
        "    'cgroup': open('/proc/self/cgroup').read(),\n"
        "    'netdevs': sorted(line.split(':')[0].strip()\n"
        "                      for line in open('/proc/net/dev').read().splitlines()[2:]),\n"
        "}))"
    )
    r = await sandbox.execute(code)
    import json

    seen = json.loads(r.text)
    if claims["memory"].startswith("rlimit"):
        assert seen["data"] == SMALL.memory_mb << 20
    # The kernel sees its cgroup through a cgroup namespace; look from the host side.
    groups = cgroup.group_dirs(str(sandbox.kernel_id))
    if claims["memory"].endswith("cgroup"):
        group = groups["memory"]
        names = ("memory.limit_in_bytes", "memory.max")
        limit_file = next(group / name for name in names if (group / name).exists())
        assert int(limit_file.read_text()) == cgroup_memory_bytes(SMALL)
    if claims["cpu"] == "rlimit":
        # per cell: the soft limit is the CPU time used before the cell plus the budget
        assert 0 <= seen["cpu"] - SMALL.cpu_seconds - seen["cpu_used"] < 1
    if claims["file_size"] == "rlimit":
        assert seen["fsize"] == SMALL.file_size_mb << 20
    if claims["pid"] != "none":
        assert seen["pid"] < 10  # a fresh PID namespace
    if claims["filesystem"] != "none":
        assert seen["root_ro"]
    if claims["processes"] == "cgroup":
        assert int((groups["pids"] / "pids.max").read_text()) == SMALL.max_processes
    if claims["network"] in ("bwrap", "unshare"):
        assert seen["netdevs"] in ([], ["lo"])


async def test_interrupt_and_cancel_leave_the_kernel_usable(sandbox: Sandbox) -> None:
    task = asyncio.create_task(sandbox.execute("import time\nwhile True: time.sleep(0.01)"))
    await asyncio.sleep(0.5)
    await sandbox.interrupt()
    r = await task
    assert r.status == "error" and "KeyboardInterrupt" in r.text and r.duration_s < 2
    task = asyncio.create_task(sandbox.execute("while True: pass"))
    await asyncio.sleep(0.5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    r = await sandbox.execute("1 + 1")
    assert r.text == "2" and r.duration_s < 1.5
