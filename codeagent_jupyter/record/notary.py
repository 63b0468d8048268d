"""Did codeagent write exactly this session notebook? Signatures kept beside, never inside.

nbformat's own ``NotebookNotary``: an HMAC of the whole notebook with a secret of ours, the
digests in its SQLite store. Nothing is written into the notebook, so a signed session stays
byte-for-byte what the recorder wrote. The secret and the store are codeagent's, never
Jupyter's trust database: a notebook signed there is *trusted* by JupyterLab, which then runs
the HTML and JavaScript in its outputs, and a session's outputs are what sandbox code printed.

The server keeps one notary in its state directory (``server/signing.py``); the CLI one in
the user's Jupyter data directory (``cli_notary``), so neither accepts the other's files.
"""

from __future__ import annotations

import base64
import json
import os
import sqlite3
from pathlib import Path
from typing import Any

SECRET_FILE = "signing_secret"
DB_FILE = "signatures.db"


class Notary:
    """Signs what a recorder saved and tells whether a text is still exactly that."""

    def __init__(self, state_dir: Path, *, durable: bool = True) -> None:
        """``durable=False``: commits are not flushed to disk (SQLite ``synchronous=OFF``),
        which takes a save's signing from tens of milliseconds to well under one; a power
        loss may then lose the last signatures (those notebooks read as unsigned)."""
        from nbformat.sign import NotebookNotary

        state_dir.mkdir(parents=True, exist_ok=True)
        os.chmod(state_dir, 0o700)  # the secret is written before the notary can chmod it
        # No parent: a Jupyter config's own NotebookNotary settings (often an in-memory
        # store) must not decide whether our signatures survive.
        self.notary = NotebookNotary(
            data_dir=str(state_dir),
            secret_file=str(state_dir / SECRET_FILE),
            db_file=str(state_dir / DB_FILE),
        )
        self.in_memory = self.notary.db_file == ":memory:"
        """True when the database could not be opened: signatures last this process only."""
        if not durable and not self.in_memory:
            self.notary.store.db.execute("PRAGMA synchronous = OFF")
        self._last: dict[Path, str] = {}

    def digest(self, text: str) -> str:
        """The notebook's HMAC, from its JSON text (the notary hashes plain dicts the same
        as notebook nodes, so no conversion is needed)."""
        notebook = json.loads(text)
        if not isinstance(notebook, dict) or not isinstance(notebook.get("metadata"), dict):
            raise ValueError("not a notebook")
        return self.digest_of(notebook)

    def digest_of(self, notebook: Any) -> str:
        return str(self.notary.compute_signature(notebook))

    def saved(self, path: Path, text: str) -> None:
        """A recorder's ``on_saved`` hook: trust exactly this content of ``path``.

        The previous version's digest is dropped, so an older copy of a session cannot be
        put back in place of the current one.
        """
        digest = self.digest(text)
        store, algorithm = self.notary.store, self.notary.algorithm
        store.store_signature(digest, algorithm)
        previous = self._last.get(path)
        if previous is not None and previous != digest:
            store.remove_signature(previous, algorithm)
        self._last[path] = digest

    def knows(self, digest: str) -> bool:
        return bool(self.notary.store.check_signature(digest, self.notary.algorithm))

    def verify(self, path: Path, text: str) -> str | None:
        """Why ``text`` (read from ``path``) is not what this notary signed, or None when it
        is. Callers go on with ``text`` itself, never a re-read of the file, so a swap after
        the check changes nothing."""
        try:
            digest = self.digest(text)
        except Exception as e:  # not JSON, not a notebook
            return f"cannot be read: {e}".splitlines()[0]
        if not self.knows(digest):
            return "not signed (written or changed by something else)"
        self._last[path] = digest
        return None

    def close(self) -> None:
        self.notary.close()


def cli_state_dir() -> Path:
    """Where the CLI's secret and signatures live (the server's are elsewhere)."""
    from jupyter_core.paths import jupyter_data_dir

    return Path(jupyter_data_dir()) / "codeagent" / "cli"


def ensure_cli_secret() -> None:
    """Make the CLI's signing secret now if it is new, without importing nbformat (up to a
    second and a half here, all of it on the sandbox's start path otherwise): it must exist
    before a sandbox starts, so that the sandbox hides it. ``NotebookNotary`` reads any
    bytes as its key; these are the form it writes itself. Where the folder cannot be made
    nothing happens (sessions then stay unsigned, as ``cli_notary`` says)."""
    folder = cli_state_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        os.chmod(folder, 0o700)
        fd = os.open(folder / SECRET_FILE, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError:  # there already, or no folder to make it in
        return
    with os.fdopen(fd, "wb") as f:
        f.write(base64.encodebytes(os.urandom(1024)))


def cli_notary() -> Notary | None:
    """The CLI's notary, in ``<Jupyter data dir>/codeagent/cli`` (the server's is apart);
    None where that folder cannot be made (a read-only home): sessions stay unsigned.

    Not durable: the CLI signs every step's save, and a lost signature costs only a warning
    on the next resume, where the server's would cost a session after a restart."""
    try:
        return Notary(cli_state_dir(), durable=False)
    except (OSError, sqlite3.Error):
        return None
