"""A cut result names the lines it hid and how to see them, and following that hint works."""

from __future__ import annotations

import re

import pytest

from codeagent_jupyter import events as ev
from codeagent_jupyter.config import AgentConfig, SandboxLimits
from codeagent_jupyter.core.assembly import build_agent
from codeagent_jupyter.models.openai_chat import OpenAIChatModel
from codeagent_jupyter.sandbox import Sandbox
from codeagent_jupyter.tools import ToolBox
from codeagent_jupyter.tools.listing import listed_file
from codeagent_jupyter.util.elision import PRINT_SLICE, elide_lines, read_hint
from tests.scripted_model import text, tool_calls

HINT = re.compile(r'read_file\("([^"]+)", start_line=(\d+), end_line=(\d+)\)')
MARKER = re.compile(r"\[lines (\d+)-(\d+) of (\d+) not shown \(([\d,]+) chars\): ")


def test_a_cut_falls_between_lines_and_names_them() -> None:
    text_ = "\n".join(f"line {i}" for i in range(1, 513))
    out = elide_lines(text_, 2000)
    first, last, total, chars = MARKER.search(out).groups()
    assert (int(total), out.splitlines()[0], out.splitlines()[-1]) == (512, "line 1", "line 512")
    kept = out.splitlines()
    assert kept[kept.index(MARKER.search(out).group(0) + PRINT_SLICE + "]") - 1] == (
        f"line {int(first) - 1}"
    )
    assert kept[-(512 - int(last))] == f"line {int(last) + 1}"
    hidden = "\n".join(f"line {i}" for i in range(int(first), int(last) + 1)) + "\n"
    assert int(chars.replace(",", "")) == len(hidden)
    assert len(out) < 2000 + 200


def test_a_file_listing_names_the_read_file_call_in_the_files_own_lines() -> None:
    text_ = "\n".join(f"line {i}" for i in range(200, 801))
    out = elide_lines(text_, 1500, read_hint("tools/t.py", offset=199))
    first, last = (int(g) for g in MARKER.search(out).groups()[:2])
    path, start, end = HINT.search(out).groups()
    assert (path, int(start), int(end)) == ("tools/t.py", first + 199, last + 199)
    assert out.splitlines()[first - 1].startswith("[lines")  # the marker sits where they were


def test_one_long_line_still_says_how_much_was_cut() -> None:
    out = elide_lines("y" * 30_000, 2000)
    assert "characters elided" in out and len(out) < 2100


@pytest.mark.parametrize(
    ("code", "listed"),
    [
        ("cat tools/t.py", ("tools/t.py", 0)),
        ("!cat ./a.py", ("a.py", 0)),
        ("sed -n '212,260p' a.py", ("a.py", 211)),
        ('print(open("m/b.py").read())', ("m/b.py", 0)),
        ("cat /etc/passwd", None),  # not the workspace: read_file could not open it
        ("cat a.py | grep x", None),
        ("cat a.py b.py", None),
        ("cat ../x.py", None),
        ("import os\ncat a.py", None),
    ],
)
def test_only_plain_listings_of_one_workspace_file_are_recognised(code, listed) -> None:
    assert listed_file(code) == listed


def _follow_the_hint(messages: list[dict]):
    """The model's side: list the file, then do literally what the cut says, then stop."""
    tool_results = [m for m in messages if m["role"] == "tool"]
    if not tool_results:
        return tool_calls(("run_command", {"command": "cat tools/ticketctl.py"}))
    if len(tool_results) == 1:
        path, start, end = HINT.search(tool_results[0]["content"]).groups()
        args = {"path": path, "start_line": int(start), "end_line": int(end)}
        return tool_calls(("read_file", args))
    return text("done")


