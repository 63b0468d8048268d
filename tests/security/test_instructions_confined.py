"""AGENTS.md is read from a workspace that sandbox code can write: a symlink or a special
file planted there must not make the host read a file outside it, or block on a FIFO."""

from __future__ import annotations

import os
from pathlib import Path

from codeagent_jupyter.core.instructions import read_instructions


def test_a_planted_symlink_does_not_read_outside_the_workspace(tmp_path: Path) -> None:
    (tmp_path / "secret.txt").write_text("SECRET-OUTSIDE\n")
    ws = tmp_path / "ws"
    (ws / ".codeagent").mkdir(parents=True)
    (ws / "AGENTS.md").symlink_to(tmp_path / "secret.txt")
    (ws / ".codeagent" / "instructions.md").symlink_to(tmp_path / "secret.txt")
    named, block = read_instructions(ws)
    assert block == "" and "SECRET" not in " ".join(named)
    assert all("not read" in n for n in named) and len(named) == 2


def test_a_planted_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "AGENTS.md")  # opened for reading, this would wait for a writer
    named, block = read_instructions(tmp_path)
    assert block == "" and named and "not read" in named[0]


def test_a_huge_file_is_not_read(tmp_path: Path) -> None:
    with open(tmp_path / "AGENTS.md", "wb") as f:
        f.truncate(50_000_000)
    named, block = read_instructions(tmp_path)
    assert block == "" and "not read" in named[0]


def test_a_symlinked_state_folder_is_not_followed(tmp_path: Path) -> None:
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "instructions.md").write_text("SECRET-ELSEWHERE\n")
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / ".codeagent").symlink_to(tmp_path / "elsewhere")
    named, block = read_instructions(ws)
    assert block == "" and "SECRET" not in " ".join(named)
