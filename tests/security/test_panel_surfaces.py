"""Every surface the panel draws treats its content as data, in a real browser.

The attack: everything the panel shows comes from the model or from the sandbox, and both
are attacker-controlled (a prompt injection in a CSV is enough). The panel's HTML lands in
``innerHTML`` in the user's JupyterLab, where script runs with the Jupyter origin and token.
So each surface gets its own payloads — ``<img onerror>``, ``<script>``, an SVG ``onload``,
``<details ontoggle>``, ``javascript:`` links in HTML and in Markdown — each of which, if it
ever ran, would push a marker naming its surface into ``window.__pwned``:

plan steps, streamed text, the answer, an ``edit_cell`` diff and its reason, a helper's
group title and body, the "restored" line of a forked session, an approval card, an error
traceback, a file name in a listing and in the Changes section, and a prompt in the list
of sessions.

JupyterLab, the server extension, sandbox kernels and headless Chromium are real; only the
model is scripted, through the real server. The test asserts that every surface shows its
payload as text, that no live element or handler is on screen, that clicking the links
runs nothing, and that no marker fired. The harness proves it would see an execution: the
same payloads put into a plain element's ``innerHTML`` push their ``control-*`` markers.
"""

from __future__ import annotations

import json
import os
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from tests.e2e.browser import conftest as browser
from tests.e2e.browser.lab import LabPage
from tests.scripted_model import ScriptedModelServer, text, tool_calls
from tests.security.test_panel_html import CONTROL_MARKERS, CONTROLS, LOAD, mark
from tests.server.helpers import EXTENSION

artifacts_dir = browser.artifacts_dir
jupyterlab_server = browser.jupyterlab_server
chromium = browser.chromium
screenshot = browser.screenshot
browser_page = browser.browser_page

_missing = browser._browser_missing()
pytestmark = [pytest.mark.browser, pytest.mark.timeout(900)]
if _missing and os.environ.get("CODEAGENT_BROWSER_TESTS") != "required":
    pytestmark.append(pytest.mark.skip(reason=_missing))

NOTEBOOK = "surfaces.ipynb"
WAIT_MS = 240_000
SHOWN = "<img src=x onerror="
"""What every surface must show as text (the start of each payload)."""
LIVE = (
    ":is(script, iframe, object, embed, foreignObject, [onerror], [onload], [ontoggle],"
    " [onclick], [onbegin], [onmouseover], a[href^='javascript:' i], .widget-html svg)"
)
"""Live markup: anywhere in the panels, and SVG inside what the panel renders as HTML."""


def payload(tag: str) -> str:
    """Script-carrying HTML and Markdown for one surface; markers ``<tag>-<kind>``."""
    return (
        f'<img src=x onerror="{mark(tag + "-img")}"> '
        f"<script>{mark(tag + '-script')}</script> "
        f'<svg onload="{mark(tag + "-svg")}"><circle r="1"/></svg> '
        f'<details open ontoggle="{mark(tag + "-details")}">d</details> '
        f'<a href="javascript:{mark(tag + "-link")}">evil link</a> '
        f"[evil md link](javascript:{mark(tag + '-md')})"
    )


def short(tag: str) -> str:
    """A payload that fits a file name (no ``/``) and a helper's title (80 characters)."""
    return f"<img src=x onerror={mark(tag)}>"


