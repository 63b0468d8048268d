"""Attacks of one sandbox on another that runs beside it, each run for real in real kernels.

These are the attacks a start that shares anything between sandboxes (a zygote that forks
them with the data stack already imported, docs/security.md "The zygote") makes possible:
reading a sibling's or the parent's memory (``/proc/PID/mem``, ``process_vm_readv``),
signalling a sibling, a shared anonymous mapping left writable in both, descriptors
inherited from a common parent, the same random numbers in two sandboxes, a module object
changed in one and seen in the next, and a sibling's workspace. ``STARTS`` lists the starts
they run against; every start the sandbox offers must be in it.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from textwrap import dedent

import pytest
import pytest_asyncio

from codeagent_jupyter.sandbox import Sandbox, SandboxLimits, bubblewrap, cgroup
from codeagent_jupyter.sandbox.zygote_host import Zygote
from codeagent_jupyter.sandbox.zygote_manager import manager_class
from tests.zygotes import running_zygote

SMALL = SandboxLimits(memory_mb=768, cell_timeout=60, file_size_mb=8, max_processes=32)
STARTS = ["cold", "zygote"]
"""How a sandbox's kernel is started: ``cold`` (its own interpreter in its own bwrap) or
``zygote`` (a fork of a confined process that has the data stack imported)."""
MARKER = "codeagent-sibling-marker"
Pair = tuple[Sandbox, Sandbox, Zygote | None]
"""Two sandboxes side by side, and the zygote that forked them (None for cold starts)."""
pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest.fixture(scope="module")
def root() -> Iterator[Path]:
    """One folder holding each sandbox's own workspace, as one server's notebooks are."""
    path = Path(tempfile.mkdtemp(prefix="codeagent-siblings-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def zygote(root: Path) -> Iterator[Zygote]:
    """One zygote for the module's forked sandboxes, serving the workspaces under ``root``."""
    with running_zygote(root) as made:
        yield made


async def _start(root: Path, name: str, zygote: Zygote | None) -> Sandbox:
    workspace = root / name
    workspace.mkdir()
    (workspace / "own.txt").write_text(f"{name} private {MARKER}")
    if zygote is None:
        sb = Sandbox(workdir=workspace, limits=SMALL)
    else:
        sb = Sandbox(workdir=workspace, limits=SMALL, kernel_manager_class=manager_class(zygote))
    await sb.start()
    assert sb.enforcement["filesystem"] == "bwrap", sb.enforcement
    assert sb.enforcement.get("start", "cold") == ("cold" if zygote is None else "zygote")
    return sb


@pytest_asyncio.fixture(scope="module", loop_scope="module", params=STARTS)
async def pair(root: Path, request: pytest.FixtureRequest) -> AsyncIterator[Pair]:
    """Two sandboxes side by side, both with the data stack imported."""
    if bubblewrap.find() is None:
        pytest.skip("bubblewrap is not installed")
    started: list[Sandbox] = []
    zygote = request.getfixturevalue("zygote") if request.param == "zygote" else None
    try:
        for name in (f"{request.param}-a", f"{request.param}-b"):
            sb = await _start(root, name, zygote)
            started.append(sb)
            await _run(sb, "import numpy, pandas, secrets, random")
        yield (*started, zygote)
    finally:
        for sb in started:
            await sb.shutdown()


async def _run(sb: Sandbox, code: str) -> str:
    r = await sb.execute(dedent(code))
    assert r.status == "ok", r.text
    return r.text


def _descendants(pid: int) -> list[int]:
    found, todo = [], [pid]
    while todo:
        pid = todo.pop()
        found.append(pid)
        for task in Path(f"/proc/{pid}/task").iterdir():
            todo += [int(c) for c in (task / "children").read_text().split()]
    return found


def _kernel_pid(sb: Sandbox, zygote: Zygote | None) -> int:
    """The host's pid of the process that runs the sandbox's cells: the deepest launcher
    (cold), or the deepest process below the zygote's child (its pid in the zygote's pid
    namespace is the second of ``NSpid``)."""
    if zygote is None:
        tree = _descendants(sb._km.provisioner.process.pid)
        return [p for p in tree if b"sandbox.launcher" in Path(f"/proc/{p}/cmdline").read_bytes()][
            -1
        ]
    assert zygote.process is not None
    for pid in _descendants(zygote.process.pid):
        status = Path(f"/proc/{pid}/status").read_text()
        nspid = next(line.split()[1:] for line in status.splitlines() if line.startswith("NSpid"))
        if len(nspid) > 1 and int(nspid[1]) == sb._km.pid:
            return _descendants(pid)[-1]
    raise AssertionError("the forked kernel is not below the zygote")


