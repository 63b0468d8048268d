"""Attacks by model-written code on the sandbox boundary, each run for real in a real kernel."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from textwrap import dedent
from typing import Any

import pytest
import pytest_asyncio
from jupyter_client import AsyncKernelManager

from codeagent_jupyter import events as ev
from codeagent_jupyter.config import AgentConfig
from codeagent_jupyter.core.loop import AgentLoop
from codeagent_jupyter.errors import ConfigError, SandboxError
from codeagent_jupyter.models.openai_chat import OpenAIChatModel
from codeagent_jupyter.sandbox import Sandbox, SandboxLimits, bubblewrap
from codeagent_jupyter.sandbox.bubblewrap import BWRAP_ENV
from codeagent_jupyter.sandbox.zygote_host import Zygote, ZygoteUnavailable
from codeagent_jupyter.sandbox.zygote_manager import manager_class
from codeagent_jupyter.tools import ToolBox
from tests.scripted_model import text, tool_calls
from tests.zygotes import lane_start

REPO = Path(__file__).resolve().parents[2]
SMALL = SandboxLimits(memory_mb=512, cell_timeout=10, file_size_mb=8, max_processes=32)
PLANTED = {
    ".netrc": "machine example.com password hunter2-netrc",
    ".ssh/id_rsa": "-----BEGIN hunter2-ssh-key-----",
    ".aws/credentials": "aws_secret_access_key = hunter2-aws",
    ".config/other-tool/token": "hunter2-other-tool",
}
STARTUP = ".ipython/profile_default/startup"
SLEEP = shutil.which("sleep") or "/bin/sleep"


def _bwrap_or_skip() -> None:
    if bubblewrap.find() is None:
        pytest.skip("bubblewrap is not installed")


@pytest.fixture(scope="module")
def home() -> Iterator[Path]:
    """A fake home for the server side, with secrets planted where tools keep them."""
    root = Path(tempfile.mkdtemp(prefix="codeagent-home-"))
    for name, content in PLANTED.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(content)
    (root / STARTUP).mkdir(parents=True)
    project = root / "project"
    (project / ".codeagent" / "sessions").mkdir(parents=True)
    (project / ".codeagent" / "sessions" / "x.ipynb").write_text('{"real": true}')
    saved = os.environ.get("HOME")
    os.environ["HOME"] = str(root)
    try:
        yield root
    finally:
        os.environ["HOME"] = saved or ""
        shutil.rmtree(root, ignore_errors=True)


@pytest_asyncio.fixture(scope="module", loop_scope="module", params=["cold", "zygote"])
async def confined(home: Path, request: pytest.FixtureRequest) -> AsyncIterator[Sandbox]:
    """The sandbox under attack: a cold start, or a fork of a zygote serving the home."""
    _bwrap_or_skip()
    zygote = Zygote(home) if request.param == "zygote" else None
    manager: dict[str, Any] = {}
    if zygote is not None:
        try:
            zygote.start()
        except ZygoteUnavailable as e:  # refused in one line: nothing to test
            pytest.skip(str(e))
        manager["kernel_manager_class"] = manager_class(zygote)
    try:
        async with Sandbox(workdir=home / "project", limits=SMALL, **manager) as sb:
            assert sb.enforcement["filesystem"] == "bwrap", sb.enforcement
            assert sb.enforcement.get("start", "cold") == request.param
            yield sb
    finally:
        if zygote is not None:
            zygote.close()


async def _run(sb: Sandbox, code: str) -> str:
    r = await sb.execute(dedent(code))
    assert r.status == "ok", r.text
    return r.text


PROBE = """
import os
import re
def attempt(what, fn):
    try:
        print(what, 'LEAK', repr(fn())[:60])
    except OSError as e:
        print(what, 'blocked', type(e).__name__)
