"""Plugin tools end to end: the example package ``examples/codeagent-describe-df`` registered
as an installed distribution (a ``*.dist-info`` with its entry points, in a temporary folder
on the subprocess's ``PYTHONPATH``) and enabled with ``--tool``: offered to the model, shown
in the CLI trace, recorded in the session notebook, replayed with ``replay --model recorded``
and served over MCP (``codeagent mcp --tool``). Nothing of ours is patched: the plugin is
found by ``importlib.metadata`` as any installed one is.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Annotated, Any

import nbformat
import pytest

from codeagent_jupyter.tools.plugin_api import PluginError, schema_of, tool
from tests.scripted_model import ScriptedModelServer, text, tool_calls

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "codeagent-describe-df"
MAKE_DF = "import pandas as pd\ndf = pd.DataFrame({'a': [1, 2, None], 'b': ['x', 'y', 'z']})"


def distribution(site: Path, entry_points: str) -> None:
    """``site`` holds an installed distribution with ``entry_points`` (its metadata only)."""
    info = site / "codeagent_describe_df-0.1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: codeagent-describe-df\n")
    (info / "entry_points.txt").write_text(entry_points)


def registered(site: Path, entry_points: str) -> dict[str, str]:
    """An environment in which a distribution with ``entry_points`` is installed."""
    distribution(site, entry_points)
    path = os.pathsep.join([str(site), str(EXAMPLE), os.environ.get("PYTHONPATH", "")])
    return {**os.environ, "PYTHONPATH": path, "OPENAI_API_KEY": "test-key"}


GROUP = "[codeagent_jupyter.tools]\n"
PLUGIN = f"{GROUP}describe_dataframe = codeagent_describe_df:describe_dataframe\n"
CLASH = f"{GROUP}run_cell = codeagent_describe_df:describe_dataframe\n"
FETCHER = f"{GROUP}fetch_page = fetcher:fetch_page\nstamp = fetcher:stamp\n"
FETCHER_MODULE = '''
from codeagent_jupyter.tools.plugin_api import tool

@tool
def fetch_page(url: str) -> str:
    """Fetch a page into the workspace."""
    return f"import subprocess\\nsubprocess.run(['curl', '-o', 'page.html', {url!r}])"

@tool(runs="host")
def stamp(text: str) -> str:
    """Write a stamp on the host."""
    import os, pathlib
    pathlib.Path(os.environ["STAMP_FILE"]).write_text(text)
    return "stamped"
'''


def codeagent(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "codeagent_jupyter.cli", *args]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=240)


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return registered(tmp_path / "site", PLUGIN)


def test_the_plugin_is_offered_traced_recorded_and_replayed(
    scripted_model: ScriptedModelServer, env: dict[str, str], tmp_path: Path
) -> None:
    workdir = tmp_path / "ws"
    workdir.mkdir()
    out = tmp_path / "session.ipynb"
    scripted_model.set_script(
        [
            tool_calls(("run_cell", {"code": MAKE_DF})),
            tool_calls(("describe_dataframe", {"name": "df"})),
            text("df has 3 rows."),
        ]
    )
    flags = ["--model", "m", "--base-url", scripted_model.url, "--workdir", str(workdir)]
    flags += ["--out", str(out), "--tool=describe_dataframe"]
    run = codeagent(env, "run", "describe df", *flags)
    assert run.returncode == 0, run.stderr
    offered = [t["function"]["name"] for t in scripted_model.requests[0]["tools"]]
    assert offered[-1] == "describe_dataframe" and "run_cell" in offered
    system = scripted_model.requests[0]["messages"][0]["content"]
    line = "- describe_dataframe: use it to learn a DataFrame's shape, columns, types"
    assert f"\n{line}" in system  # the plugin's prompt line, among the tools' own
    assert "- - " not in system
    assert all(r["messages"][0]["content"] == system for r in scripted_model.requests)
    shown = [m for m in scripted_model.requests[2]["messages"] if m["role"] == "tool"][-1]
    assert "shape: 3 rows x 2 columns" in shown["content"] and "missing: 1" in shown["content"]
    assert "step 2: describe_dataframe\n   | _ca_df = df\n" in run.stderr  # the CLI trace

    notebook = nbformat.read(out, as_version=4)
    events = notebook.metadata["codeagent"]["events"]
    finished = [e for e in events if e.get("name") == "describe_dataframe" and "status" in e]
    assert finished and finished[-1]["status"] == "ok"
    # A kernel plugin's call is a code cell: the code it built, re-run by a replay.
    assert any(c.cell_type == "code" and "_ca_df = df" in c.source for c in notebook.cells)

    replayed = tmp_path / "replayed.ipynb"
    bare = codeagent(
        env, "replay", str(out), "--model", "recorded", "--workdir", str(workdir),
        "--out", str(tmp_path / "bare.ipynb"),
    )  # fmt: skip
    said = "the session called describe_dataframe, not offered in this replay"
    assert said in bare.stderr
    again = codeagent(
        env, "replay", str(out), "--model", "recorded", "--workdir", str(workdir),
        "--out", str(replayed), "--tool", "describe_dataframe",
    )  # fmt: skip
    assert again.returncode == 0, again.stderr
    events = nbformat.read(replayed, as_version=4).metadata["codeagent"]["events"]
    results = [e.get("result", "") for e in events if e.get("name") == "describe_dataframe"]
    assert any("shape: 3 rows x 2 columns" in r for r in results)


def test_the_plugin_over_mcp(env: dict[str, str], tmp_path: Path) -> None:
    mcp = pytest.importorskip("mcp", reason="the mcp extra is not installed")
    workdir = tmp_path / "ws"
    workdir.mkdir()
    args = ["-m", "codeagent_jupyter.cli", "mcp", "--workdir", str(workdir)]
    args += ["--out", str(tmp_path / "mcp.ipynb"), "--tool", "describe_dataframe"]
    params = mcp.StdioServerParameters(command=sys.executable, args=args, env=env)

    async def session() -> tuple[list[str], str]:
        async with mcp.Client(params, read_timeout_seconds=120) as client:
            names = [t.name for t in (await client.list_tools()).tools]
            await client.call_tool("run_cell", {"code": MAKE_DF})
            result = await client.call_tool("describe_dataframe", {"name": "df"})
            return names, "\n".join(c.text for c in result.content if c.type == "text")

    names, said = asyncio.run(session())
    assert "describe_dataframe" in names and "run_cell" in names
    assert "shape: 3 rows x 2 columns" in said


@pytest.mark.parametrize(
    ("entry_points", "flag", "said"),
    [
        (PLUGIN, "no_such_tool", "unknown tool 'no_such_tool' (plugin tools: describe_dataframe)"),
        (CLASH, "run_cell", "plugin tool 'run_cell' clashes with a built-in tool; refused"),
    ],
    ids=["unknown", "clash"],
)
def test_unknown_and_clashing_names_are_one_line_and_exit_2(
    tmp_path: Path, entry_points: str, flag: str, said: str
) -> None:
    env = registered(tmp_path / "site", entry_points)
    for command in (["run", "x", "--model", "m", "--base-url", "http://127.0.0.1:9"], ["mcp"]):
        done = codeagent(env, *command, "--workdir", str(tmp_path), "--tool", flag)
        assert done.returncode == 2
        assert done.stderr.strip().splitlines() == [f"codeagent: error: {said}"]


def test_a_typed_function_becomes_a_closed_schema() -> None:
    def fetch(
        url: Annotated[str, "Where."], retries: int = 2, tags: list[str] | None = None
    ) -> str:
        """Fetch a page.

        More words the model does not need."""
        return url

    declared = tool(runs="host")(fetch)
    assert declared.approval == "ask" and declared.description == "Fetch a page."
    assert json.loads(json.dumps(declared.schema()))["function"]["parameters"] == {
        "type": "object",
        "properties": {
            "url": {"type": "string", "description": "Where."},
            "retries": {"type": "integer", "default": 2},
            "tags": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["url"],
        "additionalProperties": False,
    }


@pytest.mark.parametrize(
    "bad",
    [
        lambda: tool(name="no spaces allowed")(lambda x: x),
        lambda: schema_of(lambda x: x),  # no type hint
        lambda: tool(runs="elsewhere")(_typed),  # type: ignore[arg-type]
    ],
)
def test_bad_declarations_are_refused(bad: Any) -> None:
    with pytest.raises(PluginError):
        bad()


def _typed(x: str) -> str:
    return x


def test_the_policy_hook_sees_a_kernel_plugin_s_code_and_a_host_tool_needs_approval(
    scripted_model: ScriptedModelServer, tmp_path: Path
) -> None:
    """A kernel plugin's code passes the hooks as the cell it is: the policy hook, which knows
    nothing of the plugin, denies the network command it builds, and nothing runs. A host
    plugin asks first; without a terminal it is denied, saying why, and does not run."""
    env = registered(tmp_path / "site", FETCHER)
    env["STAMP_FILE"] = str(tmp_path / "stamp.txt")
    (tmp_path / "site" / "fetcher.py").write_text(FETCHER_MODULE)
    workdir = tmp_path / "ws"
    workdir.mkdir()
    scripted_model.set_script(
        [
            tool_calls(("fetch_page", {"url": "https://example.org/"}), ("stamp", {"text": "x"})),
            text("done"),
        ]
    )
    flags = ["--model", "m", "--base-url", scripted_model.url, "--workdir", str(workdir)]
    flags += ["--out", str(tmp_path / "s.ipynb"), "--hook", "policy"]
    flags += ["--tool", "fetch_page", "--tool", "stamp"]
    done = codeagent(env, "run", "fetch it", *flags)
    assert done.returncode == 0, done.stderr
    fetched, stamped = [
        m["content"] for m in scripted_model.requests[1]["messages"] if m["role"] == "tool"
    ]
    assert "Denied by the policy hook: a network tool is not allowed" in fetched
    assert not (workdir / "page.html").exists()
    assert stamped.startswith("Denied: this tool runs outside the sandbox")
    assert not (tmp_path / "stamp.txt").exists()


def test_the_example_s_own_tests_pass(tmp_path: Path) -> None:
    """The example package's tests, run as its author would (so they cannot rot here)."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(EXAMPLE), os.environ.get("PYTHONPATH", "")]),
    }
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "0",
         str(EXAMPLE / "tests"), "--rootdir", str(EXAMPLE), "-c", os.devnull],
        capture_output=True, text=True, env={**env, "PYTHONDONTWRITEBYTECODE": "1"},
        cwd=tmp_path, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "3 passed" in done.stdout
