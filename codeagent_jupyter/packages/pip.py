"""pip, run outside the sandbox for it: the one resolve of an install (and, for a session
recorded before wheel URLs were kept, a hash-pinned reinstall), nothing else.

Every command is pip itself (``python -I -m pip``: isolated mode, so neither the server's
``PYTHONPATH`` nor a package installed for a sandbox can be imported by it), with no pip
configuration but the options given here (``PIP_CONFIG_FILE`` is the null device and no
``PIP_*`` variable passes), and always ``--only-binary=:all:``: pip never builds a source
distribution, whose build code would run with the server's privileges.
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

WHEELS_ONLY = ["--only-binary=:all:"]
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


async def run_pip(
    args: list[str], *, python: str = sys.executable, timeout: float = TIMEOUT_S
) -> str:
    """Run ``pip ARGS`` and return its stdout; ``PackageError`` with pip's reason if it fails."""
    with tempfile.TemporaryDirectory(prefix="codeagent-pip-") as cwd:
        process = await asyncio.create_subprocess_exec(
            python,
            "-I",
            "-m",
            "pip",
            *args,
            cwd=cwd,
            env=pip_env(),
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
    requirements: list[str], options: list[str], *, cache_dir: str, python: str = sys.executable
) -> list[dict[str, Any]]:
    """What pip would install for ``requirements`` into the interpreter's environment
    (what is installed there already counts): pip's installation report entries."""
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
                "--cache-dir",
                cache_dir,
                *options,
                *requirements,
            ],
            python=python,
        )
        data = json.loads(report.read_text(encoding="utf-8"))
    return list(data.get("install", []))


async def install_pinned(
    pins: list[tuple[str, str, str]],
    options: list[str],
    target: Path,
    *,
    cache_dir: str,
    python: str = sys.executable,
) -> None:
    """Install exactly ``(name, version, sha256)`` wheels into ``target`` in one pip call,
    from the sources in ``options`` (the shared cache first): pip itself refuses a file
    whose hash is not the given one (``--require-hashes``)."""
    with tempfile.TemporaryDirectory(prefix="codeagent-pins-") as folder:
        requirements = Path(folder) / "requirements.txt"
        lines = [f"{name}=={version} --hash=sha256:{sha256}" for name, version, sha256 in pins]
        requirements.write_text("\n".join(lines) + "\n", encoding="utf-8")
        await run_pip(
            [
                "install",
                "--quiet",
                "--no-deps",
                *WHEELS_ONLY,
                "--require-hashes",
                "--no-warn-script-location",
                "--upgrade",
                "--cache-dir",
                cache_dir,
                "--target",
                str(target),
                *options,
                "-r",
                str(requirements),
            ],
            python=python,
        )
