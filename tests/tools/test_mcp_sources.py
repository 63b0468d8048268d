"""MCP servers as tool sources, end to end: ``codeagent run --mcp-server`` starts a real MCP
server (``mcp_tool_server.py``, written with the official SDK) over stdio, offers its tools
as ``mcp__<server>__<tool>``, and runs them outside the sandbox only when approved: denied
with a reason without a terminal, run with ``--mcp-approve``. The calls are recorded and
replayed without the server; a hostile server's names, descriptions and results are bounded.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import nbformat
import pytest

from codeagent_jupyter import events as ev
from codeagent_jupyter.config import AgentConfig
from codeagent_jupyter.errors import ConfigError
from codeagent_jupyter.record.recorder import load_session
from codeagent_jupyter.tools.mcp_tools import parse_specs
from tests.cli.pty_terminal import Terminal
from tests.scripted_model import ScriptedModelServer, text, tool_calls

pytest.importorskip("mcp", reason="the mcp extra is not installed")

SERVER = Path(__file__).with_name("mcp_tool_server.py")
NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def server_flag(name: str, marker: Path, *extra: str) -> str:
    return f"{name}={sys.executable} {SERVER} {marker} {' '.join(extra)}".strip()


def codeagent(model: ScriptedModelServer, workdir: Path, out: Path, *args: str) -> Any:
    env = {**os.environ, "OPENAI_API_KEY": "test-key"}
    command = [sys.executable, "-m", "codeagent_jupyter.cli", "run", "use the tools"]
    command += ["--model", "m", "--base-url", model.url, "--workdir", str(workdir)]
    command += ["--out", str(out), *args]
    return subprocess.run(
        command, capture_output=True, text=True, env=env, timeout=240, stdin=subprocess.DEVNULL
    )


def tool_messages(model: ScriptedModelServer) -> list[str]:
    return [m["content"] for m in model.requests[-1]["messages"] if m["role"] == "tool"]


@pytest.fixture
def places(tmp_path: Path) -> tuple[Path, Path]:
    """The workspace, and the host folder the server writes its marker in (outside it)."""
    workdir, marker = tmp_path / "ws", tmp_path / "host"
    workdir.mkdir()
    marker.mkdir()
    return workdir, marker


def test_without_a_terminal_a_call_is_denied_with_the_reason(
    scripted_model: ScriptedModelServer, places: tuple[Path, Path], tmp_path: Path
) -> None:
    workdir, marker = places
    scripted_model.set_script([tool_calls(("mcp__fx__note", {"text": "hi"})), text("ok")])
    out = tmp_path / "s.ipynb"
    done = codeagent(scripted_model, workdir, out, "--mcp-server", server_flag("fx", marker))
    assert done.returncode == 0, done.stderr
    offered = [t["function"]["name"] for t in scripted_model.requests[0]["tools"]]
    assert {"mcp__fx__add", "mcp__fx__note"} <= set(offered)
    [said] = tool_messages(scripted_model)
    assert said.startswith("Denied: this tool runs outside the sandbox")
    assert "--mcp-approve fx" in said
    assert not (marker / "note.txt").exists()
    events = nbformat.read(out, as_version=4).metadata["codeagent"]["events"]
    assert [e["approved"] for e in events if "approved" in e] == [False]


def test_approved_calls_run_on_the_host_are_recorded_and_replay_without_the_server(
    scripted_model: ScriptedModelServer, places: tuple[Path, Path], tmp_path: Path
) -> None:
    workdir, marker = places
    scripted_model.set_script(
        [
            tool_calls(("mcp__fx__note", {"text": "hi"}), ("mcp__fx__add", {"a": 2, "b": 3})),
            text("2 + 3 = 5"),
        ]
    )
    out = tmp_path / "s.ipynb"
    flags = ["--mcp-server", server_flag("fx", marker), "--mcp-approve", "fx"]
    done = codeagent(scripted_model, workdir, out, *flags)
    assert done.returncode == 0, done.stderr
    note, added = tool_messages(scripted_model)
    assert "noted 2 characters" in note and added.splitlines()[1] == "5"
    assert "untrusted" in added.splitlines()[0]
    assert (marker / "note.txt").read_text() == "hi"  # it ran on the host, not in the sandbox
    assert "mcp__fx__add" in done.stderr  # in the CLI trace

    events = [e for e in load_session(out).events if getattr(e, "name", "") == "mcp__fx__add"]
    started = [e for e in events if isinstance(e, ev.ToolCallStarted)]
    finished = [e.to_dict() for e in events if isinstance(e, ev.ToolCallFinished)]
    assert started[0].arguments == {"a": 2, "b": 3}
    assert finished[0]["result"].splitlines()[1] == "5" and finished[0]["duration_s"] > 0

    (marker / "note.txt").unlink()
    replayed = tmp_path / "replayed.ipynb"
    replay = subprocess.run(
        [sys.executable, "-m", "codeagent_jupyter.cli", "replay", str(out), "--model",
         "recorded", "--workdir", str(workdir), "--out", str(replayed)],
        capture_output=True, text=True, timeout=240, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert replay.returncode == 0, replay.stderr
    assert not (marker / "note.txt").exists()  # the server was not started again
    events = nbformat.read(replayed, as_version=4).metadata["codeagent"]["events"]
    results = [e["result"] for e in events if e.get("name") == "mcp__fx__add" and "result" in e]
    assert results == [finished[0]["result"]]


def test_a_hostile_server_is_bounded(
    scripted_model: ScriptedModelServer, places: tuple[Path, Path], tmp_path: Path
) -> None:
    workdir, marker = places
    scripted_model.set_script(
        [tool_calls(("mcp__hx__shout", {}), ("mcp__hx__escapes", {})), text("done")]
    )
    flags = ["--mcp-server", server_flag("hx", marker, "hostile"), "--mcp-approve", "hx"]
    done = codeagent(scripted_model, workdir, tmp_path / "s.ipynb", *flags)
    assert done.returncode == 0, done.stderr
    tools = {t["function"]["name"]: t["function"] for t in scripted_model.requests[0]["tools"]}
    assert all(NAME.match(name) for name in tools)
    assert {"mcp__hx__shout", "mcp__hx__escapes", "mcp__hx__add"} <= set(tools)
    assert not any("bad" in name or "xxxxx" in name or "wide" in name for name in tools)
    assert "3 tool(s) left out" in done.stderr
    shout = tools["mcp__hx__shout"]["description"]
    assert len(shout) < 1_200 and not CONTROLS.search(shout)
    huge, escapes = tool_messages(scripted_model)
    assert len(huge) < AgentConfig.result_chars + 500 and huge.rstrip().endswith("THE END")
    assert not CONTROLS.search(huge + escapes)
    assert "before ^[]52;c;cHduZWQ=^G^[[2J\\x9b31m\\u202e after" in escapes  # shown, not obeyed
    assert "\x1b" not in done.stdout + done.stderr


@pytest.mark.parametrize(
    ("servers", "approved", "said"),
    [
        (["a=x", "a=y"], [], "MCP server name 'a' is used twice"),
        (["a=x"], ["b"], "--mcp-approve 'b': no --mcp-server of that name"),
        (["a="], [], "no command or URL"),
    ],
)
def test_bad_server_flags_are_one_line(servers: list[str], approved: list[str], said: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(said)):
        parse_specs(servers, approved)


def test_server_names_default_to_the_command_or_host() -> None:
    specs = parse_specs(["/usr/bin/my.tool --x=1", "https://tools.example.org/mcp"], ["my_tool"])
    assert [(s.name, s.approved) for s in specs] == [
        ("my_tool", True),
        ("tools_example_org", False),
    ]


def test_on_a_terminal_the_user_is_asked_and_a_yes_runs_the_call(
    scripted_model: ScriptedModelServer, places: tuple[Path, Path], tmp_path: Path
) -> None:
    """The question names the tool and its arguments, their escapes shown, not obeyed; the
    first call is refused with "n", the second run with "y"."""
    workdir, marker = places
    scripted_model.set_script(
        [
            tool_calls(("mcp__fx__note", {"text": "no\x1b[2J"})),
            tool_calls(("mcp__fx__note", {"text": "yes"})),
            text("ok"),
        ]
    )
    command = [sys.executable, "-m", "codeagent_jupyter.cli", "run", "note", "--model", "m"]
    command += ["--base-url", scripted_model.url, "--workdir", str(workdir)]
    command += ["--out", str(tmp_path / "s.ipynb"), "--mcp-server", server_flag("fx", marker)]
    env = {**os.environ, "OPENAI_API_KEY": "test-key", "NO_COLOR": "1"}
    term = Terminal(command, env)
    asked = b"Run it? [y/N]: "
    assert term.wait_for(lambda: term.raw.count(asked) == 1, 180), term.text[-2000:]
    os.write(term.master, b"n\n")
    assert term.wait_for(lambda: term.raw.count(asked) == 2, 120), term.text[-2000:]
    os.write(term.master, b"y\n")
    assert term.finish() == 0, term.text[-2000:]
    assert 'run mcp__fx__note outside the sandbox with {"text": "no\\u001b[2J"}' in term.text
    assert "\x1b[2J" not in term.text
    assert (marker / "note.txt").read_text() == "yes"
    refused, ran = tool_messages(scripted_model)[-2:]
    assert refused.startswith("The user denied") and "noted 3 characters" in ran


def test_a_server_reached_by_url(
    scripted_model: ScriptedModelServer, places: tuple[Path, Path], tmp_path: Path
) -> None:
    """A Streamable HTTP server (already running, on 127.0.0.1) named by its URL."""
    workdir, marker = places
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    served = subprocess.Popen(
        [sys.executable, str(SERVER), str(marker), "http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.2)
        scripted_model.set_script([tool_calls(("mcp__web__add", {"a": 4, "b": 5})), text("9")])
        url = f"web=http://127.0.0.1:{port}/mcp"
        flags = ["--mcp-server", url, "--mcp-approve", "web"]
        done = codeagent(scripted_model, workdir, tmp_path / "s.ipynb", *flags)
        assert done.returncode == 0, done.stderr
        assert tool_messages(scripted_model)[0].splitlines()[1] == "9"
    finally:
        served.terminate()
        served.wait(30)