"""


@pytest.mark.asyncio(loop_scope="module")
async def test_home_secrets_are_absent_and_home_is_refused(confined: Sandbox, home: Path) -> None:
    with pytest.raises(ConfigError, match="home directory"):
        Sandbox(workdir=home)
    with pytest.raises(ConfigError, match="root of the filesystem"):
        Sandbox(workdir="/")
    reads = "".join(
        f"attempt({name!r}, lambda: open({str(home / name)!r}).read())\n" for name in PLANTED
    )
    evil = home / STARTUP / "evil.py"
    out = await _run(
        confined,
        PROBE + reads + f"attempt('startup', lambda: open({str(evil)!r}, 'w').write('x'))\n",
    )
    assert "LEAK" not in out and out.count("blocked") == len(PLANTED) + 1, out
    assert not evil.exists()
    # A plain kernel manager (as JupyterLab uses the kernel spec) gets the same refusal.
    km = AsyncKernelManager(kernel_name="codeagent-sandbox")
    await km.start_kernel(cwd=str(home), env={**os.environ, "HOME": str(home)})
    refused = Path(km.connection_file).parent / "refused.txt"
    for _ in range(100):
        if not await km.is_alive():
            break
        await asyncio.sleep(0.1)
    reason = refused.read_text() if refused.exists() else ""
    await km.shutdown_kernel(now=True)
    assert "home directory" in reason


@pytest.mark.asyncio(loop_scope="module")
async def test_session_state_in_workspace_is_masked(confined: Sandbox) -> None:
    sessions = confined.workdir / ".codeagent" / "sessions"
    out = await _run(
        confined,
        PROBE
        + dedent("""
        print('listing', os.listdir('.codeagent'))
        attempt('append', lambda: open('.codeagent/sessions/x.ipynb', 'a').write('forged'))
        os.makedirs('.codeagent/sessions', exist_ok=True)
        open('.codeagent/sessions/forged.ipynb', 'w').write('{}')
        """),
    )
    assert "listing []" in out  # the real sessions are not even visible
    assert (sessions / "x.ipynb").read_text() == '{"real": true}'
    assert not (sessions / "forged.ipynb").exists()


@pytest.mark.asyncio(loop_scope="module")
async def test_kernel_is_nobody_without_capabilities_or_host_sockets(confined: Sandbox) -> None:
    sock_path = Path("/run") / f"codeagent-test-{os.getpid()}.sock"
    listener = None
    if os.access("/run", os.W_OK):
        listener = socket.socket(socket.AF_UNIX)
        listener.bind(str(sock_path))
        listener.listen()
    try:
        out = await _run(
            confined,
            PROBE
            + dedent(f"""
            import socket
            print('uid', os.getuid(), os.geteuid())
            print('caps', [l for l in open('/proc/self/status') if l.startswith('CapEff')])
            print('parent pid' in os.environ, 'JPY_PARENT_PID' in os.environ)
            attempt('shadow', lambda: open('/etc/shadow').read())
            attempt('sudoers', lambda: open('/etc/sudoers').read())
            attempt('run', lambda: os.listdir('/run'))
            attempt('var-run', lambda: os.listdir('/var/run'))
            s = socket.socket(socket.AF_UNIX)
            attempt('socket', lambda: s.connect({str(sock_path)!r}))
            open('mine.txt', 'w').write('ok')
            """),
        )
    finally:
        if listener is not None:
            listener.close()
            sock_path.unlink()
    assert "uid 65534 65534" in out and "CapEff:\\t0000000000000000" in out, out
    assert "False False" in out and "LEAK" not in out and out.count("blocked") == 5
    written = confined.workdir / "mine.txt"
    assert written.read_text() == "ok" and written.stat().st_uid == os.getuid()
    assert confined.enforcement["user"] == "uid 65534 (user namespace)"


def _narrow_path(tmp_path: Path, tools: tuple[str, ...], monkeypatch: pytest.MonkeyPatch) -> str:
    """A PATH with only ``tools``; the bundled bwrap is not allowed either."""
    monkeypatch.setenv(BWRAP_ENV, "system")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in tools:
        found = shutil.which(tool)
        if found is None:
            pytest.skip(f"{tool} is not installed")
        (bin_dir / tool).symlink_to(found)
    return str(bin_dir)


@pytest.mark.parametrize("tools", [(), ("unshare",)], ids=["no-tools", "unshare-only"])
async def test_without_bwrap_refuses_unless_unconfined_is_chosen(
    tmp_path: Path, tools: tuple[str, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", _narrow_path(tmp_path, tools, monkeypatch))  # the launcher's view
    workspace = tmp_path / "ws"
    workspace.mkdir()
    with pytest.raises(SandboxError) as refused:
        await Sandbox(workdir=workspace, limits=SMALL).start()
    message = str(refused.value)
    assert "refused to start" in message and "allow_unconfined=True" in message
    assert "\n" not in message and "filesystem" in message
    with pytest.raises(ZygoteUnavailable, match="no bubblewrap"):  # no zygote either
        Zygote(tmp_path).start()
    async with Sandbox(workdir=workspace, limits=SMALL, allow_unconfined=True) as sb:
        out = await _run(sb, f"import os; print(os.path.exists('/proc/{os.getpid()}'))")
        rc = (await sb.run_command("echo hi")).status
    assert sb.enforcement["filesystem"] == "none" and rc == "ok"
    assert sb.enforcement["user"]  # said, whatever it is
    if tools and sb.enforcement["pid"] == "unshare":
        assert out == "False"  # the server's process is out of sight
    else:
        assert sb.enforcement["pid"] == "none" and out == "True"


DAEMON = """
import os, subprocess
if os.fork() == 0:
    try:
        os.setsid()
        subprocess.Popen([{sleep!r}, '{tag}'], start_new_session=True)
    finally:
        os._exit(0)
