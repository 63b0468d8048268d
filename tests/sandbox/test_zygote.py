"""Sandboxes forked by a zygote, through ``Sandbox`` and the pool: a pooled fork with the
data stack preloaded, the enforcement line, a restart after the kernel died, shutdown, and
the starts it refuses (so the caller starts cold)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import socket
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from codeagent_jupyter.errors import SandboxError
from codeagent_jupyter.sandbox import Sandbox, SandboxLimits, SandboxPool, report
from codeagent_jupyter.sandbox.backend import LocalBackend
from codeagent_jupyter.sandbox.isolation import REFUSED_FILE
from codeagent_jupyter.sandbox.zygote_host import Zygote
from codeagent_jupyter.sandbox.zygote_manager import manager_class
from tests.zygotes import running_zygote

LIMITS = SandboxLimits(memory_mb=768, cell_timeout=60)


@pytest.fixture(scope="module")
def zygote() -> Iterator[Zygote]:
    root = Path(tempfile.mkdtemp(prefix="codeagent-zygote-test-"))
    try:
        with running_zygote(root) as made:
            yield made
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _workspace(zygote: Zygote, name: str) -> Path:
    path = zygote.workspaces / name
    path.mkdir()
    return path


async def test_the_pool_hands_out_forks_with_the_stack_preloaded(zygote: Zygote) -> None:
    pool = SandboxPool(
        size=1,
        workdir=_workspace(zygote, "pool"),
        limits=LIMITS,
        preload=["numpy", "pandas", "matplotlib.pyplot"],
        kernel_manager_class=manager_class(zygote),
    )
    await pool.start()
    try:
        sb = await pool.acquire()
    finally:
        await pool.shutdown()
    try:
        assert sb.preloaded == ["numpy as np", "pandas as pd", "matplotlib.pyplot as plt"]
        line = report.summary(sb.enforcement, sb.limits)
        assert "start: zygote" in line and "uid 65534" in line, line
        r = await sb.execute("import sys; print(sys.modules['pandas'].__name__, pd.__name__)")
        assert r.status == "ok" and "pandas pandas" in r.text
        r = await sb.execute("plt.plot([1, 2]); plt.show()")  # pyplot came before the shell
        assert any("image/png" in o.get("data", {}) for o in r.outputs), r.outputs
    finally:
        await sb.shutdown()


async def test_a_forks_kernel_lists_its_modules_and_the_zygote_keeps_no_font_open(
    zygote: Zygote,
) -> None:
    """What the zygote does so its forks share more pages changes nothing a kernel sees:
    ipykernel's list of the modules loaded at its start (the debugger's "just my code")
    holds the zygote's modules and the fork's own, ipykernel's ``sys`` is the real one
    again, the figure the zygote drew left no font file open in it (a fork closes the
    zygote's descriptors: a cached font would read from a closed or reused one), and the
    DataFrame it made left Arrow's allocator no reservation a fork's ``RLIMIT_DATA`` would
    refuse (with one, this fork's kernel died before it answered)."""
    r = await _in_a_fork(
        zygote,
        "pages",
        (
            "import sys, ipykernel.ipkernel as k, numpy\n"
            "listed = set(get_ipython().kernel._kernel_modules)\n"
            "print(k.sys is sys, numpy.__file__ in listed,\n"
            "      sys.modules['codeagent_jupyter.sandbox.inner'].__file__ in listed,\n"
            "      all(isinstance(f, str) for f in listed), len(listed) > 500)\n"
            "import matplotlib.pyplot as plt, pandas as pd\n"
            "print(pd.DataFrame({'t': ['a', 'b'] * 500})['t'].str.upper().iloc[-1])\n"
            "plt.title('text after the fork'); plt.show()\n"
        ),
    )
    assert r.status == "ok" and r.text.split()[:6] == ["True"] * 5 + ["B"], r.text
    assert any("image/png" in o.get("data", {}) for o in r.outputs), r.outputs
    assert zygote.process is not None
    opened = []
    for pid in _tree(zygote.process.pid):
        with contextlib.suppress(OSError):
            for fd in os.listdir(f"/proc/{pid}/fd"):
                with contextlib.suppress(OSError):
                    opened.append(os.readlink(f"/proc/{pid}/fd/{fd}"))
    assert opened and not [p for p in opened if p.endswith((".ttf", ".otf", ".afm"))], opened


async def test_the_first_process_of_a_fork_holds_no_privilege(zygote: Zygote) -> None:
    """Pid 1 of a fork's namespaces forks the kernel before the mounts, so it holds the
    zygote's capabilities a moment longer; before the kernel may go on, it is uid 65534
    in a user namespace of its own with no capability left, and the kernel cannot trace
    it: the two are in sibling user namespaces, and the kernel has no capability in pid 1's."""
    r = await _in_a_fork(
        zygote,
        "first",
        (
            "import ctypes, json, os\n"
            "status = dict(l.split(':', 1) for l in open('/proc/1/status'))\n"
            "libc = ctypes.CDLL(None, use_errno=True)\n"
            "traced = libc.ptrace(16, 1, None, None)  # PTRACE_ATTACH\n"
            "print(json.dumps({k: status[k].split() for k in\n"
            "    ('Uid', 'CapEff', 'CapPrm', 'CapBnd', 'CapAmb', 'NoNewPrivs')}\n"
            "    | {'traced': traced, 'parent': os.getppid()}))\n"
        ),
    )
    assert r.status == "ok", r.text
    seen = json.loads(r.text)
    assert seen["Uid"] == ["65534"] * 4 and seen["NoNewPrivs"] == ["1"], seen
    for caps in ("CapEff", "CapPrm", "CapBnd", "CapAmb"):
        assert int(seen[caps][0], 16) == 0, seen
    assert seen["traced"] == -1 and seen["parent"] == 1, seen


async def test_a_forks_cell_past_its_timeout_is_interrupted_and_its_state_kept(
    zygote: Zygote,
) -> None:
    """The interrupt reaches a fork's kernel: the request used to go out on a control
    channel closed at once, so it was dropped, the cell ran on, and the kernel was
    restarted with its state lost."""
    async with Sandbox(
        workdir=_workspace(zygote, "interrupt"),
        limits=SandboxLimits(memory_mb=768, cell_timeout=1),
        interrupt_grace=1.5,
        kernel_manager_class=manager_class(zygote),
    ) as sb:
        await sb.execute("kept = 38")
        for _ in range(4):  # the dropped request was a race: most were lost, not all
            r = await sb.execute("print('before', flush=True)\nwhile True: pass")
            assert r.status == "timeout" and "state kept" in (r.note or ""), r.note
            await sb.execute("kept += 1")
        assert (await sb.execute("print(kept)")).text.strip() == "42"


async def _in_a_fork(zygote: Zygote, name: str, code: str) -> Any:
    """``code``'s result in the kernel of a fresh fork, in a workspace of its own."""
    async with Sandbox(
        workdir=_workspace(zygote, name), limits=LIMITS, kernel_manager_class=manager_class(zygote)
    ) as sb:
        return await sb.execute(code)


def _tree(pid: int) -> list[int]:
    """``pid`` and its descendants."""
    found, todo = [], [pid]
    while todo:
        found.append(todo.pop())
        with contextlib.suppress(OSError):
            for task in os.listdir(f"/proc/{found[-1]}/task"):
                todo += map(
                    int, Path(f"/proc/{found[-1]}/task/{task}/children").read_text().split()
                )
    return found


async def test_a_dead_fork_is_replaced_and_shutdown_leaves_nothing(zygote: Zygote) -> None:
    sb = Sandbox(
        workdir=_workspace(zygote, "restart"),
        limits=LIMITS,
        kernel_manager_class=manager_class(zygote),
    )
    await sb.start()
    first = sb.private_dir
    assert first is not None and first.is_dir()
    r = await sb.execute("x = 1\nimport os; os._exit(3)")
    assert r.status == "died" and "restarted" in r.note, r.note
    r = await sb.execute("print('x' in globals())")
    assert r.status == "ok" and "False" in r.text  # a fresh fork: the state is gone
    second = sb.private_dir
    assert second is not None and second != first and not first.exists()
    await sb.shutdown()
    assert not second.exists()


@pytest.mark.parametrize(
    ("network", "said"), [("policy", "no egress broker"), ("host", "the host's network")]
)
async def test_a_sandbox_with_a_network_is_refused(zygote: Zygote, network: str, said: str) -> None:
    """A fork always has its own empty network: one that should reach out is refused, so
    the caller starts it cold (``LocalBackend`` does; the CLI refuses ``--start zygote``)."""
    limits = SandboxLimits(
        memory_mb=512, cell_timeout=10, egress_broker=network == "policy", network=network == "host"
    )
    sb = Sandbox(
        workdir=_workspace(zygote, network),
        limits=limits,
        kernel_manager_class=manager_class(zygote),
    )
    with pytest.raises(SandboxError, match=said):
        await sb.start()
    await sb.shutdown()


async def test_a_fork_without_a_valid_go_ahead_ends(zygote: Zygote) -> None:
    """A spawn whose second line is not what the host sends: that fork ends at once and the
    zygote goes on serving (the fork never returns into the zygote's loop)."""
    workspace = _workspace(zygote, "garbled")
    kernel_dir = zygote.kernels / "codeagent-sbx-garbled"
    kernel_dir.mkdir()
    request = {"workspace": str(workspace), "workspaces": str(zygote.workspaces)}
    request |= {"kernel_dir": str(kernel_dir), "kernels": str(zygote.kernels)}
    with socket.socket(socket.AF_UNIX) as conn:
        conn.connect(str(zygote.socket))
        conn.sendall(json.dumps(request).encode() + b"\n")
        pid = json.loads(conn.makefile("rb").readline())["pid"]
        conn.sendall(b"not json\n")
    for _ in range(50):
        if zygote.host_pid(pid) is None:
            break
        await asyncio.sleep(0.1)
    assert zygote.host_pid(pid) is None  # the process itself is gone
    sb = Sandbox(workdir=workspace, limits=LIMITS, kernel_manager_class=manager_class(zygote))
    await sb.start()
    try:
        assert (await sb.execute("print(1 + 1)")).text.strip() == "2"
    finally:
        await sb.shutdown()


async def test_a_fork_that_cannot_confine_itself_says_why(zygote: Zygote) -> None:
    """A fork whose confinement fails writes its reason where the host reads a launcher's
    refusal (its stderr is already /dev/null), so the start fails with that line."""
    workspace = _workspace(zygote, "unconfined")
    kernel_dir = zygote.kernels / "codeagent-sbx-unconfined"
    kernel_dir.mkdir()
    request = {"workspace": str(workspace), "workspaces": str(zygote.workspaces)}
    request |= {"kernel_dir": str(kernel_dir), "kernels": str(zygote.kernels)}  # no tmp size
    with socket.socket(socket.AF_UNIX) as conn:  # held open: the fork's lease
        conn.connect(str(zygote.socket))
        conn.sendall(json.dumps(request).encode() + b"\n")
        pid = json.loads(conn.makefile("rb").readline())["pid"]
        conn.sendall(json.dumps({"env": {}}).encode() + b"\n")
        refused = kernel_dir / REFUSED_FILE
        for _ in range(50):
            if zygote.host_pid(pid) is None and refused.exists():
                break
            await asyncio.sleep(0.1)
        assert zygote.host_pid(pid) is None
    text = refused.read_text()
    assert "could not confine itself: KeyError" in text and "tmp_bytes" in text, text


async def test_a_python_environment_below_tmp_stays_visible(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A checkout or environment below /tmp (a CI clone) is bound into the zygote; each
    fork's fresh /tmp must bind it back, read-only, or its kernel cannot even import."""
    probe = Path(tempfile.mkdtemp(prefix="codeagent-probe-", dir="/tmp"))
    (probe / "codeagent_probe.py").write_text("ANSWER = 42\n")
    (probe / "codeagent_probe.py").chmod(0o666)  # only the mount may refuse a write
    monkeypatch.syspath_prepend(str(probe))  # so python_paths() binds it into the zygote
    root = Path(tempfile.mkdtemp(prefix="codeagent-zygote-test-"))
    try:
        with running_zygote(root) as made:
            manager = manager_class(made)
            async with Sandbox(
                workdir=_workspace(made, "tmp"), limits=LIMITS, kernel_manager_class=manager
            ) as sb:
                path = str(probe / "codeagent_probe.py")
                r = await sb.execute(
                    f"print(open({path!r}).read().strip())\n"
                    f"try:\n    open({path!r}, 'a')\nexcept OSError as e:\n"
                    "    print(type(e).__name__)"
                )
            assert r.status == "ok" and "ANSWER = 42" in r.text, r.text
            assert "OSError" in r.text, r.text  # EROFS: no subclass
    finally:
        shutil.rmtree(root, ignore_errors=True)
        shutil.rmtree(probe, ignore_errors=True)


async def test_the_local_backend_forks_what_it_can_and_starts_the_rest_cold(
    zygote: Zygote, tmp_path: Path
) -> None:
    """The server's backend with a zygote: a workspace below its folder without a network is
    a fork; the host network, or a folder outside, starts cold; the enforcement says which."""
    backend = LocalBackend(zygote=zygote)
    cases = [
        (_workspace(zygote, "backend"), LIMITS, "zygote"),
        (zygote.workspaces / "backend", SandboxLimits(memory_mb=512, network=True), "cold"),
        (tmp_path, LIMITS, "cold"),
    ]
    for workdir, limits, start in cases:
        sb = backend.create(workdir, limits)
        await sb.start()
        try:
            assert sb.enforcement.get("start", "cold") == start, (workdir, sb.enforcement)
            assert (await sb.execute("print(6 * 7)")).text.strip() == "42"
        finally:
            await sb.shutdown()
    assert backend.describe()["start"] == "zygote"


@pytest.mark.parametrize("auto", [True, False])
async def test_auto_starts_cold_where_the_zygote_cannot_run_now(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, auto: bool
) -> None:
    """``start = "auto"`` chose the zygote when bubblewrap was there; the machine changed
    since (here: no bubblewrap on PATH). The sandbox starts cold, as ``auto`` promises,
    rather than failing; ``zygote`` fails in one line."""
    from codeagent_jupyter.sandbox.bubblewrap import BWRAP_ENV

    bare = tmp_path / "bin"
    bare.mkdir()
    (bare / "python").symlink_to(sys.executable)
    monkeypatch.setenv("PATH", str(bare))
    monkeypatch.setenv(BWRAP_ENV, "system")  # not the bundled bwrap either
    (tmp_path / "ws").mkdir()
    backend = LocalBackend(zygote=Zygote(tmp_path), cold_fallback=auto, allow_unconfined=True)
    sb = backend.create(tmp_path / "ws", LIMITS)
    try:
        if not auto:
            with pytest.raises(SandboxError, match="failed to start"):
                await sb.start()
            return
        await sb.start()
        assert sb.enforcement.get("start", "cold") == "cold"
        assert (await sb.execute("print(6 * 7)")).text.strip() == "42"
    finally:
        await sb.shutdown()
        backend.close()
