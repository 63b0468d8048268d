"""``@codeagent`` in JupyterLab's chat panel with Jupyter AI 3.2 (headless Chromium, real
sandboxes, the scripted model): a request answered, and a hostile one shown as text.

Skipped where Jupyter AI is not installed, unless ``CODEAGENT_JUPYTER_AI_TESTS=required``
(CI's Jupyter AI lane) makes that a failure. The picture of docs/jupyter-ai.md is saved as
the artifacts folder's docs-screenshots/persona.png: copy it to docs/screenshots/ to refresh it.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from nbformat.v4 import new_code_cell

from tests.e2e.browser.jupyter_ai_lab import (  # noqa: F401  (fixtures used below)
    jupyter_ai,
    lab_config,
    model_server,
    needs_jupyter_ai,
)
from tests.e2e.browser.lab import LabPage
from tests.e2e.browser.test_first_hour_e2e import write
from tests.e2e.browser.test_panel_e2e import _for_docs
from tests.scripted_model import ScriptedModelServer, text, tool_calls
from tests.security.test_panel_html import CONTROL_MARKERS, CONTROLS

pytestmark = needs_jupyter_ai


def test_the_persona_replies_in_the_chat_panel_and_a_cell_goes_into_the_notebook(
    jupyterlab_server: tuple[str, str, Path],
    browser_page: Any,
    screenshot: Any,
    artifacts_dir: Path,
    model_server: ScriptedModelServer,  # noqa: F811  (the fixture imported above)
) -> None:
    """A request typed into JupyterLab's chat panel is answered by ``@codeagent``: its plan,
    its cell with the output, its answer; the chat's code toolbar inserts the cell below
    the active cell of the notebook open beside the chat."""
    base_url, token, root = jupyterlab_server
    plan = {"steps": [{"step": "Multiply six by seven", "status": "done"}]}
    plot = (
        "import matplotlib\nmatplotlib.use('module://matplotlib_inline.backend_inline')\n"
        "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3], [1, 4, 9])\nplt.show()"
    )
    leak = "http://127.0.0.1:9/leak.png"  # nothing listens: only the request would tell
    model_server.set_script(
        [
            tool_calls(("update_plan", plan), ("run_cell", {"code": "print(6 * 7)"})),
            tool_calls(("run_cell", {"code": plot})),
            text(f'The answer is **42**. ![chart]({leak}) <img src="{leak}">'),
        ]
    )
    write(root, "work.ipynb", [new_code_cell("# my notebook", id="mine")])
    (root / "ask.chat").write_text("")
    page = browser_page
    page.set_viewport_size({"width": 1500, "height": 1100})
    fetched: list[str] = []
    page.on("request", lambda request: fetched.append(request.url))
    lab = LabPage(page, base_url, token)
    lab.open_notebook("work.ipynb")
    lab.select_cell("mine")
    lab.execute_command("docmanager:open", {"path": "ask.chat", "options": {"mode": "split-right"}})
    chat = page.locator(".jp-chat-messages-container").first
    box = page.locator(".jp-chat-input-container textarea").first
    box.wait_for(state="visible")
    # The persona picker addresses the chat input to @codeagent once the persona has joined.
    page.locator(".jp-jai-personaControls-persona", has_text="codeagent").wait_for()
    box.click()
    box.fill("@codeagent what is six times seven?")
    box.press("Enter")
    chat.locator(".codeagent-chat-end").first.wait_for(timeout=120_000)
    rendered = chat.inner_text()
    assert "Multiply six by seven" in rendered
    assert "print(6 * 7)" in rendered and "42" in rendered
    assert "The answer is 42." in rendered  # Markdown rendered: no asterisks left
    assert chat.locator("strong", has_text="42").count() == 1
    # The plot arrives as an image from a data: URL, and it loads.
    image = chat.locator("img.codeagent-plot, .jp-chat-rendered-message img[src^='data:']")
    image.first.wait_for()
    assert image.first.evaluate("img => img.complete && img.naturalWidth > 0")
    # The model's remote images were never requested.
    assert not [url for url in fetched if url.startswith(leak[:-9])], fetched
    code = chat.locator("pre", has_text="print(6 * 7)").first
    code.scroll_into_view_if_needed()
    screenshot(page, "chat")

    # jupyterlab-chat's code toolbar under the cell's code: insert below the active cell.
    code.hover()
    toolbar = chat.locator(".jp-chat-code-toolbar").first
    toolbar.wait_for()
    page.get_by_role("button", name="Insert below active cell").first.click()
    lab.wait_cell_count(2)
    sources = [cell["source"] for cell in lab.cells()]
    assert sources == ["# my notebook", "print(6 * 7)"], sources
    screenshot(page, "inserted")

    # The answer at the end of the reply, in the light theme and in JupyterLab Dark: the
    # persona's messages use the chat's own styles, so they follow the theme.
    answer = chat.locator("strong", has_text="42").first
    answer.scroll_into_view_if_needed()
    page.mouse.move(0, 0)  # no toolbar tooltip over the picture
    page.locator("[role=tooltip]").first.wait_for(state="hidden")
    shutil.copyfile(screenshot(page, "answer"), _for_docs(artifacts_dir, "persona.png"))
    lab.execute_command("apputils:change-theme", {"theme": "JupyterLab Dark"})
    page.wait_for_function("document.body.dataset.jpThemeLight === 'false'")
    answer.scroll_into_view_if_needed()
    screenshot(page, "answer-dark")


LEAK = "http://127.0.0.1:9/leak-"
"""Where every payload's image points: nothing listens, only the request would tell."""


