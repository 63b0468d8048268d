"""``install_packages`` end to end: the real openai client and scripted model, a real
sandbox kernel, pip against a real index on 127.0.0.1, the session notebook."""

from __future__ import annotations

import hashlib
from pathlib import Path

import nbformat
import pytest

from codeagent_jupyter import events as ev
from codeagent_jupyter.config import AgentConfig, SandboxLimits
from codeagent_jupyter.core.assembly import build_agent
from codeagent_jupyter.models.openai_chat import OpenAIChatModel
from codeagent_jupyter.packages import Installer, PackagePolicy
from codeagent_jupyter.record.recorder import NotebookRecorder
from codeagent_jupyter.sandbox import Sandbox
from codeagent_jupyter.tools import ToolBox
from codeagent_jupyter.tools.install import InstallTool
from tests.scripted_model import text, tool_calls


class Collect:
    def __init__(self) -> None:
        self.events: list[ev.Event] = []

    def emit(self, event: ev.Event) -> None:
        self.events.append(event)

    def of(self, kind: type) -> list:
        return [e for e in self.events if isinstance(e, kind)]


@pytest.fixture
async def sandbox(tmp_path: Path):
    ws = tmp_path / "ws"
    ws.mkdir()
    async with Sandbox(workdir=ws, limits=SandboxLimits(cell_timeout=60)) as sb:
        yield sb


def _agent(scripted_model, sandbox, served, tmp_path: Path, approval: str, approver=None):
    policy = PackagePolicy(index_url=served.url, cache_dir=str(served.cache), approval=approval)
    model = OpenAIChatModel("scripted", scripted_model.url, "test-key", backoff=0.01)
    sink = Collect()
    out = tmp_path / "session.ipynb"
    recorder = NotebookRecorder(out, session_id="s1")
    tools = [
        ToolBox(sandbox, sandbox.workdir),
        InstallTool(sandbox, Installer(policy), approval=approval),
    ]
    loop = build_agent(
        model, sandbox, [recorder, sink], AgentConfig(), tools=tools, approver=approver
    )
    return loop, sink, out


def _install(*names: str) -> dict:
    return tool_calls(
        ("install_packages", {"packages": list(names), "reason": "the task needs it"})
    )


def _cell(code: str) -> dict:
    return tool_calls(("run_cell", {"code": code}))


def _results(sink: Collect) -> list[ev.ToolCallFinished]:
    return sink.of(ev.ToolCallFinished)


async def test_installed_and_importable_in_the_next_cell_and_recorded(
    scripted_model, sandbox, served, tmp_path: Path
) -> None:
    scripted_model.set_script(
        [
            _install("tinyapp", "sentronic-sdx"),
            _cell(
                "import tinyapp, tinydep, sdxio\nprint(tinyapp.__version__, tinydep.__version__)"
            ),
            text("done"),
        ]
    )
    loop, sink, out = _agent(scripted_model, sandbox, served, tmp_path, "auto")
    finished = await loop.run("use tinyapp")
    assert finished.status == ev.ANSWERED, finished.reason
    install, cell = _results(sink)
    assert install.status == "ok", install.result
    assert "tinyapp 1.0" in install.result and "tinydep 1.0" in install.result
    # The result says what to import: the distribution sentronic-sdx holds module sdxio.
    assert "sentronic-sdx 1.0 (" in install.result
    assert "\u2014 import sdxio\n" in install.result, install.result
    assert "\u2014 import tinydep\n" in install.result, install.result
    assert cell.status == "ok" and "1.0 1.0" in cell.result, cell.result
    nb = nbformat.read(out, as_version=4)
    recorded = {p["name"]: p for p in nb.metadata.codeagent.packages}
    assert set(recorded) == {"tinyapp", "tinydep", "sentronic-sdx"}
    published = served.index.files / recorded["tinyapp"]["filename"]
    assert recorded["tinyapp"]["sha256"] == hashlib.sha256(published.read_bytes()).hexdigest()
    assert recorded["tinyapp"]["version"] == "1.0" and recorded["tinyapp"]["step"] == 1
    # The result names the size as the approval card does (a small wheel in kB, not 0.0 MB).
    size = published.stat().st_size
    assert size < 100 * 1024 and f"tinyapp 1.0 ({size / 1024:.1f} kB)" in install.result


