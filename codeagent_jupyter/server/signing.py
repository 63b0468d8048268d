"""Only session notebooks this server wrote are loaded: each save is signed, each load checked.

A session notebook is an audit record and, after a restart, the source of a session's
owner and events; a notebook that sandbox code (or anyone but the server) wrote or edited
must never become a session. The signature is ``notary.Notary`` (nbformat's
``NotebookNotary``) with a secret kept in the server's state directory; nothing is written
into the notebook itself, and Jupyter's own trust database is left alone.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from ..record.notary import DB_FILE, SECRET_FILE, Notary

__all__ = ["DB_FILE", "SECRET_FILE", "SessionSigner", "UnsignedNotebook"]


class UnsignedNotebook(Exception):
    """A session notebook on disk is not one this server wrote."""


class SessionSigner(Notary):
    """Signs what the recorder saved and tells whether a file on disk is still that."""

    def __init__(self, state_dir: Path, log: logging.Logger | None = None) -> None:
        self.log = log or logging.getLogger(__name__)
        super().__init__(state_dir)
        if self.in_memory:  # the notary could not open its database
            self.log.warning(
                "codeagent: session signatures are kept in memory only (%s cannot be "
                "opened): sessions of this server life will not be loaded after a restart",
                state_dir / DB_FILE,
            )

    def verify(self, path: Path, text: str) -> str | None:
        """Why ``text`` (read from ``path``) must not be loaded, or None when it is what
        this server last saved there. The caller loads ``text`` itself, never a re-read
        of the file, so a swap after the check changes nothing."""
        refused = super().verify(path, text)
        if refused is not None and refused.startswith("not signed"):
            return "not signed by this server (written or changed by something else)"
        return refused

    def reopen(self, path: Path) -> Any:
        """A ``NotebookRecorder`` continuing ``path`` (signing each save), only when what it
        read is what this server signed: a file swapped since it was loaded is refused
        rather than extended and signed."""
        from ..record.recorder import NotebookRecorder

        recorder = NotebookRecorder(path, on_saved=self.saved)
        digest = self.digest_of(recorder.notebook)
        if not self.knows(digest):
            raise UnsignedNotebook(f"{path.name} was changed by something other than the server")
        self._last[path] = digest
        return recorder
