"""A real package index on 127.0.0.1 for the install tests: wheels and an sdist made here.

``make_wheel`` writes a valid wheel (``.dist-info`` with METADATA, WHEEL and a RECORD of
sha256 hashes) of a tiny generated project; ``make_sdist`` a source distribution whose
``setup.py`` would leave a marker file if anything ever ran it. ``PackageIndex`` lays them
out as a static PEP 503 simple index (``/simple/<name>/`` pages of links with ``#sha256=``)
and serves it with ``http.server`` on a free loopback port.
"""

from __future__ import annotations

import base64
import hashlib
import html
import io
import re
import tarfile
import threading
import zipfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def make_wheel(
    folder: Path,
    name: str,
    version: str,
    *,
    code: str | None = None,
    requires: Iterable[str] = (),
    pad_bytes: int = 0,
    extra_files: dict[str, str] | None = None,
) -> Path:
    """A pure-Python wheel of module ``name`` (its ``__init__`` is ``code``, by default one
    that knows its version); ``pad_bytes`` of incompressible data make it that much bigger."""
    module = name.replace("-", "_")
    dist = f"{module}-{version}"
    files: dict[str, bytes] = {
        f"{module}/__init__.py": (code or f"__version__ = {version!r}\n").encode(),
    }
    if pad_bytes:
        blob = hashlib.sha256(name.encode()).digest()
        chunks, total = [], 0
        seed = blob
        while total < pad_bytes:
            seed = hashlib.sha256(seed).digest()
            chunks.append(seed)
            total += len(seed)
        files[f"{module}/blob.bin"] = b"".join(chunks)[:pad_bytes]
    for path, text in (extra_files or {}).items():
        files[path] = text.encode()
    meta = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    meta += [f"Requires-Dist: {r}" for r in requires]
    files[f"{dist}.dist-info/METADATA"] = ("\n".join(meta) + "\n").encode()
    wheel = "Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    files[f"{dist}.dist-info/WHEEL"] = wheel.encode()
    record = [f"{p},{_record_hash(d)},{len(d)}" for p, d in files.items()]
    record.append(f"{dist}.dist-info/RECORD,,")
    files[f"{dist}.dist-info/RECORD"] = ("\n".join(record) + "\n").encode()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{dist}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for p, d in files.items():
            zf.writestr(p, d)
    return path


def make_sdist(folder: Path, name: str, version: str, marker: Path) -> Path:
    """A source distribution whose build code writes ``marker``: the proof that it ran."""
    base = f"{name.replace('-', '_')}-{version}"
    setup = (
        "import pathlib\n"
        f"pathlib.Path({str(marker)!r}).write_text('the build code of an sdist ran')\n"
        "from setuptools import setup\n"
        f"setup(name={name!r}, version={version!r})\n"
    )
    pkg_info = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{base}.tar.gz"
    with tarfile.open(path, "w:gz") as tf:
        for member, text in (("setup.py", setup), ("PKG-INFO", pkg_info)):
            data = text.encode()
            info = tarfile.TarInfo(f"{base}/{member}")
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return path


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


class PackageIndex:
    """A static PEP 503 index of the files in ``root/files``, served on 127.0.0.1."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.files = root / "files"
        self.files.mkdir(parents=True, exist_ok=True)
        self._server: ThreadingHTTPServer | None = None
        self.requests = 0

    def add(self, path: Path) -> Path:
        """Publish ``path`` (a wheel or sdist made elsewhere) and rebuild the pages."""
        target = self.files / path.name
        if path != target:
            target.write_bytes(path.read_bytes())
        self.write_pages()
        return target

    def write_pages(self) -> None:
        projects: dict[str, list[Path]] = {}
        for f in sorted(self.files.iterdir()):
            stem = f.name.split("-")[0]
            projects.setdefault(_norm(stem), []).append(f)
        simple = self.root / "simple"
        simple.mkdir(exist_ok=True)
        links = "".join(f'<a href="{p}/">{p}</a>\n' for p in projects)
        (simple / "index.html").write_text(f"<!DOCTYPE html><html><body>{links}</body></html>")
        for project, files in projects.items():
            page = simple / project
            page.mkdir(exist_ok=True)
            anchors = "".join(
                f'<a href="../../files/{html.escape(f.name)}#sha256='
                f'{hashlib.sha256(f.read_bytes()).hexdigest()}">{html.escape(f.name)}</a>\n'
                for f in files
            )
            (page / "index.html").write_text(f"<!DOCTYPE html><html><body>{anchors}</body></html>")

    def start(self) -> PackageIndex:
        index = self

        class Handler(_Quiet):
            def do_GET(self) -> None:
                index.requests += 1
                super().do_GET()

        self._server = ThreadingHTTPServer(
            ("127.0.0.1", 0), partial(Handler, directory=str(self.root))
        )
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    @property
    def port(self) -> int:
        assert self._server is not None
        return self._server.server_address[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/simple"

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None


@dataclass
class Served:
    """The index, where an sdist's build code would leave its mark, and a wheel cache."""

    index: PackageIndex
    marker: Path
    cache: Path

    @property
    def url(self) -> str:
        return self.index.url


@contextmanager
def served_index(tmp_path: Path) -> Iterator[Served]:
    """tinyapp 1.0 (needs tinydep and ``packaging``, which the kernel already has), tinydep
    1.0, evilpkg 1.0 (for the deny list), bigpkg 1.0 (3 MB), onlysrc 1.0 (an sdist only)."""
    built = tmp_path / "built"
    marker = tmp_path / "sdist-build-code-ran"
    index = PackageIndex(tmp_path / "index")
    index.add(make_wheel(built, "tinyapp", "1.0", requires=["tinydep>=1", "packaging>=20"]))
    index.add(make_wheel(built, "tinydep", "1.0"))
    index.add(make_wheel(built, "evilpkg", "1.0"))
    index.add(make_wheel(built, "bigpkg", "1.0", pad_bytes=3 * 1024 * 1024))
    index.add(make_sdist(built, "onlysrc", "1.0", marker))
    index.start()
    try:
        yield Served(index, marker, tmp_path / "cache")
    finally:
        index.stop()
