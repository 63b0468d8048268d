"""Handing an upload to the one sandbox it is for, where no other sandbox can read it.

A sandbox of ours has a directory of its own: the provisioner's per-kernel directory
(``Sandbox.private_dir``, 0700, outside every workspace), which bubblewrap binds into
that sandbox alone. The upload is moved there under a random name, readable by its owner
only, and the loader deletes it as soon as it is read (the server deletes it too, whatever
happened). Another session's sandbox, even on the same workspace, has its own ``/tmp`` and
never sees the directory; the workspace, which all sandboxes of a notebook share, is never
used.

A sandbox without such a directory (a gateway kernel on another machine, another kernel
manager) gets the bytes through its own kernel connection instead: base64 in a series of
cells, written to a file it creates itself (``mkstemp``: 0600, in its own ``/tmp``, which
bubblewrap makes private to it), loaded and deleted the same way.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import errno
import os
import secrets
from pathlib import Path
from typing import Any

from .errors import ApiError

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


CHUNK = 3 << 20
"""Bytes per cell sent through a kernel: 4 MiB of base64, well under the 10 MiB a
WebSocket server (a kernel gateway's) accepts by default in one message."""
MARK = "CODEAGENT-STAGED "
OPEN = (
    "def _codeagent_open():\n"
    "    import os, tempfile\n"
    "    fd, path = tempfile.mkstemp(prefix='upload-')\n"
    "    globals()['_codeagent_staged'] = os.fdopen(fd, 'wb')\n"
    f"    print({MARK!r} + path)\n"
    "_codeagent_open()\n"
    "del _codeagent_open\n"
)
WRITE = "_codeagent_staged.write(__import__('binascii').a2b_base64('{}'))\n"
CLOSE = "_codeagent_staged.close()\ndel _codeagent_staged\n"


class Staged:
    """Files placed in one sandbox's private directory; ``remove`` deletes what is left."""

    def __init__(self, directory: Path | None) -> None:
        self.directory = directory
        self.names: list[str] = []
        self.entries: list[list[str]] = []
        """``[variable, format, absolute path as the sandbox sees it]`` for the loader."""

    def add(self, variable: str, fmt: str, source: Path, suffix: str) -> None:
        assert self.directory is not None, "staged through the kernel, not a directory"
        name = f"upload-{secrets.token_hex(16)}.{suffix}"
        _place(source, self.directory, name)
        self.names.append(name)
        self.entries.append([variable, fmt, str(self.directory / name)])

    def remove(self) -> None:
        if self.directory is None:  # sent through the kernel: the loader deletes it there
            return
        with contextlib.suppress(OSError):
            fd = os.open(self.directory, _DIR)
            try:
                for name in self.names:
                    with contextlib.suppress(OSError):
                        os.unlink(name, dir_fd=fd)
            finally:
                os.close(fd)


async def stage(uploads: list[Any], sandbox: Any, suffixes: dict[str, str]) -> Staged:
    """Place each upload (``.name``, ``.format``, ``.path``) where only ``sandbox`` can
    read it; ``ApiError`` (one line) when that fails."""
    directory = getattr(sandbox, "private_dir", None)
    staged = Staged(Path(directory) if directory is not None else None)
    try:
        for upload in uploads:
            if staged.directory is None:
                path = await send_through_kernel(upload.path, sandbox)
                staged.entries.append([upload.name, upload.format, path])
            else:
                await asyncio.to_thread(
                    staged.add, upload.name, upload.format, upload.path, suffixes[upload.format]
                )
    except OSError as e:
        staged.remove()
        raise ApiError(500, f"cannot hand the variables to the sandbox: {e.strerror}") from e
    return staged


async def send_through_kernel(source: Path, sandbox: Any) -> str:
    """Write ``source`` into a file the sandbox creates, a cell per ``CHUNK``; its path
    there. Slower than a file move (base64, a round trip per chunk) but it needs nothing
    but the kernel connection every sandbox has."""
    opened = await sandbox.execute(OPEN, store_history=False)
    path = _marked(opened)
    if path is None:
        raise ApiError(502, f"the sandbox could not receive the variables: {_why(opened)}")
    with open(source, "rb") as f:
        while chunk := await asyncio.to_thread(f.read, CHUNK):
            code = WRITE.format(base64.b64encode(chunk).decode("ascii"))
            written = await sandbox.execute(code, store_history=False)
            if written.status != "ok":
                raise ApiError(502, f"the sandbox could not receive the variables: {_why(written)}")
    await sandbox.execute(CLOSE, store_history=False)
    return path


def _marked(result: Any) -> str | None:
    for output in result.outputs:
        text = output.get("text", "") if output.get("output_type") == "stream" else ""
        for row in ("".join(text) if isinstance(text, list) else text).splitlines():
            if row.startswith(MARK):
                return row.removeprefix(MARK)
    return None


def _why(result: Any) -> str:
    lines = [x for x in (result.text or result.note or result.status).splitlines() if x.strip()]
    return (lines[-1] if lines else result.status)[:200]


def _place(source: Path, directory: Path, name: str) -> None:
    """Move ``source`` to ``directory/name`` (mode 0600), never writing through an entry
    the sandbox may have put there: a rename replaces a name without following it, and a
    copy (across file systems) creates a new file exclusively, without following links."""
    os.chmod(source, 0o600)  # in the server's state dir: no sandbox can swap it
    fd = os.open(directory, _DIR)
    try:
        try:
            os.rename(source, name, dst_dir_fd=fd)
            return
        except OSError as e:
            if e.errno != errno.EXDEV:
                raise
        out = os.open(name, _NEW, 0o600, dir_fd=fd)
        try:
            with open(source, "rb") as f:
                size = os.fstat(f.fileno()).st_size
                sent = 0
                while sent < size:
                    n = os.sendfile(out, f.fileno(), sent, size - sent)
                    if n == 0:
                        break
                    sent += n
        except BaseException:
            os.close(out)
            with contextlib.suppress(OSError):
                os.unlink(name, dir_fd=fd)
            raise
        os.close(out)
    finally:
        os.close(fd)
