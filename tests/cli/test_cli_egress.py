"""``codeagent run --network policy``: the real CLI, a real sandbox and broker, a real HTTP
server on 127.0.0.2 (test host names pinned to it by the policy file's test-only ``hosts``),
the scripted model. Each request prints a ``net:`` line and lands in the session notebook;
bad egress flags fail in one line with exit status 2."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest

from codeagent_jupyter.sandbox import bubblewrap
from tests.cli.test_cli import codeagent, one_line_error
from tests.egress.origin import files, origin
from tests.scripted_model import text, tool_calls


@pytest.fixture
def port(tmp_path: Path) -> Iterator[int]:
    with origin(files(tmp_path / "www", big_mib=1)) as port:
        yield port


def test_run_under_a_policy_prints_and_records_each_request(
    scripted_model: Any, tmp_path: Path, port: int
) -> None:
    if bubblewrap.find() is None:
        pytest.skip("bubblewrap is not installed: no network namespace for --network policy")
    policy = tmp_path / "egress.json"
    policy.write_text(
        json.dumps(
            {
                "default": "ask",
                "ports": [port],
                "allow_ranges": ["127.0.0.2/32"],
                "hosts": {"data.test": "127.0.0.2", "other.test": "127.0.0.2"},
            }
        )
    )
    code = (
        "import pandas as pd, urllib.request, urllib.error\n"
        f"print(pd.read_csv('http://data.test:{port}/data.csv')['sales'].sum())\n"
        "try:\n"
        f"    urllib.request.urlopen('http://other.test:{port}/x?q=1')\n"
        "except urllib.error.HTTPError as e:\n"
        "    print(e.code)\n"
    )
    scripted_model.set_script([tool_calls(("run_cell", {"code": code})), text("done")])
    ws, out = tmp_path / "ws", tmp_path / "s.ipynb"
    ws.mkdir()
    result = codeagent(
        "run", "fetch", "--model", "m", "--base-url", scripted_model.url, "--workdir", str(ws),
        "--out", str(out), "--network", "policy", "--egress-policy", str(policy),
        "--allow-domain", "data.test", timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "net only through the egress broker" in result.stderr.splitlines()[0]
    assert f"net: GET http://data.test:{port}/data.csv 200" in result.stderr
    assert "(allow data.test)" in result.stderr
    assert f"net: GET http://other.test:{port}/x?q=1 refused 403" in result.stderr
    assert "default ask: nobody to ask in a non-interactive run" in result.stderr
    notebook = nbformat.read(out, as_version=4)
    logged = [e for e in notebook.metadata["codeagent"]["events"] if e["type"] == "network_request"]
    # Records come as requests end (a refusal at once, a GET after its body): any order.
    assert sorted((e["status"], e["allowed"]) for e in logged) == [(200, True), (403, False)]
    assert notebook.metadata["codeagent"]["limits"]["egress_broker"] is True
    [network] = [c for c in notebook.cells if c.metadata["codeagent"].get("kind") == "network"]
    assert network.source.startswith("**Network:** 2 requests through the egress broker, 1 refused")
    assert f"GET http://other.test:{port}/x?q=1 refused 403" in network.source
    assert "\n````text\n" in network.source  # the sandbox's URLs are text, never Markdown
    outputs = json.dumps([c.get("outputs", []) for c in notebook.cells])
    assert "42" in outputs and "403" in outputs  # the sum of the CSV's sales, the refusal


@pytest.mark.parametrize(
    ("flags", "words"),
    [
        (["--allow-domain", "x.org"], "need --network policy"),
        (["--network", "policy", "--egress-policy", "missing.json"], "cannot read egress policy"),
        (["--network", "policy", "--egress-policy", "BAD"], "is not JSON"),
        (["--network", "policy", "--allow-domain", "bad host"], "not a host pattern"),
        (["--network", "wide"], "invalid choice"),
    ],
)
def test_bad_egress_flags_fail_in_one_line(
    scripted_model: Any, tmp_path: Path, flags: list[str], words: str
) -> None:
    (tmp_path / "BAD").write_text("{nope")
    result = codeagent(
        "run", "x", "--model", "m", "--base-url", scripted_model.url, *flags, cwd=tmp_path
    )
    assert result.returncode == 2
    assert words in one_line_error(result)


def test_on_a_terminal_an_unlisted_host_is_asked_about_by_name(
    scripted_model: Any, tmp_path: Path, port: int
) -> None:
    """``default: ask`` with a terminal: one question per host; "s" allows it for the
    session (asked once for two requests), "n" denies; the record names each answer."""
    if bubblewrap.find() is None:
        pytest.skip("bubblewrap is not installed: no network namespace for --network policy")
    policy = tmp_path / "egress.json"
    pinned = {"data.test": "127.0.0.2", "other.test": "127.0.0.2"}
    policy.write_text(
        json.dumps({"ports": [port], "allow_ranges": ["127.0.0.2/32"], "hosts": pinned})
    )
    code = (
        "import urllib.request, urllib.error\n"
        "for host in ('data.test', 'data.test', 'other.test'):\n"
        "    try:\n"
        f"        print(urllib.request.urlopen(f'http://{{host}}:{port}/data.csv').status)\n"
        "    except urllib.error.HTTPError as e:\n"
        "        print(e.code)\n"
    )
    scripted_model.set_script([tool_calls(("run_cell", {"code": code})), text("done")])
    ws, out = tmp_path / "ws", tmp_path / "s.ipynb"
    ws.mkdir()
    argv = [
        sys.executable, "-m", "codeagent_jupyter.cli", "run", "fetch", "--model", "m",
        "--base-url", scripted_model.url, "--workdir", str(ws), "--out", str(out),
        "--network", "policy", "--egress-policy", str(policy),
    ]  # fmt: skip
    seen = _on_a_terminal(argv, [b"s\n", b"n\n"])
    assert seen.count("Allow it?") == 2, seen[-2000:]
    assert "reach data.test" in seen and "reach other.test" in seen
    notebook = nbformat.read(out, as_version=4)
    logged = [e for e in notebook.metadata["codeagent"]["events"] if e["type"] == "network_request"]
    assert sorted(e["rule"] for e in logged) == [  # as the requests ended: any order
        "approved data.test for this session",
        "approved data.test for this session",
        "denied other.test by the user",
    ]


def _on_a_terminal(argv: list[str], answers: list[bytes], timeout: float = 300) -> str:
    """Run ``argv`` on a pseudo-terminal, typing one answer per question; all it wrote."""
    master, slave = pty.openpty()
    env = {**os.environ, "OPENAI_API_KEY": "test-key", "NO_COLOR": "1"}
    proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=env)
    os.close(slave)
    seen, typed = b"", 0
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.5)
            if ready:
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # the child is gone and the terminal closed
                    break
                if not chunk:
                    break
                seen += chunk
                while typed < len(answers) and seen.count(b"Allow it?") > typed:
                    os.write(master, answers[typed])
                    typed += 1
            elif proc.poll() is not None:
                break
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(30)
        os.close(master)
    assert proc.returncode == 0, seen.decode(errors="replace")[-3000:]
    return seen.decode(errors="replace")
