"""Only session notebooks this server wrote are loaded: each save is signed, each load checked.

A session notebook is an audit record and, after a restart, the source of a session's
owner and events; a notebook that sandbox code (or anyone but the server) wrote or edited
must never become a session. The signature is nbformat's own ``NotebookNotary``: an HMAC
of the whole notebook with a secret kept in the server's state directory, the digests in
its SQLite store. Nothing is written into the notebook itself, so a signed session stays
byte-for-byte what the recorder wrote, and Jupyter's own trust database is left alone.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

import nbformat
from nbformat.sign import NotebookNotary

SECRET_FILE = "signing_secret"
DB_FILE = "signatures.db"


class UnsignedNotebook(Exception):
    """A session notebook on disk is not one this server wrote."""


class SessionSigner:
    """Signs what the recorder saved and tells whether a file on disk is still that."""

    def __init__(self, state_dir: Path, log: logging.Logger | None = None) -> None:
        self.log = log or logging.getLogger(__name__)
        state_dir.mkdir(parents=True, exist_ok=True)
        os.chmod(state_dir, 0o700)  # the secret is written before the notary can chmod it
        # No parent: the server's own NotebookNotary config (often an in-memory store)
        # must not decide whether our signatures survive a restart.
        self.notary = NotebookNotary(
            data_dir=str(state_dir),
            secret_file=str(state_dir / SECRET_FILE),
            db_file=str(state_dir / DB_FILE),
        )
        if self.notary.db_file == ":memory:":  # the notary could not open its database
            self.log.warning(
                "codeagent: session signatures are kept in memory only (%s cannot be "
                "opened): sessions of this server life will not be loaded after a restart",
                state_dir / DB_FILE,
            )
        self._last: dict[Path, str] = {}

    def _digest(self, text: str) -> str:
        notebook = nbformat.from_dict(json.loads(text))
        return str(self.notary.compute_signature(notebook))

    def saved(self, path: Path, text: str) -> None:
        """The recorder's ``on_saved`` hook: trust exactly this content of ``path``.

        The previous version's digest is dropped, so an older copy of a session cannot be
        put back in place of the current one.
        """
        digest = self._digest(text)
        store, algorithm = self.notary.store, self.notary.algorithm
        store.store_signature(digest, algorithm)
        previous = self._last.get(path)
        if previous is not None and previous != digest:
            store.remove_signature(previous, algorithm)
        self._last[path] = digest

    def verify(self, path: Path, text: str) -> str | None:
        """Why ``text`` (read from ``path``) must not be loaded, or None when it is what
        this server last saved there. The caller loads ``text`` itself, never a re-read
        of the file, so a swap after the check changes nothing."""
        try:
            digest = self._digest(text)
        except Exception as e:  # not JSON, not a notebook
            return f"cannot be read: {e}".splitlines()[0]
        if not self.notary.store.check_signature(digest, self.notary.algorithm):
            return "not signed by this server (written or changed by something else)"
        self._last[path] = digest
        return None

    def reopen(self, path: Path) -> Any:
        """A ``NotebookRecorder`` continuing ``path`` (signing each save), only when what it
        read is what this server signed: a file swapped since it was loaded is refused
        rather than extended and signed."""
        from ..recorder import NotebookRecorder

        recorder = NotebookRecorder(path, on_saved=self.saved)
        digest = str(self.notary.compute_signature(recorder.notebook))
        if not self.notary.store.check_signature(digest, self.notary.algorithm):
            raise UnsignedNotebook(f"{path.name} was changed by something other than the server")
        self._last[path] = digest
        return recorder

    def close(self) -> None:
        self.notary.close()
