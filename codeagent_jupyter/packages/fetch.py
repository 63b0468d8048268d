"""Wheels fetched in the server with httpx: sizes known before the download, a cap kept
during it, and a file used only under the sha256 it was resolved with.

``stated_sizes`` asks the index's project page in its PEP 691 JSON form for each file's
PEP 700 ``size`` (pip has just read the same page; an index that answers HTML states no
size). ``Fetcher.fetch`` streams one wheel into the plan's staging folder (beside the
shared cache, not in it: a plan that is refused or denied leaves nothing behind; an
install moves its files into the cache): refused before a byte of the body is read when
the response's ``Content-Length`` is over what is left of the cap, and cut off the moment
a body without one (or a lying one) passes it; the file is hashed while it is written and
kept only under the expected digest. A wheel from a ``find_links`` folder (a ``file:``
URL) is copied in, the same checks applied.

The client passes proxies and certificate settings from the environment, as pip's does.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path
from urllib.parse import unquote, urlsplit
from urllib.request import url2pathname

import httpx

from ..errors import ToolError
from .cache import plain_filename

MB = 1024 * 1024
JSON_PAGE = "application/vnd.pypi.simple.v1+json"
TIMEOUT = httpx.Timeout(30.0, read=120.0)
_BLOCK = 256 * 1024


class OverLimit(ToolError):
    """A download that would take more than the policy's ``max_mb``."""


class HashMismatch(ToolError):
    """A file whose sha256 is not the one it was resolved (or recorded) with."""


def over_limit(size: int, max_mb: float) -> OverLimit:
    return OverLimit(
        f"install_packages: the download is {size / MB:.1f} MB, over this server's limit of "
        f"{max_mb:g} MB"
    )


def client(proxy: str | None = None) -> httpx.AsyncClient:
    """One client per install call (connections reused across its files); with ``proxy``
    every request goes through it, whatever the environment says."""
    if proxy is not None:
        return httpx.AsyncClient(
            timeout=TIMEOUT, follow_redirects=True, proxy=proxy, trust_env=False
        )
    return httpx.AsyncClient(timeout=TIMEOUT, follow_redirects=True, trust_env=True)


async def stated_sizes(http: httpx.AsyncClient, index_url: str, project: str) -> dict[str, int]:
    """File name -> size, as the index's PEP 691 page of ``project`` states them; {} when
    the index has no JSON form (or no such page, or says nothing usable)."""
    if urlsplit(index_url).scheme not in ("http", "https"):
        return {}
    page = index_url.rstrip("/") + "/" + project + "/"
    try:
        response = await http.get(page, headers={"Accept": JSON_PAGE})
    except httpx.HTTPError:
        return {}
    kind = response.headers.get("content-type", "").split(";")[0].strip()
    if response.status_code != 200 or kind != JSON_PAGE:
        return {}
    try:
        files = response.json().get("files", [])
    except ValueError:
        return {}
    sizes = {}
    for item in files if isinstance(files, list) else []:
        if not isinstance(item, dict):
            continue
        name, size = item.get("filename"), item.get("size")
        if isinstance(name, str) and isinstance(size, int) and not isinstance(size, bool):
            sizes[name] = size
    return sizes


def filename_of(url: str) -> str:
    """The wheel's file name from its URL (``ValueError`` if it is not a plain one)."""
    return plain_filename(unquote(urlsplit(url).path.rsplit("/", 1)[-1]))


class Fetcher:
    """Fetches wheels into the folder ``staging``; ``local_roots``: folders a ``file:`` URL
    may be in (the file itself, links resolved, must lie in one)."""

    def __init__(self, staging: Path, local_roots: list[Path]) -> None:
        self.staging = staging
        self.local_roots = [Path(os.path.realpath(r)) for r in local_roots]

    async def fetch(
        self, http: httpx.AsyncClient, url: str, sha256: str, *, room: int, max_mb: float
    ) -> Path:
        """The wheel at ``url`` in the staging folder, verified as ``sha256`` (when given;
        else the file's own digest); at most ``room`` bytes are read (``OverLimit`` past
        them)."""
        try:
            filename = filename_of(url)
        except ValueError as e:
            raise ToolError(f"install_packages: the index's link {url[:120]!r}: {e}") from None
        if urlsplit(url).scheme == "file":
            return self._local(url, filename, sha256, room, max_mb)
        partial_fd, partial = tempfile.mkstemp(dir=self.staging, suffix=".part")
        sha, read = hashlib.sha256(), 0
        try:
            with os.fdopen(partial_fd, "wb") as out:
                async with http.stream("GET", url) as response:
                    if response.status_code != 200:
                        raise ToolError(
                            f"install_packages: the index answered {response.status_code} "
                            f"for {filename}"
                        )
                    length = response.headers.get("content-length", "")
                    if length.isdigit() and int(length) > room:
                        raise over_limit(int(length) + _used(room, max_mb), max_mb)
                    async for block in response.aiter_raw(_BLOCK):
                        read += len(block)
                        if read > room:
                            raise over_limit(read + _used(room, max_mb), max_mb)
                        sha.update(block)
                        out.write(block)
            _check(filename, sha.hexdigest(), sha256)
            return self._keep(Path(partial), filename)
        except httpx.HTTPError as e:
            raise ToolError(f"install_packages: could not fetch {filename}: {e}") from None
        finally:
            Path(partial).unlink(missing_ok=True)

    def _local(self, url: str, filename: str, sha256: str, room: int, max_mb: float) -> Path:
        path = Path(os.path.realpath(url2pathname(urlsplit(url).path)))
        if not any(path.is_relative_to(root) for root in self.local_roots):
            raise ToolError(f"install_packages: {filename} is not in a wheel folder of the policy")
        size = path.stat().st_size
        if size > room:
            raise over_limit(size + _used(room, max_mb), max_mb)
        partial_fd, partial = tempfile.mkstemp(dir=self.staging, suffix=".part")
        sha = hashlib.sha256()
        try:
            with os.fdopen(partial_fd, "wb") as out, path.open("rb") as source:
                for block in iter(lambda: source.read(_BLOCK), b""):
                    sha.update(block)
                    out.write(block)
            _check(filename, sha.hexdigest(), sha256)
            return self._keep(Path(partial), filename)
        finally:
            Path(partial).unlink(missing_ok=True)

    def _keep(self, partial: Path, filename: str) -> Path:
        target = self.staging / plain_filename(filename)
        os.replace(partial, target)
        return target


def _used(room: int, max_mb: float) -> int:
    """Bytes of the cap already taken by earlier files of the call."""
    return max(int(max_mb * MB) - room, 0)


def _check(filename: str, digest: str, expected: str) -> None:
    if expected and digest != expected:
        raise HashMismatch(
            f"install_packages: {filename} has sha256 {digest[:12]}…, not the "
            f"{expected[:12]}… it was resolved with; refusing it"
        )
