"""``POST /codeagent/api/uploads``: the user's variables, on their way into a sandbox.

``%agent --with df`` serializes ``df`` in the user's kernel (Parquet for a DataFrame when
pyarrow is there, else pickle protocol 5) and streams the bytes here; the answer's ``id``
goes into ``POST /sessions`` as ``uploads``. The server only stores bytes: nothing here or
anywhere in the server unpickles them. They are unpickled in the sandbox, the place that
already runs untrusted code, and only the other way round (sandbox → user) is refused.

Uploads are capped (``c.CodeAgent.max_upload_mb``): a larger Content-Length is answered 413
before any byte is read, a chunked body is cut off at the cap. The body is streamed to a
file in the server's own state dir (outside every workspace) with its SHA-256 checked.
A user has at most ``MAX_PENDING`` uploads at once, stored or still arriving: the slot is
taken when the upload begins (before its first byte), in the same step that counts the
slots taken, and given back if the upload fails, so the bound on the server's disk
(``MAX_PENDING`` times ``max_upload_mb`` per user) holds however many arrive together.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import re
import secrets
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jupyter_core.utils import ensure_async
from tornado import web

from .errors import ApiError
from .handlers import BaseHandler
from .loader import loader_code, parse_loaded
from .staging import stage

FORMATS = {"parquet": "parquet", "pickle": "pkl"}
MAX_PENDING = 20
"""Uploads one user may have waiting for a session (each up to the cap): a disk bound."""
MAX_AGE_S = 3600.0
"""Uploads never claimed by a session are dropped after this long."""
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,79}$")
_SHA = re.compile(r"^[0-9a-f]{64}$")


@dataclass
class Upload:
    """One stored upload, owned by the user who sent it."""

    id: str
    owner: str
    name: str
    format: str
    path: Path
    size: int = 0
    created: float = 0.0

    def info(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "format": self.format, "bytes": self.size}


class UploadStore:
    """Uploads by id, until a session takes them (or they expire)."""

    def __init__(self, directory: Path, max_mb: float) -> None:
        self.directory = Path(directory)
        self.max_mb = max_mb
        self.max_bytes = int(max_mb * 1024 * 1024)
        self.uploads: dict[str, Upload] = {}
        """Stored uploads, waiting for a session."""
        self.arriving: dict[str, Upload] = {}
        """Uploads begun whose body is still arriving: each holds its owner's slot."""

    def begin(self, owner: str, name: str, fmt: str) -> Upload:
        """Reserve one of ``owner``'s slots (429 when all are taken) for a new upload.

        Synchronous, with no wait between the count and the reservation: on the server's
        one event loop no other upload can begin in between."""
        self.expire()
        held = (*self.uploads.values(), *self.arriving.values())
        taken = sum(1 for u in held if u.owner == owner)
        if taken >= MAX_PENDING:
            raise ApiError(
                429,
                f"{MAX_PENDING} uploads are already waiting for a session or arriving; "
                "start a session first",
            )
        self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        upload_id = secrets.token_hex(16)
        path = self.directory / f"{upload_id}.{FORMATS[fmt]}"
        upload = Upload(upload_id, owner, name, fmt, path, created=time.time())
        self.arriving[upload_id] = upload
        return upload

    def add(self, upload: Upload) -> None:
        """The upload arrived whole: it keeps its slot until a session takes it."""
        self.arriving.pop(upload.id, None)
        self.uploads[upload.id] = upload

    def expire(self) -> None:
        now = time.time()
        for upload in [u for u in self.uploads.values() if now - u.created > MAX_AGE_S]:
            self.discard([upload])

    def discard(self, uploads: list[Upload]) -> None:
        """Forget ``uploads`` (stored or arriving) and delete their files: slots freed."""
        for upload in uploads:
            self.uploads.pop(upload.id, None)
            self.arriving.pop(upload.id, None)
            with contextlib.suppress(OSError):
                upload.path.unlink()

    def names(self, owner: str, ids: list[str]) -> list[str]:
        """The variable names of the caller's waiting uploads ``ids`` (unknown ids skipped:
        ``take`` refuses them)."""
        found = (self.uploads.get(i) for i in ids)
        return [u.name for u in found if u is not None and u.owner == owner]

    def take(self, owner: str, ids: list[str], budget_mb: int | None = None) -> list[Upload]:
        """The caller's uploads ``ids`` (404 for unknown or someone else's), now claimed.

        Staged, they are files the sandbox holds, so together they must fit its disk
        budget ``budget_mb``: 413, before any is claimed, when they do not."""
        chosen = []
        for upload_id in ids:
            upload = self.uploads.get(upload_id)
            if upload is None or upload.owner != owner:
                raise ApiError(404, f"no upload {upload_id}; upload the variable again")
            chosen.append(upload)
        names = [u.name for u in chosen]
        if len(set(names)) != len(names):
            raise ApiError(400, "two uploads have the same variable name")
        total = sum(u.size for u in chosen)
        if budget_mb is not None and total > budget_mb * 1024 * 1024:
            raise ApiError(
                413,
                f"the uploaded variables ({total / 1048576:.1f} MiB) would pass the sandbox's "
                f"disk budget of {budget_mb} MiB (disk_mb); not staged",
            )
        for upload in chosen:
            del self.uploads[upload.id]
        return chosen

    async def load(self, uploads: list[Upload], sandbox: Any) -> list[str]:
        """Define each upload under its name in ``sandbox``; one line per variable for the
        model (what was loaded, or why not). The files are handed over where only that
        sandbox can read them (``staging``) and deleted either way."""
        if not uploads:
            return []
        staged = None
        try:
            staged = await stage(uploads, sandbox, FORMATS)
            result = await sandbox.execute(loader_code(staged.entries), store_history=False)
        finally:
            if staged is not None:
                await asyncio.to_thread(staged.remove)
            self.discard(uploads)
        return parse_loaded(result, [u.name for u in uploads])


