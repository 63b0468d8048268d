"""@-mentions: what counts as one, and what the files and cells mentioned add."""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
import pytest

from codeagent_jupyter.core.mentioned import FILE_CHARS, UnknownMention, resolve
from codeagent_jupyter.core.mentions import CELL, PATH, VARIABLE, Mention, parse


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("plot @df by month", [(VARIABLE, "df")]),
        ("from @data.csv, please.", [(PATH, "data.csv")]),
        ("see @In[3] and @In [12]", [(CELL, "In[3]"), (CELL, "In[12]")]),
        ("the second one, @cell:2.", [(CELL, "cell:2")]),
        ("list @raw/2024/ now", [(PATH, "raw/2024/")]),
        ("(@df)", [(VARIABLE, "df")]),
        ("@df and @df again", [(VARIABLE, "df")]),
        ("write to ana@example.org or bo.x@uni.edu", []),  # e-mail addresses
        ("```python\n@property\ndef x(self): ...\n```", []),  # a decorator in a code block
        ("use `@functools.cache` here", []),  # an inline code span
        ("meet @ 5pm, scale @2x", []),
    ],
)
def test_what_counts_as_a_mention(text: str, expected: list[tuple[str, str]]) -> None:
    assert [(m.kind, m.value) for m in parse(text)] == expected


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    (work / "raw").mkdir(parents=True)
    (work / "data.csv").write_text("month,revenue\n2024-01,10\n")
    (work / "raw" / "a.csv").write_text("x\n")
    (tmp_path / "secret.txt").write_text("the neighbour's secret\n")
    return work


NOTEBOOK = nbformat.v4.new_notebook(
    cells=[
        nbformat.v4.new_markdown_cell("# Sales"),
        nbformat.v4.new_code_cell(
            "df.groupby('month').sum()",
            execution_count=3,
            outputs=[nbformat.v4.new_output("stream", text="revenue 42\n")],
        ),
    ]
)


def test_files_folders_cells_and_copied_variables_are_added(folder: Path) -> None:
    text = "plot @df from @data.csv, see @raw/ and @In[3] (@cell:1)"
    section = resolve(text, folder, NOTEBOOK, ["df"])
    assert section.startswith("## Mentioned")
    assert "The variable df, copied into your sandbox" in section
    assert "2024-01,10" in section  # the file's text
    assert "- raw/a.csv (2 bytes)" in section  # the folder's listing
    assert "df.groupby('month').sum()" in section and "revenue 42" in section  # In[3]
    assert "# Sales" in section  # cell 1, counted from 1


def test_a_long_file_is_cut_with_a_hint(folder: Path) -> None:
    (folder / "big.txt").write_text("\n".join(f"row {i}" for i in range(20_000)))
    section = resolve("@big.txt", folder, None, [])
    assert len(section) < FILE_CHARS + 1000
    assert 'read_file("big.txt", start_line=' in section


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("@nothing_here", "@nothing_here: not a variable copied from your kernel"),
        ("@missing.csv", "@missing.csv: no such file or folder"),
        ("@In[99]", "@In[99]: no such cell"),
        ("@cell:7", "@cell:7: no such cell"),
        ("@../secret.txt", "@../secret.txt: refused"),
    ],
)
def test_a_mention_of_nothing_says_so_in_one_line(folder: Path, text: str, said: str) -> None:
    with pytest.raises(UnknownMention) as raised:
        resolve(f"look at {text}", folder, NOTEBOOK, [])
    assert str(raised.value).startswith(said) and "\n" not in str(raised.value)


def test_a_symlink_out_of_the_folder_is_refused_not_followed(folder: Path) -> None:
    os.symlink(folder.parent / "secret.txt", folder / "notes.txt")
    os.symlink(folder.parent, folder / "up")
    for text in ("@notes.txt", "@up/secret.txt", "@up/"):
        with pytest.raises(UnknownMention, match="refused"):
            resolve(text, folder, None, [])


def test_mentions_are_values() -> None:
    assert parse("@df")[0] == Mention(VARIABLE, "df", "@df")


def test_in_a_chat_a_mention_of_nothing_stays_text(folder: Path) -> None:
    section = resolve("ask @alice about @data.csv", folder, None, [], strict=False)
    assert "2024-01,10" in section and "alice" not in section
    assert resolve("thanks @alice", folder, None, [], strict=False) == ""
