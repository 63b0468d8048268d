"""A ``--with`` upload waits for its sandbox where only that sandbox can read it.

The attack, for real: a second sandbox working in the same workspace (another session on
the same notebook, or the user's other agent) is told the exact path of the staged file
and searches everywhere it can write or read, while the file is staged. It finds nothing;
the sandbox the upload is for then loads it, and the file is gone.
"""

from __future__ import annotations

import os
import pickle
from pathlib import Path
from textwrap import dedent

import pytest

from codeagent_jupyter.sandbox import Sandbox, SandboxLimits, bubblewrap
from codeagent_jupyter.server.loader import loader_code, parse_loaded
from codeagent_jupyter.server.staging import _place, stage
from codeagent_jupyter.server.uploads import FORMATS, UploadStore
from tests.zygotes import lane_start

LIMITS = SandboxLimits(memory_mb=512, cell_timeout=20, max_processes=32)
SECRET = "hunter2-upload-bytes"

ATTACK = """
import glob, os
try:
    print('READ', open({path!r}, 'rb').read()[:40])
except OSError as e:
    print('blocked', type(e).__name__)
found = [os.path.join(r, f) for r, _, fs in os.walk('.') for f in fs]
for where in ('/tmp', {parent!r}, os.path.expanduser('~')):
    found += glob.glob(where + '/**/upload-*', recursive=True)
print('FOUND', found)
"""


def _upload(tmp_path: Path) -> list:
    store = UploadStore(tmp_path / "state", max_mb=1)
    data = pickle.dumps({"secret": SECRET}, protocol=5)
    upload = store.begin("alice", "data", "pickle")
    upload.path.write_bytes(data)
    upload.size = len(data)
    store.add(upload)
    return store.take("alice", [upload.id])


async def test_another_sandbox_cannot_read_a_staged_upload(tmp_path: Path) -> None:
    if bubblewrap.find() is None:
        pytest.skip("bubblewrap is not installed: no sandbox is confined here")
    workspace = tmp_path / "project"
    workspace.mkdir()
    uploads = _upload(tmp_path)
    async with (
        Sandbox(workspace, LIMITS, **lane_start(workspace)) as mine,
        Sandbox(workspace, LIMITS, **lane_start(workspace)) as other,
    ):
        for sandbox in (mine, other):
            assert sandbox.enforcement["filesystem"] == "bwrap", sandbox.enforcement
        staged = await stage(uploads, mine, FORMATS)
        try:
            path = staged.entries[0][2]
            r = await other.execute(dedent(ATTACK.format(path=path, parent=str(Path(path).parent))))
            assert r.status == "ok", r.text
            assert "blocked FileNotFoundError" in r.text and "FOUND []" in r.text, r.text
            assert SECRET not in r.text
            assert Path(path).stat().st_mode & 0o077 == 0  # owner-only, outside the workspace
            assert not Path(path).is_relative_to(workspace)

            loaded = await mine.execute(loader_code(staged.entries), store_history=False)
            assert parse_loaded(loaded, ["data"]) == ["data: dict (len 1)"]
            r = await mine.execute("print(data['secret'])")
            assert r.text.strip() == SECRET
            assert not Path(path).exists()  # the loader deleted it once read
        finally:
            staged.remove()


def test_a_staged_copy_never_writes_through_a_planted_link(tmp_path: Path) -> None:
    """Across file systems the file is copied: created exclusively, never through a link
    the sandbox (which can write its private directory) may have put at the name."""
    shm = Path("/dev/shm")
    if not shm.is_dir() or shm.stat().st_dev == tmp_path.stat().st_dev:
        pytest.skip("needs two file systems (/dev/shm and the temporary directory)")
    source = shm / f"codeagent-test-{os.getpid()}"
    source.write_bytes(b"x" * 300_000)
    target = tmp_path / "outside"
    private = tmp_path / "private"
    private.mkdir()
    (private / "planted").symlink_to(target)
    try:
        with pytest.raises(FileExistsError):
            _place(source, private, "planted")
        assert not target.exists()
        _place(source, private, "fresh")
        assert (private / "fresh").read_bytes() == b"x" * 300_000
        assert (private / "fresh").stat().st_mode & 0o777 == 0o600
    finally:
        source.unlink(missing_ok=True)
