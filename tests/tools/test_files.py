"""File tools: confinement to the workspace, ranges, bounds and the messages the model sees."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from codeagent_jupyter.errors import ToolArgumentError, ToolError
from codeagent_jupyter.tools import ToolBox


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "data").mkdir()
    (root / "data" / "a.csv").write_text("x,y\n1,2\n3,4\n")
    (root / "notes.txt").write_text("".join(f"line {i}\n" for i in range(1, 101)))
    (tmp_path / "secret.txt").write_text("TOP SECRET\n")
    return root


@pytest.fixture
def tb(ws: Path) -> ToolBox:
    return ToolBox(None, ws, result_chars=2000)


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("../secret.txt", "outside the workspace \\('..' is not allowed"),
        ("data/../../secret.txt", "outside the workspace \\('..' is not allowed"),
        ("/etc/passwd", r"outside the workspace \(absolute\)"),
        ("~/x", r"outside the workspace \(absolute\)"),
    ],
)
async def test_paths_outside_the_workspace_are_refused(tb: ToolBox, path: str, message: str):
    for name, args in [
        ("read_file", {"path": path}),
        ("write_file", {"path": path, "content": "x"}),
        ("list_files", {"path": path}),
        ("search_files", {"pattern": "SECRET", "path": path}),
    ]:
        with pytest.raises(ToolError, match=message):
            await tb.call(name, args)


async def test_symlinks_are_never_followed_but_listed(tb: ToolBox, ws: Path):
    """Any symlink is refused, even one that points inside: following a link the sandbox
    can retarget at any moment is what made the check-then-open race possible."""
    (ws / "out").symlink_to(ws.parent / "secret.txt")
    (ws / "outdir").symlink_to(ws.parent, target_is_directory=True)
    (ws / "alias.csv").symlink_to(ws / "data" / "a.csv")
    refused = "goes through a symlink; symlinks in the workspace are not followed"
    for name, args in [
        ("read_file", {"path": "out"}),
        ("read_file", {"path": "alias.csv"}),
        ("read_file", {"path": "outdir/secret.txt"}),
        ("write_file", {"path": "outdir/new.txt", "content": "x"}),
        ("write_file", {"path": "alias.csv", "content": "x"}),
        ("list_files", {"path": "outdir"}),
        ("search_files", {"pattern": "SECRET", "path": "out"}),
    ]:
        with pytest.raises(ToolError, match=refused):
            await tb.call(name, args)
    assert not (ws.parent / "new.txt").exists()
    assert (ws / "alias.csv").is_symlink() and (ws / "data/a.csv").read_text() == "x,y\n1,2\n3,4\n"
    listing = (await tb.call("list_files", {})).text.splitlines()
    for link in ("out", "outdir", "alias.csv"):
        assert f"{link} -> (symlink, not followed)" in listing
    found = (await tb.call("search_files", {"pattern": "SECRET|x,y"})).text
    assert found == "data/a.csv:1: x,y"  # neither link is followed


async def test_server_state_is_refused_and_hidden(tb: ToolBox, ws: Path):
    state = ws / ".codeagent" / "sessions"
    state.mkdir(parents=True)
    (state / "s1.ipynb").write_text('{"cells": []}  needle\n')
    (ws / "sub" / ".codeagent").mkdir(parents=True)  # only the top level is reserved
    (ws / "sub" / ".codeagent" / "mine.txt").write_text("needle\n")
    for path in (".codeagent/sessions/s1.ipynb", "./.codeagent/x", ".codeagent"):
        for name, args in [
            ("read_file", {"path": path}),
            ("write_file", {"path": path, "content": "x"}),
            ("list_files", {"path": path}),
            ("search_files", {"pattern": "needle", "path": path}),
        ]:
            with pytest.raises(ToolError, match=r"is in \.codeagent/, the server's own state"):
                await tb.call(name, args)
    assert (state / "s1.ipynb").read_text().startswith('{"cells"') and not (state / "x").exists()
    listing = (await tb.call("list_files", {})).text
    assert "sessions" not in listing and "sub/.codeagent/mine.txt" in listing
    hits = (await tb.call("search_files", {"pattern": "needle"})).text
    assert hits == "sub/.codeagent/mine.txt:1: needle"


async def test_empty_path_gets_a_clear_message(tb: ToolBox):
    for name in ("read_file", "write_file"):
        args = {"path": "  "} if name == "read_file" else {"path": "", "content": "x"}
        with pytest.raises(ToolArgumentError, match=f"^{name} needs a file path relative to"):
            await tb.call(name, args)
    assert "data/" in (await tb.call("list_files", {"path": ""})).text


async def test_read_ranges_and_paging(tb: ToolBox):
    res = await tb.call("read_file", {"path": "notes.txt", "start_line": 10, "end_line": 12})
    assert res.text.splitlines() == [
        "10| line 10",
        "11| line 11",
        "12| line 12",
        res.text.splitlines()[-1],
    ]
    assert "of 100" in res.text and "start_line=13" in res.text
    whole = (await tb.call("read_file", {"path": "notes.txt"})).text
    assert "100| line 100" in whole and "showing" not in whole
    with pytest.raises(ToolError, match="past the end"):
        await tb.call("read_file", {"path": "notes.txt", "start_line": 500})
    with pytest.raises(ToolArgumentError, match="end_line must be >= start_line"):
        await tb.call("read_file", {"path": "notes.txt", "start_line": 5, "end_line": 2})


async def test_read_is_bounded_and_tells_how_to_continue(ws: Path):
    (ws / "big.txt").write_text("".join(f"{'z' * 80} {i}\n" for i in range(5000)))
    tb = ToolBox(None, ws, result_chars=3000)
    res = await tb.call("read_file", {"path": "big.txt"})
    assert len(res.text) <= 3000
    last_shown = int(res.text.splitlines()[-2].split("|")[0])
    assert f"start_line={last_shown + 1}" in res.text


async def test_read_refuses_missing_dirs_and_binary(tb: ToolBox, ws: Path):
    (ws / "blob.bin").write_bytes(b"\x00\x01\x02" * 10)
    with pytest.raises(ToolError, match=r"file not found: nope\.txt"):
        await tb.call("read_file", {"path": "nope.txt"})
    with pytest.raises(ToolError, match="is a directory"):
        await tb.call("read_file", {"path": "data"})
    with pytest.raises(ToolError, match="binary file"):
        await tb.call("read_file", {"path": "blob.bin"})


async def test_write_creates_dirs_atomically_and_keeps_mode(tb: ToolBox, ws: Path):
    res = await tb.call("write_file", {"path": "src/pkg/mod.py", "content": "a = 1\nb = 2\n"})
    assert res.text == "created src/pkg/mod.py (12 bytes, 2 lines)"
    assert (ws / "src/pkg/mod.py").read_text() == "a = 1\nb = 2\n"
    script = ws / "run.sh"
    script.write_text("old")
    script.chmod(0o755)
    res = await tb.call("write_file", {"path": "run.sh", "content": "echo hi"})
    assert res.text.startswith("overwrote run.sh")
    assert script.read_text() == "echo hi" and os.stat(script).st_mode & 0o777 == 0o755
    assert not [p for p in ws.rglob("*.tmp")]
    with pytest.raises(ToolError, match="is a directory"):
        await tb.call("write_file", {"path": "data", "content": "x"})


async def test_list_marks_dirs_and_search_reports_lines(tb: ToolBox, ws: Path):
    (ws / ".git").mkdir()
    (ws / ".git" / "config").write_text("line 7 lives here\n")
    listing = (await tb.call("list_files", {"path": "."})).text.splitlines()
    assert "data/" in listing and "data/a.csv  (12 B)" in listing
    assert not any(".git" in line for line in listing)
    hits = (await tb.call("search_files", {"pattern": r"line 7\d?$"})).text.splitlines()
    assert hits[0] == "notes.txt:7: line 7"
    assert len(hits) == 11  # line 7, 70..79; .git is skipped
    one = await tb.call("search_files", {"pattern": "3,4", "path": "data/a.csv"})
    assert one.text == "data/a.csv:3: 3,4"
    with pytest.raises(ToolArgumentError, match="invalid regular expression"):
        await tb.call("search_files", {"pattern": "(unclosed"})


async def test_list_and_search_are_bounded(ws: Path):
    many = ws / "many"
    many.mkdir()
    for i in range(450):
        (many / f"f{i:03}.txt").write_text("needle\n" if i % 2 else "hay\n")
    listing = (
        await ToolBox(None, ws, result_chars=20_000).call("list_files", {"path": "many"})
    ).text
    assert listing.endswith("[50 more entries not shown; list a subdirectory]")  # 400 kept
    hits = await ToolBox(None, ws, result_chars=20_000).call("search_files", {"pattern": "e+d"})
    assert hits.text.endswith("[25 more matches not shown; narrow the pattern or the path]")
    small = ToolBox(None, ws, result_chars=1000)
    for name, args in [("list_files", {}), ("search_files", {"pattern": "needle"})]:
        text = (await small.call(name, args)).text
        assert len(text) <= 1000 and "more" in text.splitlines()[-1]
        assert "elided" not in text  # cut at an entry, not in the middle of one


async def test_os_errors_become_one_line_tool_errors(tb: ToolBox, ws: Path):
    (ws / "plain").write_text("a file, not a directory")
    with pytest.raises(ToolError, match=r"^write_file failed: ") as info:
        await tb.call("write_file", {"path": "plain/child.txt", "content": "x"})
    assert "\n" not in str(info.value)
    with pytest.raises(ToolError, match=r"^write_file failed: File name too long"):
        await tb.call("write_file", {"path": "n" * 300, "content": "x"})
