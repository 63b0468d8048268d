"""Change sets from real snapshot stores of real workspaces: kinds, bounds, steps, and the
confined removal a revert uses. (Sessions with the scripted model: tests/cli, tests/server.)"""

from __future__ import annotations

import io
import os
import re
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook
from PIL import Image

from codeagent_jupyter.errors import ConfigError
from codeagent_jupyter.record.changes import (
    DIFF_LINES,
    READ_MAX,
    NoSnapshots,
    session_changes,
)
from codeagent_jupyter.record.changes_text import markdown, terminal
from codeagent_jupyter.record.snapshots import SnapshotSettings, SnapshotStore
from codeagent_jupyter.util.confined import ConfinementError, Workspace
from codeagent_jupyter.util.confined_remove import remove_file


class Session:
    """A workspace, its store, and the notebook's snapshot list, captured as the sink does."""

    def __init__(self, root: Path, settings: SnapshotSettings | None = None) -> None:
        self.ws = root / "ws"
        self.ws.mkdir()
        self.store = SnapshotStore.for_workspace(self.ws, settings)
        self.meta: dict[str, Any] = {"session_id": "s1", "snapshots": []}

    def capture(self, step: int, run: int = 0) -> None:
        entries = self.meta["snapshots"]
        previous = entries[-1]["snapshot"] if entries else None
        entry = {"run": run, "step": step, "tool_call_id": f"c{step}"}
        entries.append(entry | self.store.capture(self.ws, previous).to_dict())

    def changes(self, **kw: Any) -> Any:
        return session_changes(self.meta, self.store, **kw)


def _image(fmt: str, size: tuple[int, int]) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", size, (200, 30, 30)).save(out, format=fmt)
    return out.getvalue()


def test_each_kind_of_file_is_described(tmp_path: Path) -> None:
    s = Session(tmp_path)
    (s.ws / "report.py").write_text("a = 1\nb = 2\nc = 3\n")
    (s.ws / "data.bin").write_bytes(b"\x00\x01" * 50)
    nbformat.write(new_notebook(cells=[new_code_cell("x = 1", id="c1")]), s.ws / "nb.ipynb")
    s.capture(0)
    (s.ws / "report.py").write_text("a = 1\nb = 20\nc = 3\nd = 4\n")
    (s.ws / "clean.csv").write_text("id,v\n" + "".join(f"{i},{i}\n" for i in range(57)))
    (s.ws / "data.bin").write_bytes(b"\x00\x02" * 60)
    notebook = new_notebook(
        cells=[new_code_cell("x = 2", id="c1"), new_markdown_cell("# New", id="m1")]
    )
    nbformat.write(notebook, s.ws / "nb.ipynb")
    for name, fmt, size in (("a.png", "PNG", (64, 32)), ("b.jpg", "JPEG", (33, 17))):
        (s.ws / name).write_bytes(_image(fmt, size))
    (s.ws / "c.gif").write_bytes(_image("GIF", (5, 9)))
    s.capture(1)
    changes = s.changes()
    found = {f.path: f for f in changes.files}
    assert changes.summary() == (
        "7 files changed: a.png (new), b.jpg (new), c.gif (new), clean.csv (new, 57 rows), "
        "data.bin (changed, 100 bytes \u2192 120 bytes), nb.ipynb (2 cells changed), "
        "report.py (+2 \u22121)"
    )
    assert {
        p: (f.found.image if f.found else None) for p, f in found.items() if f.kind == "image"
    } == {
        "a.png": {"format": "png", "width": 64, "height": 32},
        "b.jpg": {"format": "jpeg", "width": 33, "height": 17},
        "c.gif": {"format": "gif", "width": 5, "height": 9},
    }
    assert found["nb.ipynb"].found.cells == [
        "~ cell 1 (code) changed: x = 2",
        "+ cell 2 (markdown) added: # New",
    ]
    assert found["report.py"].found.diff[2:] == [
        "@@ -1,3 +1,4 @@",
        " a = 1",
        "-b = 2",
        "+b = 20",
        " c = 3",
        "+d = 4",
    ]
    assert found["data.bin"].kind == "binary" and not found["data.bin"].found.diff
    assert found["a.png"].thumbnail is None  # only when asked (the panel)
    assert s.changes(thumbnails=True).files[0].thumbnail.startswith("data:image/png;base64,")


def test_a_long_diff_is_cut_and_says_so(tmp_path: Path) -> None:
    s = Session(tmp_path)
    s.capture(0)
    (s.ws / "long.txt").write_text("".join(f"line {i}\n" for i in range(1000)))
    s.capture(1)
    change = s.changes().files[0]
    assert change.brief() == "new, 1000 lines"
    assert len(change.found.diff) == DIFF_LINES and change.found.cut == DIFF_LINES
    assert change.found.added == 1000  # counted whole, shown cut
    assert terminal(s.changes()).endswith(f"[diff cut at {DIFF_LINES} lines]")
    assert f"[diff cut at {DIFF_LINES} lines]" in markdown(s.changes())


