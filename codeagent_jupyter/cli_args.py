"""The ``codeagent`` command's building blocks: flags declared from the settings, argument
checks that fail in one line, and the sandbox the flags choose.

Shared by ``cli.py`` (run, replay) and ``resume_cli.py`` so every subcommand takes the same
flags the same way.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from dataclasses import fields
from pathlib import Path
from typing import Any

from .config import SandboxLimits
from .errors import ConfigError


class Parser(argparse.ArgumentParser):
    """Usage errors are one line (``codeagent run: error: …``), like every other error."""

    def error(self, message: str) -> Any:
        self.exit(2, f"{self.prog}: error: {message}\n")


def add_isolation(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--isolation",
        choices=("auto", "none"),
        default="auto",
        help="auto: refuse to run without pid and filesystem isolation; none: allow an "
        "UNCONFINED sandbox where the machine cannot isolate (its code can read your files)",
    )
    parser.add_argument(
        "--gateway-url",
        default="",
        help="run the sandbox kernel on this Jupyter kernel gateway instead of locally "
        "(token from $CODEAGENT_GATEWAY_TOKEN; the workspace must be the same path there)",
    )


def make_sandbox(
    args: argparse.Namespace, workdir: Path, limits: SandboxLimits | None = None
) -> Any:
    """An unstarted sandbox from the backend the flags chose (local unless --gateway-url)."""
    from .sandbox.backend import make_backend

    kind = "gateway" if args.gateway_url else "local"
    backend = make_backend(kind, args.gateway_url, allow_unconfined=args.isolation == "none")
    return backend.create(workdir, limits or SandboxLimits())


def announce(sandbox: Any) -> None:
    """The first progress line: what the sandbox really enforces; then a warning if any."""
    from .sandbox import report

    print(report.summary(sandbox.enforcement, sandbox.limits), file=sys.stderr)
    warning = report.warning(sandbox.enforcement)
    if warning is not None:
        print(warning, file=sys.stderr)


def add_limits(parser: argparse.ArgumentParser) -> None:
    """One flag per sandbox limit (``--memory-mb`` …), with the help and default that
    ``SandboxLimits`` declares, so the CLI and the server's ``limits`` setting agree."""
    for f in fields(SandboxLimits):
        if f.type in ("bool", bool):
            continue
        kind = positive_float if f.type in ("float", float) else positive_int
        flag = "--" + f.name.replace("_", "-")
        parser.add_argument(
            flag,
            type=kind,
            default=f.default,
            help=f"{SandboxLimits.help(f.name)} (default: {f.default})",
        )
    parser.add_argument(
        "--network", choices=("none", "host"), default="none", help=SandboxLimits.help("network")
    )


def limits_from(args: argparse.Namespace) -> SandboxLimits:
    values = {f.name: getattr(args, f.name) for f in fields(SandboxLimits) if f.name != "network"}
    return SandboxLimits(**values, network=args.network == "host")


def positive_int(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError("must be a positive whole number")
    return value


def positive_float(text: str) -> float:
    value = float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError("must be a positive number")
    return value


def existing_workdir(path: Path) -> Path:
    if not path.is_dir():
        raise ConfigError(f"workspace {str(path)!r} is not a directory")
    return path.resolve()


def writable_notebook(path: Path) -> Path:
    """Fail before the run, not after it, when the session notebook can't be written."""
    path = path.resolve()
    if path.suffix != ".ipynb":
        raise ConfigError(f"--out {str(path)!r} must end in .ipynb")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path.parent, prefix=".codeagent-check-"):
            pass
    except OSError as exc:
        raise ConfigError(f"cannot write {str(path)!r}: {exc.strerror or exc}") from None
    if path.is_dir():
        raise ConfigError(f"--out {str(path)!r} is a directory")
    return path


def read_notebook(path: Path) -> Any:
    import nbformat  # slow to import (schema validators): only when a notebook is read

    try:
        return nbformat.read(path, as_version=4)
    except FileNotFoundError:
        raise ConfigError(f"notebook {str(path)!r} not found") from None
    except Exception as exc:
        raise ConfigError(f"{str(path)!r} is not a readable notebook: {exc}") from None
