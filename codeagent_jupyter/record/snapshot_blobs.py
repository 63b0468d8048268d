"""The blobs of a snapshot store: file contents by SHA-256, compressed where that pays.

A workspace file's bytes are kept once under their hash. Content that compresses (a
zero-filled or sparse file, text, CSV) is kept zlib-compressed as ``<hash>.z``, so a
48 MiB file of zeros costs about 200 KiB; content that does not (already-compressed
images, Parquet, random bytes) is kept as it is, after compressing only its first MiB to
find out. Stores written before compression hold plain ``<hash>`` files; both are read.

What callers can rely on: ``get`` never inflates more than the size the manifest
recorded (plus one byte), so a damaged or planted ``.z`` file cannot exhaust memory, and
the caller checks the hash of what it gets; ``encode`` is the one place that decides the
stored form, so the bytes a blob will take are known before it is written (for quotas).
"""

from __future__ import annotations

import contextlib
import os
import zlib
from collections.abc import Iterator
from pathlib import Path

COMPRESSED = ".z"
"""Suffix of a compressed blob; a blob without it is the file's bytes as they are."""
PROBE = 1 << 20
"""Bytes compressed first to decide whether the rest is worth compressing."""
WORTH = 0.9
"""Kept compressed only if that takes less than this share of the original size."""
LEVEL = 1
"""zlib level: the fastest; zeros still shrink about 200-fold."""


def encode(data: bytes) -> tuple[bytes, bool]:
    """The bytes to store for ``data`` and whether they are compressed."""
    if len(data) < 64:
        return data, False
    packer = zlib.compressobj(LEVEL)
    head = packer.compress(data[:PROBE]) + packer.flush(zlib.Z_SYNC_FLUSH)
    if len(head) >= WORTH * min(len(data), PROBE):
        return data, False
    packed = head + packer.compress(data[PROBE:]) + packer.flush()
    return (packed, True) if len(packed) < WORTH * len(data) else (data, False)


class Blobs:
    """``objects/<2 hex>/<62 hex>[.z]`` below ``root``."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def _path(self, digest: str, compressed: bool) -> Path:
        name = digest[2:] + (COMPRESSED if compressed else "")
        return self.root / digest[:2] / name

    def has(self, digest: str) -> bool:
        return self._path(digest, True).exists() or self._path(digest, False).exists()

    def put(self, digest: str, payload: bytes, compressed: bool) -> None:
        """Write one blob atomically (temp file, then rename)."""
        path = self._path(digest, compressed)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_bytes(payload)
        os.replace(tmp, path)

    def get(self, digest: str, size: int) -> bytes:
        """The content of ``digest`` (``FileNotFoundError`` when it is not here); at most
        ``size + 1`` bytes are inflated, so the caller's hash check sees a damaged blob."""
        try:
            packed = self._path(digest, True).read_bytes()
        except FileNotFoundError:
            return self._path(digest, False).read_bytes()
        unpacker = zlib.decompressobj()
        try:
            return unpacker.decompress(packed, size + 1)
        except zlib.error:
            return b""  # damaged: the hash check says so

    def delete(self, digest: str) -> int:
        """Remove the blob (either form); the bytes it took."""
        freed = 0
        for compressed in (True, False):
            path = self._path(digest, compressed)
            with contextlib.suppress(FileNotFoundError):
                freed += path.stat().st_size
                path.unlink()
        return freed

    def sizes(self) -> Iterator[tuple[str, int]]:
        """``(digest, bytes on disk)`` of every blob (temp files left out)."""
        if not self.root.is_dir():
            return
        for folder in self.root.iterdir():
            if len(folder.name) != 2 or not folder.is_dir():
                continue
            for path in folder.iterdir():
                if path.name.startswith("."):
                    continue
                with contextlib.suppress(OSError):
                    yield folder.name + path.name.removesuffix(COMPRESSED), path.stat().st_size

    def size_of(self, digest: str) -> int:
        total = 0
        for compressed in (True, False):
            with contextlib.suppress(OSError):
                total += self._path(digest, compressed).stat().st_size
        return total