@web.stream_request_body
class UploadHandler(BaseHandler):
    """Streams one variable's bytes to a file; 413 over the cap, 400 on a bad checksum."""

    upload: Upload | None = None
    file: Any = None
    done = False

    async def prepare(self) -> None:  # type: ignore[override]
        await super().prepare()  # authentication: 403 before any byte is read
        allowed = await ensure_async(
            self.authorizer.is_authorized(self, self.current_user, "write", self.auth_resource)
        )
        if not self.current_user or not allowed:
            raise ApiError(403, "not authorized to upload")
        store: UploadStore = self.manager.uploads
        name, fmt = self.get_query_argument("name", ""), self.get_query_argument("format", "")
        self.expected = self.get_query_argument("sha256", "")
        if not _NAME.match(name):
            raise ApiError(400, "name must be a Python identifier (at most 80 characters)")
        if fmt not in FORMATS:
            raise ApiError(400, f"format must be one of: {', '.join(FORMATS)}")
        if not _SHA.match(self.expected):
            raise ApiError(400, "sha256 must be the 64 hex digits of the body's SHA-256")
        length = self.request.headers.get("Content-Length")
        if length is not None and (not length.isdigit() or int(length) > store.max_bytes):
            raise ApiError(413, _too_big(name, store.max_mb))
        self.request.connection.set_max_body_size(store.max_bytes + 1)
        self.upload = store.begin(self.owner, name, fmt)
        self.hash = hashlib.sha256()
        self.file = open(self.upload.path, "wb")  # noqa: SIM115  (closed in post/on_finish)
        os.chmod(self.upload.path, 0o600)

    def data_received(self, chunk: bytes) -> None:
        """Stream to the file; past the cap (a body without Content-Length) stop keeping it
        (tornado cuts the connection a byte later: ``set_max_body_size``)."""
        assert self.upload is not None
        self.upload.size += len(chunk)
        if self.upload.size > self.manager.uploads.max_bytes:
            self._drop()
            return
        self.hash.update(chunk)
        self.file.write(chunk)

    async def post(self) -> None:
        assert self.upload is not None
        self.file.close()
        if self.upload.size > self.manager.uploads.max_bytes:
            raise ApiError(413, _too_big(self.upload.name, self.manager.uploads.max_mb))
        if self.hash.hexdigest() != self.expected:
            self._drop()
            raise ApiError(400, f"{self.upload.name}: the body does not match its sha256")
        self.manager.uploads.add(self.upload)
        self.done = True
        self.reply(self.upload.info(), status=201)

    def _drop(self) -> None:
        """Forget a partial or refused upload (its file too); a stored one stays."""
        if self.file is not None:
            self.file.close()
        if self.upload is not None and not self.done:
            self.manager.uploads.discard([self.upload])

    def on_finish(self) -> None:
        self._drop()

    def on_connection_close(self) -> None:
        self._drop()
        super().on_connection_close()


def _too_big(name: str, max_mb: float) -> str:
    return f"{name} is larger than the upload limit of {max_mb:g} MB (c.CodeAgent.max_upload_mb)"


def routes() -> list[tuple[str, type]]:
    return [("/codeagent/api/uploads", UploadHandler)]
