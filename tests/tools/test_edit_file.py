"""``edit_file`` through the ``ToolBox``: exact replacement in real files of a workspace,
errors that show where the candidates are, confinement, and the diff it records."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from codeagent_jupyter.errors import ToolArgumentError, ToolError
from codeagent_jupyter.tools import ToolBox
from codeagent_jupyter.tools.edit_file import edit_source as replay_source


async def edit(tmp_path: Path, **args):
    return await ToolBox(None, tmp_path).call("edit_file", args)


async def test_one_exact_replacement_keeps_the_rest_byte_for_byte(tmp_path: Path):
    path = tmp_path / "report.py"
    path.write_bytes(b"a = 1\r\nb = 2\r\nprint(a + b)\r\n")
    path.chmod(0o755)
    res = await edit(tmp_path, path="report.py", old_string="b = 2", new_string="b = 40")
    assert path.read_bytes() == b"a = 1\r\nb = 40\r\nprint(a + b)\r\n"
    assert path.stat().st_mode & 0o777 == 0o755
    assert res.text.startswith("edited report.py: 1 replacement (line 2)")
    assert res.edit["path"] == "report.py" and res.edit["replacements"] == 1
    assert "-b = 2\n+b = 40" in res.edit["diff"] and res.edit["diff"].startswith("--- a/report.py")


async def test_several_matches_show_each_candidate_with_line_numbers(tmp_path: Path):
    lines = [f"x{i} = {i}" for i in range(30)]
    lines[4] = lines[20] = "value = compute()"
    (tmp_path / "m.py").write_text("\n".join(lines) + "\n")
    with pytest.raises(ToolError) as err:
        await edit(tmp_path, path="m.py", old_string="value = compute()", new_string="v = 0")
    message = str(err.value)
    assert "occurs 2 times in m.py" in message and "replace_all=true" in message
    assert "at line 5:\n 3| x2 = 2\n 4| x3 = 3\n 5| value = compute()\n 6| x5 = 5" in message
    assert "at line 21:" in message and "21| value = compute()" in message
    assert (tmp_path / "m.py").read_text().count("value = compute()") == 2  # unchanged
    res = await edit(
        tmp_path, path="m.py", old_string="value = compute()", new_string="v = 0", replace_all=True
    )
    assert res.text.startswith("edited m.py: 2 replacements (line 5, 21)")
    assert (tmp_path / "m.py").read_text().count("v = 0") == 2


async def test_no_match_says_so_and_shows_the_closest_lines(tmp_path: Path):
    (tmp_path / "r.py").write_text("def total(rows):\n    return sum(r.price for r in rows)\n")
    with pytest.raises(ToolError) as err:
        await edit(
            tmp_path,
            path="r.py",
            old_string="return sum(r.prices for r in rows)",
            new_string="return 0",
        )
    message = str(err.value)
    assert "old_string was not found in r.py" in message
    assert "closest lines:\n2|     return sum(r.price for r in rows)" in message


@pytest.mark.parametrize(
    ("args", "error", "message"),
    [
        ({"path": "nope.py", "old_string": "a", "new_string": "b"}, ToolError, "file not found"),
        ({"path": "f.txt", "old_string": "", "new_string": "b"}, ToolArgumentError, "not be empty"),
        ({"path": "f.txt", "old_string": "a", "new_string": "a"}, ToolArgumentError, "the same"),
        ({"path": "lat.txt", "old_string": "Z", "new_string": "z"}, ToolError, "not UTF-8"),
        ({"path": "../f.txt", "old_string": "a", "new_string": "b"}, ToolError, "outside"),
        ({"path": "link.txt", "old_string": "s", "new_string": "S"}, ToolError, "symlink"),
    ],
)
async def test_refusals(tmp_path: Path, args, error, message):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "f.txt").write_text("abc\n")
    (ws / "lat.txt").write_bytes("Zürich\n".encode("latin-1"))
    (tmp_path / "secret.txt").write_text("secret\n")
    os.symlink(tmp_path / "secret.txt", ws / "link.txt")
    with pytest.raises(error, match=message):
        await edit(ws, **args)
    assert (tmp_path / "secret.txt").read_text() == "secret\n"


async def test_a_one_megabyte_file_gets_a_small_diff(tmp_path: Path):
    body = "".join(f"row {i:06d}, some text that fills the line\n" for i in range(25_000))
    (tmp_path / "big.txt").write_text(body)
    res = await edit(tmp_path, path="big.txt", old_string="row 012345,", new_string="ROW 012345,")
    diff = res.edit["diff"].splitlines()
    assert diff[:3] == ["--- a/big.txt", "+++ b/big.txt", "@@ -12343,7 +12343,7 @@"]
    assert "-row 012345, some text that fills the line" in diff
    assert "+ROW 012345, some text that fills the line" in diff and len(diff) == 11
    assert (tmp_path / "big.txt").read_text() == body.replace("row 012345,", "ROW 012345,")


def test_the_recorded_cell_makes_the_same_edit(tmp_path: Path, monkeypatch):
    (tmp_path / "s.py").write_text("a\r\nb\nb\n")
    monkeypatch.chdir(tmp_path)
    one = replay_source({"path": "s.py", "old_string": "b", "new_string": "c"})
    exec(one, {})
    assert (tmp_path / "s.py").read_bytes() == b"a\r\nc\nb\n"
    every = replay_source(
        {"path": "s.py", "old_string": "b", "new_string": "c", "replace_all": True}
    )
    exec(every, {})
    assert (tmp_path / "s.py").read_bytes() == b"a\r\nc\nc\n"
    assert replay_source({"path": "a\nb", "old_string": "x", "new_string": "y"}) is None