TASK = short("title")
FILE_NAME = short("files")
RERUN = (
    "import os\n"
    "if os.path.exists('seen'):\n"
    f"    raise ValueError({short('restored')!r})\n"
    "open('seen', 'w').close()\n"
    "print('first run')"
)
"""Fine the first time; on the fork's rebuild the snapshot has ``seen``, so it fails, and
the restored line reports the error with its payload."""
PARENT = [
    tool_calls(
        (
            "update_plan",
            {"steps": [{"step": payload("plan"), "status": "in_progress"}]},
        ),
        content=payload("stream"),
    ),
    tool_calls(("run_cell", {"code": f"open({FILE_NAME!r}, 'w').close()\n" + RERUN})),
    tool_calls(("run_cell", {"code": f"raise ValueError({payload('traceback')!r})"})),
    tool_calls(("list_files", {"path": "."})),
    tool_calls(
        (
            "edit_cell",
            {"cell_id": "target", "new_source": payload("diff"), "reason": payload("reason")},
        )
    ),
    tool_calls(("write_file", {"path": "notes.txt", "content": payload("approval")})),
    tool_calls(("delegate", {"tasks": [TASK]})),
    text(payload("answer")),
]
HELPER = [
    tool_calls(("run_cell", {"code": f"print({payload('helper-out')!r})"}), content="helper"),
    text(payload("helper-answer")),
]
FORK_PROMPT = "carry on from here " + short("session-prompt")
"""Also the forked session's prompt in the list of sessions."""