async def test_following_a_cut_listings_hint_shows_the_missing_lines(scripted_model, tmp_path):
    source = [f"def handler_{i}(state='active'):  # line {i}" for i in range(1, 181)]
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "ticketctl.py").write_text("\n".join(source) + "\n")
    scripted_model.set_script(_follow_the_hint)
    model = OpenAIChatModel("scripted", scripted_model.url, "test-key", backoff=0.01)
    async with Sandbox(workdir=tmp_path, limits=SandboxLimits(cell_timeout=20)) as sandbox:
        tools = ToolBox(sandbox, tmp_path)
        loop = build_agent(model, sandbox, [], AgentConfig(result_chars=5000), tools=tools)
        assert (await loop.run("what does ticketctl default to?")).status == ev.ANSWERED
    messages = scripted_model.requests[-1]["messages"]
    listing, shown = [m["content"] for m in messages if m["role"] == "tool"]
    first, last, total, _ = MARKER.search(listing).groups()
    assert int(total) == 180
    missing = source[int(first) - 1 : int(last)]
    assert missing and not any(line in listing for line in missing)
    assert all(f"| {line}" in shown for line in missing)  # read_file numbers its lines


def _module(n: int) -> list[str]:
    """A module of ``n`` decorated multi-line functions, each ending in a ``return``."""
    source = []
    for i in range(n):
        source += ["@cached", f"def rate_{i}(table, key='active'):", f"    row = table[{i}]"]
        source += [f"    # rate {i} detail {j}" for j in range(3)] + [
            f"    return row  # end {i}",
            "",
        ]
    return source


def _whole(shown: str, n: int) -> None:
    """Every definition that shows its head shows its end too, and the other way round."""
    for i in range(n):
        ends = re.search(rf"return row  # end {i}$", shown, re.MULTILINE) is not None
        assert (f"def rate_{i}(" in shown) == ends, (i, shown)


def test_a_source_listing_is_cut_between_whole_definitions() -> None:
    source = _module(60)
    out = elide_lines("\n".join(source), 2000, source=True)
    first, last = (int(g) for g in MARKER.search(out).groups()[:2])
    assert source[first - 1] == "@cached"  # the gap starts at a decorator, ends before one
    assert last == len(source) or source[last] == "@cached"
    _whole(out, 60)
    plain = elide_lines("\n".join(source), 2000)  # not known to be source: lines only
    with pytest.raises(AssertionError):
        _whole(plain, 60)


def test_read_file_of_python_stops_before_a_definition(tmp_path) -> None:
    from codeagent_jupyter.tools.files import read_file
    from codeagent_jupyter.util.confined import Workspace

    (tmp_path / "m.py").write_text("\n".join(_module(60)) + "\n")
    out = read_file(Workspace(tmp_path), "m.py", None, None, 3000)
    shown_to = int(re.search(r"showing lines 1-(\d+) of", out).group(1))
    assert _module(60)[shown_to] == "@cached"
    _whole(out, 60)


async def test_following_the_hint_of_a_cut_module_shows_whole_missing_definitions(
    scripted_model, tmp_path
):
    source = _module(25)
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "ticketctl.py").write_text("\n".join(source) + "\n")
    scripted_model.set_script(_follow_the_hint)
    model = OpenAIChatModel("scripted", scripted_model.url, "test-key", backoff=0.01)
    async with Sandbox(workdir=tmp_path, limits=SandboxLimits(cell_timeout=20)) as sandbox:
        tools = ToolBox(sandbox, tmp_path)
        loop = build_agent(model, sandbox, [], AgentConfig(result_chars=3000), tools=tools)
        assert (await loop.run("which rate is wrong?")).status == ev.ANSWERED
    messages = scripted_model.requests[-1]["messages"]
    listing, shown = [m["content"] for m in messages if m["role"] == "tool"]
    first, last, _total, _ = MARKER.search(listing).groups()
    assert source[int(first) - 1] == "@cached"
    _whole(listing, 25)
    missing = [line for line in source[int(first) - 1 : int(last)] if line]
    assert all(f"| {line}" in shown for line in missing)
