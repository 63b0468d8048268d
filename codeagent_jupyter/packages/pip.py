"""pip, run outside the sandbox for it: picking wheels for named requirements
(``resolve``, one level of a plan at a time, see ``walk``) and downloading hash-pinned
wheels for a reinstall (``download_pinned``), nothing else.

Every command is pip itself (isolated mode, so neither the server's ``PYTHONPATH`` nor a
package installed for a sandbox can be imported by it), with no pip configuration but the
options given here (``PIP_CONFIG_FILE`` is the null device and no ``PIP_*`` variable
passes), always ``--only-binary=:all:`` and ``--no-deps``, and never a URL or a path as a
requirement: pip is only ever asked for a wheel by name from the policy's sources, so no
source distribution, source tree or direct-URL requirement reaches it, and no build
backend can run (pip would run one, with the server's privileges, for a direct-URL
requirement in a wheel's METADATA, ``--only-binary`` notwithstanding). It keeps no cache
(``--no-cache-dir``: nothing of a refused install stays behind), and it is bounded: its
wall time, and each file it writes (a lying index cannot fill the disk through it).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

from ..errors import ToolError

WHEELS_ONLY = ["--only-binary=:all:", "--no-deps", "--no-cache-dir"]
TIMEOUT_S = 300.0
"""Longest one pip command may take (a big download on a slow index)."""
_KEPT = re.compile(
    r"^(PATH|HOME|LANG|LC_.*|TMPDIR|SYSTEMROOT|SSL_CERT_FILE|SSL_CERT_DIR|REQUESTS_CA_BUNDLE"
    r"|(HTTP|HTTPS|NO|ALL)_PROXY|(http|https|no|all)_proxy)$"
)


class PackageError(ToolError):
    """pip could not do what was asked; the message is pip's own reason, in one line."""


def pip_env() -> dict[str, str]:
    """The environment pip runs in: proxies and certificates pass, pip's own settings not."""
    env = {k: v for k, v in os.environ.items() if _KEPT.match(k)}
    env["PIP_CONFIG_FILE"] = os.devnull
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    env["PIP_NO_INPUT"] = "1"
    env["PYTHONIOENCODING"] = "utf-8"
    return env


_BOUNDED = (
    "import resource, runpy, signal, sys\n"
    "size = int(sys.argv.pop(1))\n"
    "resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))\n"
    "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
    "sys.argv[0] = 'pip'\n"
    "runpy.run_module('pip', run_name='__main__', alter_sys=True)\n"
)
"""pip under a file size limit set in its own process before it starts (not in a
``preexec_fn``, which is unsafe in a server with threads): a write past it fails with
EFBIG instead of killing pip, so pip says why in its last line."""
FILE_SLACK = 1024 * 1024
"""Bytes allowed beyond a call's ``max_mb`` for any one file pip writes (its report)."""


async def run_pip(
    args: list[str],
    *,
    python: str = sys.executable,
    timeout: float = TIMEOUT_S,
    max_file_bytes: int = 1 << 40,
    proxy: str | None = None,
) -> str:
    """Run ``pip ARGS`` and return its stdout; ``PackageError`` with pip's reason if it
    fails. No file pip writes may grow past ``max_file_bytes``. With ``proxy`` every
    request goes through it (``--proxy``; no proxy variable of ours can send one around)."""
    with tempfile.TemporaryDirectory(prefix="codeagent-pip-") as cwd:
        env = pip_env()
        env["TMPDIR"] = cwd  # its downloads go away with the folder
        if proxy is not None:
            env = {k: v for k, v in env.items() if not k.lower().endswith("_proxy")}
            args = [*args, "--proxy", proxy]
        process = await asyncio.create_subprocess_exec(
            python,
            "-I",
            "-c",
            _BOUNDED,
            str(max_file_bytes + FILE_SLACK),
            *args,
            cwd=cwd,
            env=env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        try:
            out, err = await asyncio.wait_for(process.communicate(), timeout)
        except (TimeoutError, asyncio.CancelledError):
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            await process.wait()
            raise
    if process.returncode != 0:
        raise PackageError(reason(err.decode("utf-8", "replace")))
    return out.decode("utf-8", "replace")


def reason(stderr: str) -> str:
    """pip's last ``ERROR:`` line (the one that says why), else its last line."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    errors = [line.removeprefix("ERROR: ") for line in lines if line.startswith("ERROR:")]
    text = (errors or lines or ["pip failed"])[-1]
    return " ".join(text.split())[:400]


def missing_name(message: str) -> str | None:
    """The requirement pip found no wheel for, from its "No matching distribution" line."""
    found = re.search(r"No matching distribution found for (\S+)", message)
    return found.group(1) if found else None


async def resolve(
    requirements: list[str],
    options: list[str],
    *,
    max_file_bytes: int,
    python: str = sys.executable,
    proxy: str | None = None,
) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """The wheel pip picks for each of ``requirements`` (names with versions only; their
    dependencies are not looked at, ``walk`` does that) that the interpreter's environment
    does not already satisfy: pip's installation report entries, and the report's marker
    environment (the interpreter's)."""
    with tempfile.TemporaryDirectory(prefix="codeagent-report-") as folder:
        report = Path(folder) / "report.json"
        await run_pip(
            [
                "install",
                "--dry-run",
                "--quiet",
                "--break-system-packages",  # nothing is written: only the plan is wanted
                "--report",
                str(report),
                *WHEELS_ONLY,
                *options,
                *requirements,
            ],
            python=python,
            max_file_bytes=max_file_bytes,
            proxy=proxy,
        )
        data = json.loads(report.read_text(encoding="utf-8"))
    environment = data.get("environment")
    return list(data.get("install", [])), dict(environment) if isinstance(environment, dict) else {}


async def download_pinned(
    pins: list[tuple[str, str, str]],
    options: list[str],
    folder: Path,
    *,
    max_file_bytes: int,
    python: str = sys.executable,
    proxy: str | None = None,
) -> list[Path]:
    """Download exactly ``(name, version, sha256)`` wheels into ``folder`` in one pip call,
    from the sources in ``options``: pip itself refuses a file whose hash is not the given
    one (``--require-hashes``). The files downloaded."""
    with tempfile.TemporaryDirectory(prefix="codeagent-pins-") as work:
        requirements = Path(work) / "requirements.txt"
        lines = [f"{name}=={version} --hash=sha256:{sha256}" for name, version, sha256 in pins]
        requirements.write_text("\n".join(lines) + "\n", encoding="utf-8")
        await run_pip(
            [
                "download",
                "--quiet",
                *WHEELS_ONLY,
                "--require-hashes",
                "--dest",
                str(folder),
                *options,
                "-r",
                str(requirements),
            ],
            python=python,
            max_file_bytes=max_file_bytes,
            proxy=proxy,
        )
    return sorted(p for p in folder.iterdir() if p.is_file())