def respond(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """Stateless: the parent's turns, the helper's, and the fork's one answer."""
    users = [str(m.get("content")) for m in messages if m["role"] == "user"]
    answered = sum(m["role"] == "assistant" for m in messages)
    if any(FORK_PROMPT in u for u in users):
        return text("forked")
    script = HELPER if users and users[0].endswith(TASK) else PARENT
    return script[min(answered, len(script) - 1)]


@pytest.fixture(scope="module")
def model_server() -> Iterator[ScriptedModelServer]:
    server = ScriptedModelServer(respond).start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def lab_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Session notebooks, snapshots and the user kernel's IPython profile in the test's
    folder, not the user's own."""
    return {
        "JUPYTER_DATA_DIR": str(tmp_path_factory.mktemp("jupyter-data")),
        "IPYTHONDIR": str(tmp_path_factory.mktemp("ipython")),
    }


@pytest.fixture(scope="module")
def lab_config(model_server: ScriptedModelServer) -> dict[str, Any]:
    extensions = {EXTENSION: True}
    if EXTENSION != "codeagent_jupyter":
        extensions["codeagent_jupyter"] = False
    return {
        "ServerApp": {"jpserver_extensions": extensions},
        "CodeAgent": {
            "model": "scripted",
            "base_url": model_server.url,
            "api_key": "sk-browser-test",
            "pool_size": 1,
            "stream": True,
            "approval": {"write_file": "ask"},
            "delegate_max_per_call": 1,
            "delegate_max_total": 1,
            "limits": {"cell_timeout": 60, "memory_mb": 1024},
        },
    }


def api(base_url: str, token: str, method: str, path: str, body: Any = None) -> Any:
    request = urllib.request.Request(
        f"{base_url}codeagent/api/{path}",
        method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": f"token {token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read())


def test_every_panel_surface_shows_hostile_content_as_text(
    jupyterlab_server: tuple[str, str, Path],
    browser_page: Any,
    screenshot: Any,
) -> None:
    base_url, token, root = jupyterlab_server
    notebook = new_notebook(
        cells=[
            new_code_cell(LOAD, id="load"),
            new_code_cell("x = 1", id="target"),
            new_code_cell("%agent show me everything", id="agent"),
            new_code_cell("# the forked session is attached here", id="attach"),
        ],
        metadata={
            "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}
        },
    )
    nbformat.write(notebook, root / NOTEBOOK)
    page = browser_page
    lab = LabPage(page, base_url, token)
    lab.open_notebook(NOTEBOOK)
    lab.execute_command("application:toggle-left-area")
    page.set_viewport_size({"width": 1280, "height": 2400})
    lab.run_cell("load")
    lab.run_cell("agent")

    panel = page.locator(".codeagent-panel").first
    approval = panel.locator('.codeagent-approval[data-decided="False"]')
    approval.wait_for(timeout=WAIT_MS)
    assert SHOWN in approval.inner_text()
    panel.locator(".codeagent-deny").first.click()
    panel.locator('.codeagent-run-status[data-status="answered"]').wait_for(timeout=WAIT_MS)
    session_id = panel.locator(".widget-html code").first.inner_text().strip()

    # The forked session's panel: its "restored" line carries the re-run's error.
    fork = api(base_url, token, "POST", f"sessions/{session_id}/fork", {"prompt": FORK_PROMPT})
    attach = f"%agent --attach {fork['id']}"
    lab._js("panel.content.model.sharedModel.cells[arg[0]].setSource(arg[1]);", [3, attach])
    lab.run_cell("attach")
    forked = page.locator(".codeagent-panel").nth(1)
    forked.locator('.codeagent-run-status[data-status="answered"]').wait_for(timeout=WAIT_MS)

    # The helper's group, opened so its body is on screen.
    helpers = panel.locator(".codeagent-helpers")
    title = helpers.locator(".jupyter-widget-Collapse-header", has_text="Helper 1-1").first
    title.click()
    helpers.locator(".codeagent-helper").first.wait_for(state="visible")

    # The Changes section (its file names come from the sandbox), every block opened.
    changes = panel.locator(".codeagent-changes")
    changes.locator(".codeagent-change").first.wait_for(state="attached", timeout=WAIT_MS)
    changes.evaluate("e => e.querySelectorAll('details').forEach(d => { d.open = true; })")

    # The list of sessions, opened: the forked one's prompt is in it.
    panel.locator(".codeagent-sessions .jupyter-widget-Collapse-header").first.click()
    listed = panel.locator(f'.codeagent-session-row[data-session="{fork["id"]}"]')
    listed.wait_for(timeout=WAIT_MS)

    # The links (HTML and Markdown) do nothing when clicked.
    panels = page.locator(".codeagent-panel")
    links = panels.locator("a", has_text="evil")
    assert links.count() >= 4  # the Markdown links of the texts, with their URLs dropped
    for i in range(links.count()):
        links.nth(i).click(no_wait_after=True)

    # No payload ran. The harness detects execution: the same payloads fire in a plain
    # element, after the panels had every chance to fire theirs.
    page.evaluate(
        "(html) => { const d = document.createElement('div');"
        " document.body.appendChild(d); d.innerHTML = html; }",
        "".join(CONTROLS),
    )
    page.wait_for_function(
        "(want) => want.every(m => (window.__pwned || []).includes(m))",
        arg=sorted(CONTROL_MARKERS),
        timeout=15_000,
    )
    fired = page.evaluate("window.__pwned || []")
    assert [m for m in fired if not m.startswith("control-")] == []

    # Nothing live on screen.
    live = panels.locator(LIVE)
    assert live.count() == 0, [
        live.nth(i).evaluate("e => e.outerHTML") for i in range(min(3, live.count()))
    ]

    # Each surface shows its payload as text.
    surfaces = {
        "plan steps": panel.locator(".codeagent-plan"),
        "streamed text": panel.locator(".codeagent-message").first,
        "the answer": panel.locator(".codeagent-answer").first,
        "edit diff": panel.locator(".codeagent-diff"),
        "edit reason": panel.locator(".codeagent-edit .codeagent-text"),
        "helper title": title,
        "helper body": helpers.locator(".codeagent-helper").first,
        "restored line": forked.locator(".codeagent-note").first,
        "traceback": panel.locator(".codeagent-traceback").first,
        "file listing": panel.locator(".codeagent-tool", has_text="list_files"),
        "changed file": changes.locator(".codeagent-change", has_text="onerror").first,
        "session list": listed,
    }
    not_text = {name: loc.inner_text()[:300] for name, loc in surfaces.items()}
    not_text = {name: shown for name, shown in not_text.items() if SHOWN not in shown}
    assert not_text == {}
    assert "failed on re-run" in surfaces["restored line"].inner_text()
    helper_body = surfaces["helper body"].inner_text()
    assert "helper-out" in helper_body and "helper-answer" in helper_body

    panel.scroll_into_view_if_needed()
    screenshot(page, "surfaces")