SECRET = """
import ctypes, os
secret = b'hunter2-sibling-' + os.urandom(8).hex().encode()
address = ctypes.cast(ctypes.c_char_p(secret), ctypes.c_void_p).value
print(json.dumps([secret.decode(), address]))
"""

READ = """
import ctypes, json, os
class iovec(ctypes.Structure):
    _fields_ = [('base', ctypes.c_void_p), ('len', ctypes.c_size_t)]
libc = ctypes.CDLL(None, use_errno=True)
def vm_read(pid, address):
    buf = ctypes.create_string_buffer(64)
    local, remote = iovec(ctypes.addressof(buf), 64), iovec(address, 64)
    n = libc.process_vm_readv(pid, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)
    return buf.raw[:n] if n > 0 else b'errno %d' % ctypes.get_errno()
def mem_read(pid, address):
    try:
        with open('/proc/%d/mem' % pid, 'rb') as f:
            f.seek(address)
            return f.read(64)
    except (OSError, ValueError, OverflowError) as e:
        return type(e).__name__.encode()
def probe_self(address):
    return repr(vm_read(os.getpid(), address) + mem_read(os.getpid(), address))
seen = []
pids = sorted({int(p) for p in os.listdir('/proc') if p.isdigit()} | set(TARGETS))
for pid in pids:
    if pid == os.getpid():
        continue
    seen.append(vm_read(pid, ADDRESS) + mem_read(pid, ADDRESS))
print(repr(b''.join(seen)))
"""


async def test_sibling_and_parent_memory_cannot_be_read(pair: Pair) -> None:
    a, b, zygote = pair
    secret, address = json.loads(await _run(b, "import json" + SECRET))
    targets = [_kernel_pid(b, zygote), os.getpid()]  # the sibling's kernel, the server
    if zygote is not None and zygote.process is not None:
        targets += _descendants(zygote.process.pid)  # the zygote, every fork and their kernels
    targets += [p for p in range(1, 64)]  # and whatever the sandbox's own pid space holds
    code = f"TARGETS = {targets!r}\nADDRESS = {address}\n" + READ
    out = await _run(a, code)
    assert secret not in out and "hunter2-sibling" not in out, out
    # The same probe does read memory where it is allowed to: the sandbox's own.
    own = await _run(
        b, f"TARGETS = []\nADDRESS = {address}\n" + READ + "print(probe_self(address))"
    )
    assert own.count("hunter2-sibling") == 2, own


async def test_signals_do_not_reach_a_sibling(pair: Pair) -> None:
    a, b, zygote = pair
    victim = _kernel_pid(b, zygote)
    out = await _run(
        a,
        f"""
        import os, signal
        for sig in (signal.SIGSTOP, signal.SIGKILL):
            try:
                os.kill({victim}, sig)
                print('delivered')
            except OSError as e:
                print('refused', type(e).__name__)
        """,
    )
    assert "delivered" not in out and out.count("refused") == 2, out
    assert "alive" in await _run(b, "print('alive')")


async def test_no_writable_mapping_is_shared_with_a_sibling(pair: Pair) -> None:
    a, b, _ = pair
    scan = dedent(
        """
        import ctypes
        shared = []
        for line in open('/proc/self/maps'):
            fields = line.split()
            if fields[1].startswith('rw') and fields[1][3] == 's':
                lo, hi = (int(x, 16) for x in fields[0].split('-'))
                shared.append((lo, hi, ' '.join(fields[5:])))
        """
    )
    mine = await _run(
        a,
        "import mmap\nkeep = mmap.mmap(-1, 4096)\n"  # one of its own, to show the scan works
        + scan
        + f"for lo, hi, _ in shared:\n    ctypes.memmove(lo, {MARKER!r}.encode(), 24)\n"
        + "print(keep[:24].decode(), len(shared))",
    )
    assert mine.startswith(MARKER), mine
    out = await _run(
        b,
        scan
        + "print([name for lo, hi, name in shared "
        + f"if ctypes.string_at(lo, hi - lo).find({MARKER!r}.encode()) >= 0])",
    )
    assert out.strip() == "[]", out


