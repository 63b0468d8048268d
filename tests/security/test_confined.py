"""confined.Workspace on real files, through both resolutions: openat2 and per-component."""

from __future__ import annotations

import os
import socket
import stat
from pathlib import Path

import pytest

from codeagent_jupyter.util import confined
from codeagent_jupyter.util.confined import (
    OutsideError,
    SymlinkError,
    TooLargeError,
    UnsupportedFileError,
    Workspace,
)


@pytest.fixture(params=[True, False], ids=["openat2", "per-component"])
def ws(request: pytest.FixtureRequest, tmp_path: Path) -> Workspace:
    if request.param and confined._OPENAT2 is None:
        pytest.skip("this kernel has no openat2")
    root = tmp_path / "ws"
    (root / "a" / "b").mkdir(parents=True)
    (root / "a" / "b" / "f.txt").write_text("hello\n")
    (root / "top.txt").write_text("top\n")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text("SECRET\n")
    (root / "out").symlink_to(tmp_path / "outside")
    (root / "in").symlink_to(root / "a")
    (root / "top-link").symlink_to(root / "top.txt")
    workspace = Workspace(root, openat2=request.param)
    assert workspace.resolution == ("openat2" if request.param else "per-component")
    return workspace


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("/etc/passwd", r"outside the workspace \(absolute\)"),
        ("~root/x", r"outside the workspace \(absolute\)"),
        ("a/../../x", r"'\.\.' is not allowed"),
        ("a\x00b", "NUL"),
        (".codeagent/sessions/x.ipynb", r"is in \.codeagent/, the server's own state"),
        ("./.codeagent", r"is in \.codeagent/"),
    ],
)
def test_paths_that_leave_the_workspace(ws: Workspace, path: str, message: str):
    for call in (
        lambda: ws.read_bytes(path, 100),
        lambda: ws.write_bytes(path, b"x"),
        lambda: ws.stat(path),
        lambda: list(ws.walk(path)),
    ):
        with pytest.raises(OutsideError, match=message):
            call()


def test_reads_regular_files_and_bounds_them(ws: Workspace):
    assert ws.read_bytes("a/b/f.txt", 100) == b"hello\n"
    assert ws.read_bytes("./a//b/f.txt", 6) == b"hello\n"
    with pytest.raises(TooLargeError) as info:
        ws.read_bytes("a/b/f.txt", 5)
    assert info.value.size == 6
    with pytest.raises(IsADirectoryError):
        ws.read_bytes("a", 100)
    with pytest.raises(FileNotFoundError):
        ws.read_bytes("a/nope", 100)
    with pytest.raises(NotADirectoryError):
        ws.read_bytes("top.txt/x", 100)


@pytest.mark.parametrize("path", ["out/secret.txt", "in/b/f.txt", "top-link", "out"])
def test_symlinks_are_never_followed(ws: Workspace, path: str):
    with pytest.raises(SymlinkError, match="goes through a symlink"):
        ws.read_bytes(path, 100)
    with pytest.raises(SymlinkError):
        ws.write_bytes(path if "/" in path else f"{path}/new.txt", b"x")
    with pytest.raises(SymlinkError):
        ws.stat(path)
    assert not (ws.root.parent / "outside" / "new.txt").exists()
    assert (ws.root / "top-link").is_symlink()


def test_special_files_are_refused_without_blocking(ws: Workspace):
    os.mkfifo(ws.root / "fifo")
    with pytest.raises(UnsupportedFileError, match="'fifo' is a fifo, not a regular file"):
        ws.read_bytes("fifo", 100)
    with pytest.raises(UnsupportedFileError, match="is a fifo"):
        ws.write_bytes("fifo", b"x")
    assert stat.S_ISFIFO(ws.stat("fifo").st_mode)  # reported, not opened
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(ws.root / "sock"))
        with pytest.raises(UnsupportedFileError, match="socket"):
            ws.read_bytes("sock", 100)
    if os.geteuid() == 0:
        os.mknod(ws.root / "null", stat.S_IFCHR | 0o666, os.makedev(1, 3))
        with pytest.raises(UnsupportedFileError, match="device"):
            ws.read_bytes("null", 100)


def test_hard_linked_files_are_refused(ws: Workspace):
    secret = ws.root.parent / "outside" / "secret.txt"
    os.link(secret, ws.root / "hl.txt")
    with pytest.raises(UnsupportedFileError, match="has 2 hard links"):
        ws.read_bytes("hl.txt", 100)
    with pytest.raises(UnsupportedFileError, match="has 2 hard links"):
        ws.write_bytes("hl.txt", b"changed")
    assert secret.read_text() == "SECRET\n"


def test_writes_are_atomic_create_parents_and_keep_safe_mode(ws: Workspace):
    assert ws.write_bytes("new/deep/f.txt", b"1") is False
    assert (ws.root / "new/deep/f.txt").read_bytes() == b"1"
    script = ws.root / "run.sh"
    script.write_text("old")
    script.chmod(0o4755)  # setuid: kept out of a file the server rewrites
    assert ws.write_bytes("run.sh", b"new") is True
    assert script.read_text() == "new" and stat.S_IMODE(script.stat().st_mode) == 0o755
    with pytest.raises(IsADirectoryError):
        ws.write_bytes("a", b"x")
    with pytest.raises(IsADirectoryError):
        ws.write_bytes(".", b"x")
    with pytest.raises(NotADirectoryError):
        ws.write_bytes("top.txt/child", b"x")
    assert not [p for p in ws.root.rglob("*.tmp")]


def test_walk_reports_links_skips_and_is_bounded(ws: Workspace):
    (ws.root / ".git").mkdir()
    (ws.root / ".git" / "HEAD").write_text("x")
    (ws.root / ".codeagent" / "sessions").mkdir(parents=True)
    (ws.root / "a" / ".codeagent").mkdir()
    entries = {e.path: e.kind for e in ws.walk(".", skip=frozenset({".git"}))}
    assert entries == {
        "a": "dir",
        "a/.codeagent": "dir",  # only the top-level one is reserved
        "a/b": "dir",
        "a/b/f.txt": "file",
        "in": "symlink",
        "out": "symlink",
        "top-link": "symlink",
        "top.txt": "file",
    }
    assert [e.path for e in ws.walk("a")] == ["a/.codeagent", "a/b", "a/b/f.txt"]
    assert len(list(ws.walk(".", max_entries=3))) == 3
    with pytest.raises(SymlinkError):
        list(ws.walk("in"))
    with pytest.raises(NotADirectoryError):
        list(ws.walk("top.txt"))


def test_forcing_openat2_where_missing_is_an_error(tmp_path: Path):
    if confined._OPENAT2 is not None:
        assert Workspace(tmp_path, openat2=True).resolution == "openat2"
    else:
        with pytest.raises(ValueError, match="openat2 is not available"):
            Workspace(tmp_path, openat2=True)
    assert Workspace(tmp_path, openat2=False).resolution == "per-component"
