"""A session notebook on the command line is data, never authority (``resume``, ``replay``).

Notebooks are shared files: anyone may have edited the one being resumed. Nothing in it
widens what the sandbox gets. The limits are this command's (its flags, or the defaults),
lowered where the recording asks for less (``SandboxLimits.tightened_by``); the network is on
only with ``--network host``; the isolation is ``--isolation``; the workspace is ``--workdir``
or the current folder, and a notebook that says it ran elsewhere is refused without
``--workdir``, because resuming it "here" from another folder (a home directory, say) would
hand its cells a folder nobody chose.

The CLI signs the notebooks it writes (``notary.cli_notary``); one that is not signed, or was
changed since, is said in the first line of stderr and still runs: the sandbox is the
boundary, and the limits are this command's. The project's own demo, unchanged, is not a
shared file and is not warned about (``record.bundled``); it gets no more than any other.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..record.bundled import bundled_example
from ..record.notary import Notary
from .args import existing_workdir
from .output import warn


@dataclass
class SessionFile:
    """A notebook read once, with whether the CLI signed exactly this text."""

    path: Path
    text: str
    signed: bool
    bundled: bool = False
    """The project's own example, byte for byte (no warning; no authority either)."""

    def warning(self) -> str:
        return (
            f"codeagent: warning: {self.path.name} is not signed by codeagent on this machine "
            "(written elsewhere, or changed since): read as data only; the limits and the "
            "workspace are this command's"
        )

    def say_if_unsigned(self) -> None:
        """The first line of stderr, before the sandbox's, when the notebook is not ours."""
        if not self.signed and not self.bundled:
            warn(self.warning())


def read_session_file(path: Path, notary: Notary | None) -> SessionFile:
    """``path``'s text (read once: what is checked is what is used) and its signature."""
    if not path.is_file():
        raise ConfigError(f"session {str(path)!r} not found")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{str(path)!r} is not a readable notebook: {exc}") from None
    resolved = path.resolve()
    signed = notary is not None and notary.verify(resolved, text) is None
    return SessionFile(resolved, text, signed, bundled_example(text) is not None)


def parse_notebook(session: SessionFile) -> Any:
    """Any notebook (``replay`` re-executes plain ones too), from the text already read."""
    import nbformat  # slow to import (schema validators): only when a notebook is read

    try:
        return nbformat.reads(session.text, as_version=4)
    except Exception as exc:
        raise ConfigError(
            f"{str(session.path)!r} is not a readable notebook: {exc}".splitlines()[0]
        ) from None


def workspace(requested: Path | None, recorded: Path | None, name: str) -> Path:
    """``--workdir``, else the current folder, which must be the one the notebook names."""
    workdir = existing_workdir(Path.cwd() if requested is None else requested)
    if requested is None and recorded is not None and os.path.realpath(recorded) != str(workdir):
        raise ConfigError(
            f"{name} says it ran in {recorded}, not in the current folder {workdir}: resume "
            "it from that folder, or give --workdir to choose the folder it works in"
        )
    return workdir


def signing(notary: Notary | None) -> Callable[[Path, str], None] | None:
    """A recorder's ``on_saved`` that signs each save. A save never fails for it (another
    codeagent holding the database, a full disk): that notebook is then only unsigned, and
    its next resume says so."""
    if notary is None:
        return None

    def saved(path: Path, text: str) -> None:
        with contextlib.suppress(Exception):
            notary.saved(path.resolve(), text)

    return saved