async def test_the_sandbox_can_neither_change_its_packages_nor_reach_the_index(
    scripted_model, sandbox, served, tmp_path: Path
) -> None:
    if sandbox.enforcement.get("filesystem") != "bwrap":
        pytest.skip("needs bubblewrap: without it the sandbox has no read-only mounts")
    overlay = sandbox.packages_dir
    attack = f"""
import os, urllib.request
overlay = {str(overlay)!r}
for what, act in [
    ("write", lambda: open(os.path.join(overlay, "tinyapp", "__init__.py"), "w").write("x=1")),
    ("add", lambda: open(os.path.join(overlay, "sitecustomize.py"), "w").write("x=1")),
    ("rename", lambda: os.rename(overlay, overlay + "-moved")),
    ("remove", lambda: os.rmdir(overlay)),
    ("index", lambda: urllib.request.urlopen({served.url + "/tinydep/"!r}, timeout=10)),
]:
    try:
        act()
        print(what, "WORKED")
    except Exception as e:
        print(what, "refused", type(e).__name__)
"""
    scripted_model.set_script(
        [
            _install("tinyapp"),
            _cell(attack),
            _cell("%pip install bigpkg"),
            _cell("import sys\n!{sys.executable} -m pip install bigpkg"),
            text("done"),
        ]
    )
    loop, sink, _ = _agent(scripted_model, sandbox, served, tmp_path, "auto")
    finished = await loop.run("try")
    assert finished.status == ev.ANSWERED, finished.reason
    install, cell, magic, bang = _results(sink)
    assert install.status == "ok", install.result
    assert "WORKED" not in cell.result, cell.result
    assert cell.result.count("refused") == 5
    assert "install_packages" in magic.result
    assert "No matching distribution" in bang.result or "no-index" in bang.result.lower()
    assert "Retrying" not in bang.result  # no index to wait for: it fails at once
    assert (overlay / "tinyapp" / "__init__.py").read_text() == "__version__ = '1.0'\n"
    assert not (overlay / "sitecustomize.py").exists()


async def test_approval_shows_version_size_and_index_and_a_denial_installs_nothing(
    scripted_model, sandbox, served, tmp_path: Path
) -> None:
    asked: list[tuple[str, dict]] = []

    async def deny(call_id: str, name: str, arguments: dict) -> bool:
        asked.append((name, arguments))
        return False

    scripted_model.set_script(
        [
            _install("tinydep"),
            _cell("import tinydep"),
            text("done"),
        ]
    )
    loop, sink, _ = _agent(scripted_model, sandbox, served, tmp_path, "ask", deny)
    finished = await loop.run("use tinydep")
    assert finished.status == ev.ANSWERED, finished.reason
    [(name, details)] = asked
    assert name == "install_packages"
    [wheel] = details["install"]
    assert wheel["name"] == "tinydep" and wheel["version"] == "1.0"
    assert wheel["size_bytes"] > 0 and wheel["index"] == served.url
    requested = sink.of(ev.ApprovalRequested)
    assert requested and requested[0].arguments["install"] == details["install"]
    install, cell = _results(sink)
    assert install.status == "denied"
    assert cell.status == "error" and "ModuleNotFoundError" in cell.result
    assert not list(sandbox.packages_dir.iterdir())


async def test_refusals_reach_the_model_in_one_line(
    scripted_model, sandbox, served, tmp_path: Path
) -> None:
    scripted_model.set_script(
        [
            _install("onlysrc"),
            _install("--index-url=http://127.0.0.1:1/simple"),
            text("done"),
        ]
    )
    loop, sink, _ = _agent(scripted_model, sandbox, served, tmp_path, "auto")
    await loop.run("try")
    sdist, option = _results(sink)
    for result in (sdist, option):
        assert result.status == "refused" and "\n" not in result.result
    assert "source distributions are never built" in sdist.result
    assert "pip option" in option.result
    assert not served.marker.exists()
