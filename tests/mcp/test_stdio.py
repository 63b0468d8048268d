"""``codeagent mcp`` as an MCP host runs it: the official SDK's client starts the real
command over stdio and calls the sandbox's tools."""

from __future__ import annotations

import base64
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest

mcp = pytest.importorskip("mcp", reason="the mcp extra is not installed")
from mcp import Client, StdioServerParameters  # noqa: E402
from mcp.types import Implementation  # noqa: E402

SANDBOX_TOOLS = {"run_cell", "run_command", "read_file", "write_file", "list_files", "search_files"}


def params(workdir: Path, out: Path, *extra: str) -> StdioServerParameters:
    """The command a host such as Claude Code would start (not in the workspace)."""
    args = ["-m", "codeagent_jupyter.cli", "mcp", "--workdir", str(workdir), "--out", str(out)]
    return StdioServerParameters(
        command=sys.executable, args=[*args, "--memory-mb", "1024", *extra], env=dict(os.environ)
    )


def client(workdir: Path, out: Path, name: str = "test-agent") -> Client:
    info = Implementation(name=name, version="1.2")
    return Client(params(workdir, out), client_info=info, read_timeout_seconds=120)


def text_of(result) -> str:
    return "\n".join(c.text for c in result.content if c.type == "text")


def value_of(result) -> str:
    """A cell's output without the ``[ran 0.01 s]`` line every cell result ends with."""
    body, ran, _ = text_of(result).rpartition("\n[ran ")
    assert ran, text_of(result)
    return body.strip()


def kernel_pids(workdir: Path) -> set[int]:
    """Processes working in ``workdir``: the sandbox kernel (the server runs elsewhere)."""
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if os.readlink(entry / "cwd") == str(workdir):
                found.add(int(entry.name))
        except OSError:
            continue
    return found


def wait_until(check, timeout: float = 60.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.2)
    return check()