os.wait()
"""


def _alive_with(tag: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if tag.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                pass
    return found


@pytest.mark.parametrize("mode", ["bwrap", "unshare", "none"])
async def test_double_forked_daemon_dies_with_the_sandbox(
    tmp_path: Path, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if mode == "bwrap":
        _bwrap_or_skip()
    else:
        monkeypatch.setenv(
            "PATH", _narrow_path(tmp_path, ("unshare",) if mode == "unshare" else (), monkeypatch)
        )
    key, how = {"bwrap": ("pid", "bwrap"), "unshare": ("pid", "unshare")}.get(
        mode, ("processes", "cgroup")
    )
    tag = f"{4000 + os.getpid() % 1000}.{int(time.time() * 1000) % 100000}"
    forked = lane_start(tmp_path) if mode == "bwrap" else {}  # the others: the cold launcher's
    async with Sandbox(workdir=tmp_path, limits=SMALL, allow_unconfined=True, **forked) as sb:
        if sb.enforcement[key] != how:
            pytest.skip(f"{mode} cannot contain processes here: {sb.enforcement}")
        await _run(sb, DAEMON.format(tag=tag, sleep=SLEEP))
        for _ in range(50):
            if _alive_with(tag):
                break
            await asyncio.sleep(0.1)
        assert _alive_with(tag), "the daemon did not start"
    for _ in range(50):
        if not _alive_with(tag):
            break
        await asyncio.sleep(0.1)
    assert not _alive_with(tag)


@pytest.mark.parametrize("mode", ["bwrap", "unshare"])
async def test_sandboxes_do_not_share_ipython_dirs(
    tmp_path: Path, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if mode == "unshare":  # where every kernel used to share /tmp/codeagent/ipython
        monkeypatch.setenv("PATH", _narrow_path(tmp_path, ("unshare",), monkeypatch))
    else:
        _bwrap_or_skip()
    listings = []
    forked = lane_start(tmp_path) if mode == "bwrap" else {}  # unshare: the cold launcher's
    for i in range(2):
        code = (
            "import os\nd = os.environ['IPYTHONDIR']\n"
            f"open(os.path.join(d, 'planted{i}'), 'w').write('x')\n"
            "print(sorted(n for n in os.listdir(d) if n.startswith('planted')))"
        )
        async with Sandbox(workdir=tmp_path, limits=SMALL, allow_unconfined=True, **forked) as sb:
            listings.append(await _run(sb, code))
    assert listings == ["['planted0']", "['planted1']"]


async def test_disk_budget_fails_the_cell_and_stops_the_run(
    tmp_path: Path, scripted_model: object
) -> None:
    limits = SandboxLimits(disk_mb=2, file_size_mb=8, cell_timeout=10)
    write = "open('blob.bin', 'wb').write(b'x' * (5 << 20))"
    async with Sandbox(
        workdir=tmp_path, limits=limits, allow_unconfined=True, **lane_start(tmp_path)
    ) as sb:
        r = await sb.execute(write)
        assert r.status == "error"
        # Stopped while writing: anywhere past the budget, up to the whole 5 MiB.
        used = re.search(r"workspace disk budget of 2 MiB exceeded \(([\d.]+) MiB used\)", r.note)
        assert used is not None and 2 < float(used.group(1)) <= 5, r.note
        (tmp_path / "blob.bin").unlink()
        assert (await sb.execute("1")).status == "ok"
        scripted_model.set_script(  # type: ignore[attr-defined]
            [tool_calls(("run_cell", {"code": write})), text("never asked")]
        )
        model = OpenAIChatModel("scripted", scripted_model.url, "k", backoff=0.01)  # type: ignore[attr-defined]
        loop = AgentLoop(model, sb, ToolBox(sb, tmp_path), [], AgentConfig())
        finished = await loop.run("fill the disk")
    assert finished.status == ev.ERROR and "disk budget of 2 MiB" in finished.reason
    assert len(scripted_model.requests) == 1  # type: ignore[attr-defined]


def _as_nobody(script: str, workspace: Path, timeout: float = 60) -> subprocess.CompletedProcess:
    """Run ``script`` as uid 65534, making a root-only interpreter directory traversable."""
    if os.geteuid() != 0 or not shutil.which("setpriv") or not shutil.which("unshare"):
        pytest.skip("needs root (to become an unprivileged user), setpriv and unshare")
    prefix = Path(sys.base_prefix).resolve()
    blocked = [p for p in prefix.parents if not os.stat(p).st_mode & 0o001]
    if len(blocked) > 1:
        pytest.skip(f"the interpreter lies under several private directories: {blocked}")
    setup = ""
    if blocked:
        top = blocked[0]
        child = top / prefix.relative_to(top).parts[0]
        stage = workspace / ".stage"
        stage.mkdir()
        setup = (
            f"mount --bind {top} {stage} && mount -t tmpfs -o mode=0755 tmpfs {top} && "
            f"mkdir {child} && mount --bind {stage / child.name} {child} && "
        )
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(workspace / "home"),
        "PYTHONPATH": str(REPO),
    }
    (workspace / "home").mkdir()
    (workspace / "work").mkdir()
    for path in (workspace, workspace / "home", workspace / "work"):
        os.chown(path, 65534, 65534)
    run = f'setpriv --reuid=65534 --regid=65534 --clear-groups -- {sys.executable} -c "$0"'
    return subprocess.run(
        ["unshare", "-m", "--propagation", "private", "sh", "-c", setup + "exec " + run, script],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


NPROC_SCRIPT = """
import asyncio, json, logging, os
logging.basicConfig(level=logging.INFO)
from codeagent_jupyter.sandbox import Sandbox, SandboxLimits, bubblewrap
from codeagent_jupyter.sandbox.bubblewrap import BWRAP_ENV
from codeagent_jupyter.sandbox.zygote_host import Zygote
from codeagent_jupyter.sandbox.zygote_manager import manager_class
CELL = '''
import os, time
n = 0
try:
    for _ in range(60):
        if os.fork() == 0:
            time.sleep(2); os._exit(0)
        n += 1
except OSError as e:
    print('refused', e.errno)
print('forked', n)
'''
async def main():
    limits = SandboxLimits(max_processes=24, cell_timeout=20)
    workdir = os.environ['HOME'] + '/../work'
    async with Sandbox(workdir=workdir, limits=limits, allow_unconfined=True) as sb:
        r = await sb.execute(CELL)
        print(json.dumps({'uid': os.getuid(), 'enforcement': sb.enforcement, 'text': r.text}))
