"""The content store of fetched bodies: what a replay serves instead of the network.

The broker writes each complete plain-HTTP ``GET`` response body it relays into a folder on
the host, named by the body's sha256 in lower-case hex and nothing else, as the bytes pass
(streamed to a temporary file in the same folder while they are hashed, then renamed): a
body never sits in memory whole, and no name in the store comes from the sandbox or from a
session notebook. A body larger than the store's cap is not kept (the record says
``stored: false``). A replay reads a body back only by a recorded hex digest, and checks
the bytes against it before it sends them: a store someone edited is refused, not served.

The folder lives beside the snapshots (``.codeagent/fetched`` in the workspace, masked in
the sandbox like the rest of ``.codeagent``); on the server, one per owner.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from ..util.disk_budget import RESERVED

FETCHED = "fetched"
MIB = 1024 * 1024
DEFAULT_BODY_MB = 16.0
"""Bodies larger than this are recorded as not stored (``EgressPolicy.store_body_mb``)."""
WORKSPACE_BYTES = 2 << 30
"""The most a workspace's store holds; a body past it is recorded as not stored."""
_DIGEST = re.compile(r"^[0-9a-f]{64}$")
_READ = 256 * 1024


class Mismatch(Exception):
    """A stored body whose bytes are not the recorded digest's: one line saying so."""


class BodyStore:
    """A folder of bodies named by their sha256; ``max_body_bytes``: the largest kept;
    ``room(size)``: whether a body of ``size`` bytes still fits (the server's per-owner
    quota), asked before each body is kept."""

    def __init__(
        self,
        root: Path,
        max_body_bytes: int = int(DEFAULT_BODY_MB * MIB),
        room: Callable[[int], bool] | None = None,
    ) -> None:
        self.root = Path(root)
        self.max_body_bytes = max_body_bytes
        self.room = room
        self._bytes: int | None = None

    @classmethod
    def for_workspace(cls, workdir: Path, max_body_mb: float = DEFAULT_BODY_MB) -> BodyStore:
        """The store of a workspace: ``.codeagent/fetched``, beside its snapshots, holding
        at most ``WORKSPACE_BYTES`` in all (as its snapshot store does)."""
        store = cls(Path(workdir) / RESERVED / FETCHED, int(max_body_mb * MIB))
        store.room = lambda size: store.size() + size <= WORKSPACE_BYTES
        return store

    def writer(self) -> BodyWriter:
        """A writer for one body as it is relayed (nothing is created until its first byte)."""
        return BodyWriter(self)

    def path_of(self, digest: str) -> Path | None:
        """Where the body ``digest`` would be; None for anything but 64 lower-case hex
        digits (a digest is the only name a notebook can ask for: no path, no dot)."""
        if not isinstance(digest, str) or not _DIGEST.match(digest):
            return None
        return self.root / digest

    def has(self, digest: str) -> bool:
        path = self.path_of(digest)
        return path is not None and path.is_file()

    def open_verified(self, digest: str) -> tuple[BinaryIO, int]:
        """The body ``digest`` opened (a regular file, never through a link; the caller
        closes it) and its size, after its bytes were hashed and found to be ``digest``;
        ``Mismatch`` otherwise, ``FileNotFoundError`` when the store does not hold it. Blocks
        (it reads the whole body): run it off the event loop."""
        path = self.path_of(digest)
        if path is None:
            raise Mismatch(f"{digest[:80]!r} is not a sha256 digest")
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        file = os.fdopen(fd, "rb")
        try:
            if not stat.S_ISREG(os.fstat(file.fileno()).st_mode):
                raise FileNotFoundError(digest)
            hasher, size = hashlib.sha256(), 0
            while chunk := file.read(_READ):
                hasher.update(chunk)
                size += len(chunk)
            if hasher.hexdigest() != digest:
                raise Mismatch(f"the stored body {digest[:12]}… does not match its sha256")
            file.seek(0)
        except BaseException:
            file.close()
            raise
        return file, size

    def size(self) -> int:
        """Bytes the store holds (what the server counts against its owner's quota):
        counted once, then kept up to date as bodies are added."""
        if self._bytes is None:
            total = 0
            with contextlib.suppress(OSError):
                for entry in os.scandir(self.root):
                    if entry.is_file(follow_symlinks=False) and _DIGEST.match(entry.name):
                        total += entry.stat(follow_symlinks=False).st_size
            self._bytes = total
        return self._bytes

    def _added(self, size: int) -> None:
        if self._bytes is not None:
            self._bytes += size


class BodyWriter:
    """One body on its way into the store: ``write`` each chunk, then ``finish`` with the
    digest of exactly those bytes (the relay hashes them once, for the record and here)."""

    def __init__(self, store: BodyStore) -> None:
        self.store = store
        self.size = 0
        self.too_large = False
        self._file: BinaryIO | None = None
        self._name = ""

    def _open(self) -> BinaryIO:
        self.store.root.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd, self._name = tempfile.mkstemp(prefix=".part-", dir=self.store.root)
        return os.fdopen(fd, "wb")

    def write(self, chunk: bytes) -> None:
        """Add ``chunk``; past the store's cap the body is dropped (and only counted)."""
        self.size += len(chunk)
        if self.too_large:
            return
        if self.size > self.store.max_body_bytes:
            self.too_large = True
            self.discard()
            return
        try:
            if self._file is None:
                self._file = self._open()
            self._file.write(chunk)
        except OSError:
            self.too_large = True  # a full disk keeps nothing; the relay goes on
            self.discard()

    def finish(self, digest: str) -> str | None:
        """Keep the body under ``digest`` (its sha256, hex); the digest, or None when it
        was not kept."""
        if self.too_large or self.store.path_of(digest) is None:
            self.discard()
            return None
        known = self.store.has(digest)
        room = self.store.room
        if room is not None and not known and not room(self.size):
            self.discard()
            return None
        try:
            if self._file is None:  # an empty body: nothing was written yet
                self._file = self._open()
            self._file.close()
            os.replace(self._name, self.store.root / digest)
            self._file = None
        except OSError:
            self.discard()
            return None
        if not known:
            self.store._added(self.size)
        return digest

    def discard(self) -> None:
        """Drop what was written (a body cut short, too large, or not wanted)."""
        if self._file is not None:
            with contextlib.suppress(OSError):
                self._file.close()
            with contextlib.suppress(OSError):
                os.unlink(self._name)
            self._file = None