def hostile(field: str) -> str:
    """A payload for one model- or sandbox-written field: a remote image with a handler, a
    script, an SVG handler and a ``javascript:`` link, each pushing ``field`` if it ran."""
    push = f"(window.__pwned=window.__pwned||[]).push('{field}')"
    return (
        f'<img src="{LEAK}{field}.png" onerror="{push}"> <script>{push}</script> '
        f'<svg onload="{push}"></svg> <a href="javascript:{push}">evil link</a> '
        f"[evil md link](javascript:{push})"
    )


def test_hostile_content_in_the_chat_is_shown_as_text_and_fetches_nothing(
    jupyterlab_server: tuple[str, str, Path],
    browser_page: Any,
    screenshot: Any,
    model_server: ScriptedModelServer,  # noqa: F811  (the fixture imported above)
) -> None:
    """The attack: what the model writes and what its cells print carry script and remote
    images. In the chat it is all text: no payload runs, no image is fetched, clicking the
    links runs nothing (the chat sanitizes too; the persona's bodies must not need it)."""
    base_url, token, root = jupyterlab_server
    cell = (
        "from IPython.display import HTML, display\n"
        f"print({hostile('stdout')!r})\n"
        f"display(HTML({hostile('html-output')!r}))\n"
        f"raise ValueError({hostile('traceback')!r})"
    )
    model_server.set_script(
        [
            tool_calls(
                ("update_plan", {"steps": [{"step": hostile("plan"), "status": "done"}]}),
                ("run_cell", {"code": cell}),
                content=hostile("comment"),
            ),
            tool_calls((f'<img src="{LEAK}tool-name.png">', {"x": hostile("arguments")})),
            text(hostile("answer")),
        ]
    )
    (root / "hostile.chat").write_text("")
    page = browser_page
    page.set_viewport_size({"width": 1500, "height": 1400})
    fetched: list[str] = []
    page.on("request", lambda request: fetched.append(request.url))
    # A workspace of its own: the default one restores what an earlier test left open.
    page.goto(f"{base_url}lab/workspaces/hostile/tree/hostile.chat?token={token}")
    page.wait_for_function("() => window.jupyterapp !== undefined")
    page.evaluate("async () => { await window.jupyterapp.restored; }")
    chat = page.locator(".jp-chat-messages-container").first
    box = page.locator(".jp-chat-input-container textarea").first
    box.wait_for(state="visible")
    page.locator(".jp-jai-personaControls-persona", has_text="codeagent").wait_for()
    box.click()
    box.fill("@codeagent show me what the data says")
    box.press("Enter")
    chat.locator(".codeagent-chat-end").first.wait_for(timeout=120_000)
    links = chat.locator("a", has_text="evil")
    for i in range(links.count()):
        links.nth(i).click(no_wait_after=True)
    # The harness sees an execution: the same kinds of payloads, put into a plain element,
    # fire; by then the chat's had every chance to fire theirs.
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
    screenshot(page, "hostile-chat")

    fired = page.evaluate("window.__pwned || []")
    assert [m for m in fired if not m.startswith("control-")] == []
    assert [url for url in fetched if url.startswith(LEAK)] == []
    live = chat.locator(  # (the chat's own icons are SVG: not those, only what came in)
        ":is(script, iframe, :is(.jp-RenderedHTMLCommon, .codeagent-chat) svg:not([data-icon]),"
        " [onerror], [onload], a[href^='javascript:' i], img[src^='http'])"
    )
    assert live.count() == 0, [
        live.nth(i).evaluate("e => e.outerHTML") for i in range(min(3, live.count()))
    ]
    shown = chat.inner_text()
    for field in ("plan", "comment", "stdout", "traceback", "tool-name", "answer"):
        assert field in shown, f"{field} is not shown"
    assert shown.count("<img src=") >= 5, "the payloads are shown as text"