def test_big_files_cost_their_manifest_entry_only(tmp_path: Path) -> None:
    s = Session(tmp_path, SnapshotSettings(large_file_bytes=8 << 20))
    with open(s.ws / "huge.bin", "wb") as f:
        f.truncate(1 << 30)  # 1 GiB, sparse: referenced by the store, never read
    (s.ws / "medium.csv").write_text("x\n" * (READ_MAX // 2 + 10))  # stored, over READ_MAX
    s.capture(0)
    with open(s.ws / "huge.bin", "r+b") as f:
        f.truncate((1 << 30) + 4096)
    (s.ws / "medium.csv").write_text("y\n" * (READ_MAX // 2 + 10))
    s.capture(1)
    for blob in (s.store.root / "objects").rglob("*"):
        if blob.is_file():
            blob.unlink()  # a change set that read a blob would now say it is missing
    found = {f.path: f for f in s.changes().files}
    assert found["huge.bin"].kind == "large"
    assert found["huge.bin"].brief() == "changed, 1.1 GB \u2192 1.1 GB"
    assert found["medium.csv"].kind == "large"
    assert found["medium.csv"].note == "too big to diff: sizes only"
    assert not found["huge.bin"].revertible  # only referenced: there is no copy to put back
    assert found["medium.csv"].revertible


def test_steps_and_their_errors(tmp_path: Path) -> None:
    s = Session(tmp_path)
    s.capture(0)
    (s.ws / "a.txt").write_text("a\n")
    s.capture(1)
    (s.ws / "b.txt").write_text("b\n")
    s.capture(2)
    (s.ws / "a.txt").write_text("A\n")
    s.capture(1, run=1)  # a follow-up run's step 1
    steps = [(0, 1), (0, 2), (0, 3), (1, 1)]
    assert [f.path for f in s.changes(step=2, steps=steps).files] == ["b.txt"]
    step1 = s.changes(step=1, steps=steps)
    assert (step1.run, [f.brief() for f in step1.files]) == (1, ["+1 \u22121"])
    assert s.changes(step=3, steps=steps).notes == ["step 3 ran no code: no files changed in it"]
    with pytest.raises(ConfigError, match=r"step 4 is not in this session \(its steps: 1, 2, 3\)"):
        s.changes(step=4, steps=steps)
    assert s.changes().summary() == "2 files changed: a.txt (new, 1 line), b.txt (new, 1 line)"
    with pytest.raises(NoSnapshots):
        session_changes({"snapshots": [{"run": 0, "step": 0, "error": "full"}]}, s.store)
    with pytest.raises(NoSnapshots, match="is not in"):
        session_changes({"snapshots": [{"snapshot": "ab" * 16}]}, s.store)


def test_contents_cannot_break_out_of_the_notebook_cell(tmp_path: Path) -> None:
    s = Session(tmp_path)
    s.capture(0)
    hostile = "```\n</details><img src=x onerror=alert(1)>\n````\n"
    (s.ws / "<b>bold.md").write_text(hostile)
    s.capture(1)
    cell = markdown(s.changes())
    fence = re.search(r"\n(`{3,})diff\n", cell).group(1)
    assert len(fence) == 5  # longer than the content's longest run of backticks (4)
    assert cell.count(fence) == 2
    assert "<code>&lt;b&gt;bold.md</code>" in cell


def test_remove_file_is_confined(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    outside = tmp_path / "outside"
    for folder in (ws / "sub", outside):
        folder.mkdir(parents=True)
    (outside / "keep.txt").write_text("keep")
    (ws / "sub" / "made.txt").write_text("made")
    os.symlink(outside, ws / "linked")
    os.symlink(outside / "keep.txt", ws / "link.txt")
    os.mkfifo(ws / "queue")
    workspace = Workspace(ws)
    remove_file(workspace, "sub/made.txt")
    assert not (ws / "sub" / "made.txt").exists()
    for path in ("linked/keep.txt", "link.txt", "queue", "sub", "../outside/keep.txt"):
        with pytest.raises((ConfinementError, IsADirectoryError, OSError)):
            remove_file(workspace, path)
    assert (outside / "keep.txt").read_text() == "keep" and os.path.islink(ws / "link.txt")
    with pytest.raises(FileNotFoundError):
        remove_file(workspace, "sub/made.txt")


def test_the_network_summary_counts_requests_hosts_bytes_and_refusals() -> None:
    from codeagent_jupyter.record.changes import ChangeSet
    from codeagent_jupyter.record.changes_network import network_of

    def request(url: str, allowed: bool, down: Any = 100) -> dict[str, Any]:
        entry = {"type": "network_request", "url": url, "allowed": allowed, "bytes_up": 50}
        return {**entry, "bytes_down": down}

    events = [
        request("http://data.test:8080/a.csv?x=1", True),
        request("data.test:443", True, 1500),
        request("http://<img src=x onerror=1>.test/", False, "lots"),  # a hostile, malformed record
        request("http://[::1]:80/", False, True),
        {"type": "run_started"},
        "not an entry",
    ]
    summary = network_of({"events": events})
    assert summary is not None and (summary.requests, summary.refused) == (4, 2)
    assert summary.hosts == ["data.test", "<img src=x onerror=1>.test", "[::1]"]
    assert summary.denied == ["<img src=x onerror=1>.test", "[::1]"]
    assert (summary.bytes_up, summary.bytes_down) == (200, 1600)
    assert summary.line() == (
        "Network: 4 requests (2 refused) to data.test, <img src=x onerror=1>.test, [::1]; "
        "1.6 kB in, 200 bytes out; refused: <img src=x onerror=1>.test, [::1]"
    )
    assert network_of({"events": [{"type": "run_started"}]}) is None
    cell = markdown(ChangeSet(network=summary))
    assert "<img" not in cell and "&lt;img src=x onerror=1&gt;.test" in cell
    assert "Network: 4 requests" in terminal(ChangeSet(network=summary))