asyncio.run(main())
"""


def test_max_processes_holds_for_an_unprivileged_server() -> None:
    workspace = Path(tempfile.mkdtemp(prefix="codeagent-nobody-"))
    try:
        done = _as_nobody(NPROC_SCRIPT, workspace)
    finally:
        subprocess.run(["umount", "-q", str(workspace / ".stage")], check=False)
        shutil.rmtree(workspace, ignore_errors=True)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["uid"] == 65534
    assert report["enforcement"]["processes"] == "rlimit (per user)"
    forked = int(report["text"].split("forked")[-1])
    assert "refused 11" in report["text"] and forked < 24, report["text"]


STDERR_SCRIPT = """
import asyncio, logging, os, sys
logging.basicConfig(level=logging.INFO, stream=sys.stderr)
from codeagent_jupyter.sandbox import Sandbox
CELL = '''
import os, sys
seq = b'\\\\x1b]0;pwned\\\\x07\\\\x1b[2J'
fds = {2, getattr(sys.stderr, '_original_stdstream_copy', None) or 2}
for fd in fds:
    os.write(fd, b'before ' + seq + b' after\\\\n')
'''
async def main():
    async with Sandbox(workdir=sys.argv[1], allow_unconfined=True) as sb:
        r = await sb.execute(CELL)
        print('cell', r.status)
        await asyncio.sleep(0.5)
asyncio.run(main())
"""


def test_kernel_stderr_reaches_the_log_escaped_never_raw(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", STDERR_SCRIPT, str(tmp_path)],
        capture_output=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert b"cell ok" in done.stdout, done.stderr[-2000:]
    assert b"\x1b" not in done.stderr and b"\x07" not in done.stderr
    assert b"before \\x1b]0;pwned\\x07\\x1b[2J after" in done.stderr, done.stderr[-2000:]


class SpecIgnoringManager(AsyncKernelManager):
    """A kernel manager that starts the stock ``python3`` kernel whatever it is asked for,
    as jupyter_server's gateway manager did: model code would run with no isolation."""

    def __init__(self, **kwargs: object) -> None:
        kwargs["kernel_name"] = "python3"
        super().__init__(**kwargs)


async def test_a_kernel_that_is_not_the_sandbox_is_refused(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    box = Sandbox(workdir=workspace, kernel_manager_class=SpecIgnoringManager)
    with pytest.raises(SandboxError, match="no pid or filesystem isolation"):
        await box.start()
    assert not box.is_alive()
    # Chosen explicitly, the same kernel runs, and says what it is not.
    open_box = Sandbox(
        workdir=workspace, kernel_manager_class=SpecIgnoringManager, allow_unconfined=True
    )
    async with open_box:
        assert open_box.enforcement["filesystem"] == "none"
        assert (await open_box.execute("1 + 1")).text.strip() == "2"