async def test_no_descriptor_reaches_outside_the_sandbox(pair: Pair) -> None:
    a, b, _ = pair
    out = await _run(
        a,
        """
        import json, os
        targets = {}
        for fd in os.listdir('/proc/self/fd'):
            try:
                targets[fd] = os.readlink('/proc/self/fd/' + fd)
            except OSError:
                pass
        print(json.dumps(sorted(set(targets.values()))))
        """,
    )
    allowed = ("socket:", "pipe:", "anon_inode:", "/dev/null", "/dev/urandom", "/dev/pts")
    for target in json.loads(out):
        inside = target.startswith(allowed) or target.startswith(str(a.workdir))
        assert inside or target.startswith("/proc/"), target
        assert str(b.workdir) not in target and "/tmp/codeagent-siblings" not in target


async def test_random_state_differs_between_sandboxes(pair: Pair) -> None:
    draw = """
    import json, random, secrets, numpy
    print(json.dumps([random.getrandbits(128), numpy.random.random(4).tolist(),
                      secrets.token_hex(16), os.urandom(16).hex()]))
    """
    first, second = [json.loads(await _run(sb, "import os" + dedent(draw))) for sb in pair[:2]]
    for mine, theirs in zip(first, second, strict=True):
        assert mine != theirs


async def test_a_changed_module_is_not_seen_by_the_next_sandbox(pair: Pair, root: Path) -> None:
    a, b, _ = pair
    await _run(
        a,
        f"""
        import numpy, pandas
        pandas.__dict__['codeagent_marker'] = {MARKER!r}
        numpy.codeagent_marker = {MARKER!r}
        pandas.DataFrame.codeagent_marker = {MARKER!r}
        """,
    )
    probe = """
    import numpy, pandas
    print([getattr(m, 'codeagent_marker', None) for m in (numpy, pandas, pandas.DataFrame)])
    """
    later = await _start(root, f"later-{a.workdir.name}", pair[2])  # started after the change
    try:
        for sb in (b, later):
            assert (await _run(sb, probe)).strip() == "[None, None, None]"
    finally:
        await later.shutdown()


async def test_a_sibling_workspace_is_not_visible(pair: Pair) -> None:
    a, b, _ = pair
    out = await _run(
        a,
        f"""
        import os
        print(open('own.txt').read())
        try:
            print('LEAK', os.listdir({str(b.workdir)!r}))
        except OSError as e:
            print('blocked', type(e).__name__)
        print('beside', os.listdir({str(b.workdir.parent)!r}))
        open('from-a.txt', 'w').write('a')
        """,
    )
    assert f"{a.workdir.name} private" in out and "LEAK" not in out, out
    assert "blocked" in out and b.workdir.name not in out, out
    assert "from-a.txt" not in await _run(b, "import os; print(os.listdir('.'))")


async def test_each_sandbox_has_its_own_cgroup(pair: Pair) -> None:
    a, b, zygote = pair
    if "memory" not in cgroup.group_dirs(a.kernel_id or "") or "cgroup" not in str(
        a.enforcement.get("memory")
    ):
        pytest.skip("no writable memory cgroup here")
    for sb in (a, b):
        assert sb.enforcement["memory"] == "rlimit+cgroup", sb.enforcement
        groups = Path(f"/proc/{_kernel_pid(sb, zygote)}/cgroup").read_text().splitlines()
        assert any(str(sb.kernel_id) in line for line in groups if "memory" in line), groups
        inside = await _run(sb, "print(open('/proc/self/cgroup').read())")
        assert str(sb.kernel_id) not in inside, inside  # its own cgroup namespace


async def test_the_network_is_its_own_loopback_only(pair: Pair) -> None:
    a, b, _ = pair
    listen = """
    import socket
    server = socket.socket()
    server.bind(('127.0.0.1', 47123))
    server.listen()
    print('listening')
    """
    assert "listening" in await _run(a, listen)  # its own loopback works, as in a cold start
    out = await _run(
        b,
        """
        import socket
        for where in [('127.0.0.1', 47123), ('10.0.2.2', 80), ('1.1.1.1', 53)]:
            try:
                socket.create_connection(where, timeout=2).close()
                print('LEAK', where)
            except OSError as e:
                print('blocked', type(e).__name__)
        """,
    )
    assert "LEAK" not in out and out.count("blocked") == 3, out
    await _run(a, "server.close()")
