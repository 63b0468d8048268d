"""A real package index on 127.0.0.1 for the install tests: wheels and an sdist made here.

``make_wheel`` writes a valid wheel (``.dist-info`` with METADATA, WHEEL and a RECORD of
sha256 hashes) of a tiny generated project; ``make_sdist`` a source distribution whose
``setup.py`` would leave a marker file if anything ever ran it. ``PackageIndex`` lays them
out as a static PEP 503 simple index (``/simple/<name>/`` pages of links with ``#sha256=``)
and serves it with ``http.server`` on a free loopback port. Like PyPI it also answers the
PEP 691 JSON form of each project page (with each file's PEP 700 ``size``) and serves each
wheel's core metadata beside it (PEP 658/714), so pip resolves without fetching a wheel;
``json=False`` and ``metadata=False`` make a plain PEP 503 index. Every request is logged
(``log``: method and path), so a test can tell which wheel bodies were fetched.
"""

from __future__ import annotations

import base64
import hashlib
import html
import io
import json
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
    module: str | None = None,
) -> Path:
    """A pure-Python wheel of module ``name`` (its ``__init__`` is ``code``, by default one
    that knows its version); ``pad_bytes`` of incompressible data make it that much bigger.
    ``module``: the package folder when it is not named after the distribution."""
    dist = f"{name.replace('-', '_')}-{version}"
    module = module or name.replace("-", "_")
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


JSON_TYPE = "application/vnd.pypi.simple.v1+json"


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class PackageIndex:
    """A static PEP 503 index of the files in ``root/files``, served on 127.0.0.1.

    ``stated_sizes``: file name -> the size the JSON page claims (a lying index);
    ``unsized``: names served without ``Content-Length`` (the body ends at the close).
    """

    def __init__(self, root: Path, *, json: bool = True, metadata: bool = True) -> None:
        self.root = root
        self.files = root / "files"
        self.files.mkdir(parents=True, exist_ok=True)
        self.json = json
        self.metadata = metadata
        self.stated_sizes: dict[str, int] = {}
        self.unsized: set[str] = set()
        self.sent: dict[str, int] = {}
        """Body bytes written per file name (what a client that aborts did not read)."""
        self.sent_total: dict[str, int] = {}
        """Body bytes written per file name over all its requests."""
        self._server: ThreadingHTTPServer | None = None
        self.requests = 0
        self.log: list[tuple[str, str]] = []

    def add(self, path: Path) -> Path:
        """Publish ``path`` (a wheel or sdist made elsewhere) and rebuild the pages."""
        target = self.files / path.name
        if path != target:
            target.write_bytes(path.read_bytes())
        self.write_pages()
        return target

    def body_gets(self, name: str) -> int:
        """How many GETs asked for the body of the file ``name``."""
        return sum(1 for m, p in self.log if m == "GET" and p.endswith("/files/" + name))

    def write_pages(self) -> None:
        projects: dict[str, list[Path]] = {}
        for f in sorted(self.files.iterdir()):
            if f.name.endswith(".metadata"):
                continue
            stem = f.name.split("-")[0]
            projects.setdefault(_norm(stem), []).append(f)
        simple = self.root / "simple"
        simple.mkdir(exist_ok=True)
        links = "".join(f'<a href="{p}/">{p}</a>\n' for p in projects)
        (simple / "index.html").write_text(f"<!DOCTYPE html><html><body>{links}</body></html>")
        for project, files in projects.items():
            page = simple / project
            page.mkdir(exist_ok=True)
            anchors, entries = [], []
            for f in files:
                data = f.read_bytes()
                entry = {
                    "filename": f.name,
                    "url": f"../../files/{f.name}",
                    "hashes": {"sha256": _sha(data)},
                    "size": self.stated_sizes.get(f.name, len(data)),
                }
                extra = ""
                if self.metadata and f.suffix == ".whl":
                    meta = _wheel_metadata(data)
                    Path(f"{f}.metadata").write_bytes(meta)
                    digest = {"sha256": _sha(meta)}
                    entry["core-metadata"] = entry["dist-info-metadata"] = digest
                    value = f"sha256={digest['sha256']}"
                    extra = f' data-core-metadata="{value}" data-dist-info-metadata="{value}"'
                anchors.append(
                    f'<a href="../../files/{html.escape(f.name)}#sha256={_sha(data)}"{extra}>'
                    f"{html.escape(f.name)}</a>\n"
                )
                entries.append(entry)
            body = "".join(anchors)
            (page / "index.html").write_text(f"<!DOCTYPE html><html><body>{body}</body></html>")
            listing = {"meta": {"api-version": "1.1"}, "name": project, "files": entries}
            (page / "index.json").write_text(json.dumps(listing))

    def start(self) -> PackageIndex:
        index = self

        class Handler(_Quiet):
            def do_HEAD(self) -> None:
                index.log.append(("HEAD", self.path))
                super().do_HEAD()

            def do_GET(self) -> None:
                index.requests += 1
                index.log.append(("GET", self.path))
                name = self.path.rsplit("/", 1)[-1]
                if index.json and JSON_TYPE in self.headers.get("Accept", ""):
                    page = Path(self.translate_path(self.path)) / "index.json"
                    if self.path.endswith("/") and page.is_file():
                        return self._send(page.read_bytes(), JSON_TYPE)
                path = index.files / name
                if self.path.startswith("/files/") and path.is_file() and path.suffix == ".whl":
                    return self._file(path, sized=name not in index.unsized)
                super().do_GET()

            def _send(self, data: bytes, kind: str) -> None:
                self.send_response(200)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _file(self, path: Path, *, sized: bool) -> None:
                """A wheel's body in blocks; ``sent`` counts what went out before the client
                left. Unsized: no length (HTTP/1.0, the body ends when the connection does)."""
                self.send_response(200)
                self.send_header("Content-Type", "application/octet-stream")
                if sized:
                    self.send_header("Content-Length", str(path.stat().st_size))
                else:
                    self.send_header("Connection", "close")
                    self.close_connection = True
                index.sent[path.name] = 0  # before the headers: a client may leave at once
                self.end_headers()
                with path.open("rb") as f:
                    for block in iter(lambda: f.read(64 * 1024), b""):
                        try:
                            self.wfile.write(block)
                        except OSError:
                            self.close_connection = True
                            break
                        index.sent[path.name] += len(block)
                        total = index.sent_total.get(path.name, 0)
                        index.sent_total[path.name] = total + len(block)

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


def _wheel_metadata(data: bytes) -> bytes:
    """The METADATA file of the wheel ``data`` (what PEP 658 serves beside it)."""
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        [name] = [n for n in zf.namelist() if n.endswith(".dist-info/METADATA")]
        return zf.read(name)


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
    index.add(make_wheel(built, "sentronic-sdx", "1.0", module="sdxio"))
    index.add(make_wheel(built, "evilpkg", "1.0"))
    index.add(make_wheel(built, "bigpkg", "1.0", pad_bytes=3 * 1024 * 1024))
    index.add(make_sdist(built, "onlysrc", "1.0", marker))
    index.start()
    try:
        yield Served(index, marker, tmp_path / "cache")
    finally:
        index.stop()