async def test_tools_state_errors_images_limits_network_and_recording(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    out = tmp_path / "session.ipynb"
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    port = listener.getsockname()[1]
    async with client(work, out) as c:
        assert c.instructions is not None and "sandbox:" in c.instructions
        assert "net off" in c.instructions  # the isolation in force, as the CLI says it
        names = {t.name for t in (await c.list_tools()).tools}
        assert names >= SANDBOX_TOOLS
        assert not names & {"update_plan", "edit_cell", "delegate"}

        first = await c.call_tool("run_cell", {"code": "x = 41\nprint('set')"})
        assert not first.is_error and "set" in text_of(first)
        kept = await c.call_tool("run_cell", {"code": "x + 1"})
        assert value_of(kept) == "42"  # state kept across calls

        failed = await c.call_tool("run_cell", {"code": "def f():\n    return 1 / 0\n\nf()"})
        assert failed.is_error
        assert "ZeroDivisionError" in text_of(failed) and "in f" in text_of(failed)
        assert "\x1b[" not in text_of(failed)  # the traceback as a model reads it

        plot = "import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nplt.show()"
        shown = await c.call_tool("run_cell", {"code": plot})
        images = [b for b in shown.content if b.type == "image"]
        assert not shown.is_error and len(images) == 1
        assert images[0].mime_type == "image/png"
        assert base64.b64decode(images[0].data).startswith(b"\x89PNG")

        bomb = await c.call_tool("run_cell", {"code": "b = bytearray(8 * 1024**3)"})
        assert bomb.is_error and "MemoryError" in text_of(bomb)
        alive = await c.call_tool("run_cell", {"code": "x"})
        assert value_of(alive) == "41"  # the kernel survived, state and all

        probe = (
            "import socket\ntry:\n"
            f"    socket.create_connection(('127.0.0.1', {port}), timeout=5)\n"
            "    print('reached')\nexcept OSError as e:\n    print('blocked', type(e).__name__)"
        )
        net = await c.call_tool("run_cell", {"code": probe})
        assert "blocked" in text_of(net) and "reached" not in text_of(net)

        wrote = await c.call_tool("write_file", {"path": "notes.txt", "content": "hello\n"})
        assert not wrote.is_error
        read = await c.call_tool("read_file", {"path": "notes.txt"})
        assert "hello" in text_of(read)
        outside = await c.call_tool("read_file", {"path": "../session.ipynb"})
        assert outside.is_error  # the file tools stay in the workspace
        cmd = await c.call_tool("run_command", {"command": "ls"})
        assert "notes.txt" in text_of(cmd)
        bad = await c.call_tool("read_file", {"path": 3})
        assert bad.is_error and "must be a string" in text_of(bad)
    listener.close()

    nb = nbformat.read(out, as_version=4)
    nbformat.validate(nb)
    meta = nb.metadata["codeagent"]
    assert "test-agent 1.2" in meta["model"]
    assert meta["enforcement"] and meta["limits"]["memory_mb"] == 1024
    assert meta["status"] == "answered"
    sources = [c.source for c in nb.cells if c.cell_type == "code"]
    assert sources[:2] == ["x = 41\nprint('set')", "x + 1"]
    assert "%%writefile notes.txt\nhello\n" in sources
    assert any(c.source.startswith("!ls") for c in nb.cells if c.cell_type == "code")
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert any(o.get("ename") == "ZeroDivisionError" for o in errors)
    assert any("image/png" in o.get("data", {}) for o in errors)

    again = tmp_path / "again"
    again.mkdir()
    replay = subprocess.run(
        [sys.executable, "-m", "codeagent_jupyter.cli", "replay", str(out), "--workdir",
         str(again), "--model", "recorded", "--out", str(tmp_path / "replayed.ipynb")],
        capture_output=True, text=True, timeout=300, env={**os.environ, "NO_COLOR": "1"},
    )  # fmt: skip
    assert replay.returncode == 0, replay.stderr
    assert "MCP session of test-agent 1.2 ended" in replay.stdout
    replayed = nbformat.read(tmp_path / "replayed.ipynb", as_version=4)
    assert [c.source for c in replayed.cells if c.cell_type == "code"][:2] == sources[:2]


async def test_each_client_has_its_own_sandbox_shut_down_when_it_leaves(tmp_path):
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir()
    two.mkdir()
    async with client(one, tmp_path / "1.ipynb", "a") as a, client(two, tmp_path / "2.ipynb") as b:
        await a.call_tool("run_cell", {"code": "secret = 'only in a'"})
        seen = await b.call_tool("run_cell", {"code": "print(secret)"})
        assert seen.is_error and "NameError" in text_of(seen)
        assert kernel_pids(one) and kernel_pids(two)
        assert kernel_pids(one).isdisjoint(kernel_pids(two))
    assert wait_until(lambda: not kernel_pids(one) and not kernel_pids(two))
    meta = nbformat.read(tmp_path / "1.ipynb", as_version=4).metadata["codeagent"]
    assert meta["runs"][0]["reason"] == "the MCP client left"


def test_bad_flags_are_one_line(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "codeagent_jupyter.cli", "mcp", "--workdir", str(tmp_path / "no")],
        capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0 and "not a directory" in result.stderr
    assert json.dumps(result.stdout) == '""'  # nothing on the protocol's stream


async def test_allow_install_offers_install_packages_and_the_next_cell_imports_it(tmp_path):
    """``codeagent mcp --allow-install``: the outside agent installs under the same policy
    as ours (wheels from the named folder only, fetched outside the sandbox)."""
    from tests.packages.index import make_wheel

    work, wheels = tmp_path / "work", tmp_path / "wheels"
    work.mkdir()
    make_wheel(wheels, "tinydep", "1.0")
    server = params(work, tmp_path / "s.ipynb", "--allow-install", "--find-links", str(wheels))
    server.env = {**(server.env or {}), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    info = Implementation(name="test-agent", version="1.2")
    async with Client(server, client_info=info, read_timeout_seconds=300) as c:
        names = {t.name for t in (await c.list_tools()).tools}
        assert "install_packages" in names
        missing = await c.call_tool("run_cell", {"code": "import tinydep"})
        assert missing.is_error and "ModuleNotFoundError" in text_of(missing)
        request = {"packages": ["tinydep"], "reason": "the analysis needs it"}
        done = await c.call_tool("install_packages", request)
        assert not done.is_error, text_of(done)
        check = "import tinydep\nprint(tinydep.__version__)"
        after = await c.call_tool("run_cell", {"code": check})
        assert not after.is_error and value_of(after) == "1.0"
    async with client(work, tmp_path / "plain.ipynb") as c:  # without the flag: not offered
        assert "install_packages" not in {t.name for t in (await c.list_tools()).tools}


def test_install_flags_without_allow_install_are_one_line(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "codeagent_jupyter.cli", "mcp", "--workdir", str(tmp_path),
         "--index-url", "https://example.invalid/simple"],
        capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0 and "--allow-install" in result.stderr


def pipes_of(pid: int) -> set[str]:
    """The pipes ``pid`` holds open (``pipe:[inode]``)."""
    found = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("pipe:"):
            found.add(target)
    return found


async def test_the_kernel_started_before_the_transport_holds_no_end_of_the_wire(tmp_path):
    """The sandbox starts before the MCP SDK is imported: the protocol's stdin and stdout
    must be off fds 0 and 1 by then. Sandbox code writes to every standard descriptor and
    the session goes on; no sandbox process shares a pipe with the client (the wire)."""
    work = tmp_path / "ws"
    work.mkdir()
    async with client(work, tmp_path / "s.ipynb") as c:
        attack = (
            "import os\n"
            "for fd in (0, 1, 2):\n"
            "    try:\n"
            '        os.write(fd, b\'{"jsonrpc": "2.0", "id": 1, "result": {}}\\n\')\n'
            "    except OSError as e:\n"
            "        print(fd, e.errno)\n"
            "print('wrote')"
        )
        wrote = await c.call_tool("run_cell", {"code": attack})
        assert "wrote" in text_of(wrote)
        after = await c.call_tool("run_cell", {"code": "6 * 7"})
        assert value_of(after) == "42"
        kernels = kernel_pids(work)
        assert kernels
        ours = pipes_of(os.getpid())
        assert ours  # the client's ends of the wire
        for pid in kernels:
            assert not pipes_of(pid) & ours, f"sandbox process {pid} holds the wire"
