"""The newer HTML surfaces, attacked in a real browser: the ``@codeagent`` chat and the
panel's Changes section, install card and session list.

Everything these surfaces show comes from the sandbox or the model: file names, diffs and
notes of a change set, package names, versions, indexes and the model's reason of an
install, a session's prompt, the model's answer, a tool name it made up, an output. Each
field here carries payloads — ``<img onerror>``, ``<script>``, ``<svg onload>``,
``<details ontoggle>``, ``javascript:`` links in HTML and in Markdown — that, if they ever
ran, would push a marker naming the field into ``window.__pwned``.

The HTML is the project's own, made by the functions the panel and the persona call; it
goes into headless Chromium the way it reaches the user:

- the panel's pieces are ``ipywidgets.HTML`` values, which the widget manager puts into an
  element's ``innerHTML``: here too;
- a chat message body is Markdown, which the chat renders and then sanitizes; here it is
  rendered (mistune, raw HTML passed through, as the chat's renderer does) and put into
  ``innerHTML`` with no sanitizer at all, so the body alone must be safe. A chat body also
  never asks the browser to fetch anything: its images are ``data:`` URLs only.

No marker may fire, no live element (script, handler, frame, SVG, ``javascript:`` link)
may be on the page, clicking every link runs nothing, and each payload shows as text. The
harness proves it would see an execution: the same payloads put into a plain element's
``innerHTML`` push their ``control-*`` markers, after which the surfaces' payloads had
every chance to fire.
"""

from __future__ import annotations

import base64
import dataclasses
import os
import time
from typing import Any

import mistune
import pytest

from codeagent_jupyter import events as ev
from codeagent_jupyter.persona import render as chat
from codeagent_jupyter.timeline.fold import fold
from codeagent_jupyter.widget import render
from codeagent_jupyter.widget.changes_view import file_html, title_html
from codeagent_jupyter.widget.install_box import InstallBox
from codeagent_jupyter.widget.packages_view import packages_html
from codeagent_jupyter.widget.sessions_view import row_html
from tests.e2e.browser import conftest as browser
from tests.security.test_panel_html import CONTROL_MARKERS, CONTROLS, mark
from tests.security.test_panel_surfaces import payload, short

artifacts_dir = browser.artifacts_dir
chromium = browser.chromium
screenshot = browser.screenshot
browser_page = browser.browser_page

_missing = browser._browser_missing()
pytestmark = [pytest.mark.browser]
if _missing and os.environ.get("CODEAGENT_BROWSER_TESTS") != "required":
    pytestmark.append(pytest.mark.skip(reason=_missing))

SHOWN = "<img src=x onerror="
"""What every surface must show as text (the start of each payload)."""
LIVE = (
    "#surfaces :is(script, iframe, object, embed, svg, foreignObject, [onerror], [onload],"
    " [ontoggle], [onclick], [onbegin], [onmouseover], a[href^='javascript:' i])"
)
"""Live markup anywhere under the surfaces (no surface here draws an SVG of its own)."""
CHAT_FETCHES = "#surfaces .chat :is(img[src]:not([src^='data:']), [srcset], [background])"
"""A chat body's image that the browser would fetch (a way out for steered model text)."""


class _Client:
    """What ``InstallBox`` reads of its panel: nothing is called in these tests."""

    client = None
    session_id = None


def _svg_url(tag: str) -> str:
    handler = f'onload="{mark(tag)}"'
    svg = f'<svg xmlns="http://www.w3.org/2000/svg" {handler}><script>{mark(tag)}</script></svg>'
    return "data:image/svg+xml;base64," + base64.b64encode(svg.encode()).decode()


def changes_html() -> str:
    """The Changes section as the panel draws a change set the server answered."""
    files = [
        {
            "path": short("change-path"),
            "status": payload("change-status"),
            "brief": payload("change-brief"),
            "diff": [
                f"--- a/{short('change-old')}",
                f"+++ b/{short('change-new')}",
                "@@ -1 +1 @@",
                f"-{payload('diff-old')}",
                f"+{payload('diff-new')}",
            ],
            "note": payload("change-note"),
            "cut": 3,
            "revertible": True,
        },
        {
            "path": f"{short('notebook-path')}.ipynb",
            "status": "modified",
            "brief": "1 cell changed",
            "cells": [f"~ cell 1: {payload('cell-list')}"],
        },
        {
            "path": f"{short('image-path')}.svg",
            "status": "added",
            "brief": "image",
            "thumbnail": _svg_url("thumbnail-svg"),
            "image": {"format": payload("image-format"), "width": short("w"), "height": 1},
        },
        {
            "path": "bad-thumbnail.png",
            "status": "added",
            "brief": "image",
            "thumbnail": f'data:image/png" onerror="{mark("thumb-attr")}";base64,AAAA',
        },
        {"path": "js.png", "brief": "", "thumbnail": f"javascript:{mark('thumb-js')}"},
    ]
    data = {
        "available": True,
        "files": files,
        "notes": [payload("changes-note")],
        "reverted": [short("reverted")],
    }
    return title_html(data) + "".join(file_html(change) for change in files)


def install_html() -> str:
    """An ``install_packages`` approval card (and its arguments as the card shows them),
    and the install box's answer line."""
    details = {
        "packages": [short("requested")],
        "reason": payload("install-reason"),
        "install": [
            {
                "name": payload("package-name"),
                "version": payload("package-version"),
                "size_bytes": 2_000_000,
                "index": f"javascript:{mark('package-index')}",
            },
            {"name": "ok", "version": "1.0", "size_bytes": short("size"), "index": None},
        ],
        "size_bytes": 2_000_000,
    }
    box = InstallBox(_Client())
    box._show(payload("install-said"), error=True)
    return packages_html(details) + render.arguments_html(details) + box.result.value


def sessions_html() -> str:
    """The session list: ids, states, statuses and prompts as the server lists them."""
    now = time.time()
    entries = [
        {
            "id": short("session-id"),
            "state": payload("session-state"),
            "status": payload("session-status"),
            "prompt": payload("session-prompt"),
            "created": now - 90,
        },
        {"id": "abc", "state": "running", "prompt": short("running-prompt"), "created": "x"},
    ]
    return "".join(row_html(entry, now, short("current")) for entry in entries)


def _chat_events() -> list[ev.Event]:
    """A run whose every model- and sandbox-written field carries a payload."""
    call = {"id": "call_1", "type": "function", "function": {"name": "run_cell"}}
    made_up = {"id": "call_2", "type": "function", "function": {"name": short("tool-name")}}
    code = f"print({payload('chat-code')!r})\n```\n{payload('chat-fence')}"
    outputs = [
        {"output_type": "stream", "name": "stdout", "text": payload("chat-stdout")},
        {
            "output_type": "display_data",
            "metadata": {},
            "data": {"text/html": payload("chat-html"), "text/plain": "x"},
        },
        {
            "output_type": "display_data",
            "metadata": {},
            "data": {"text/markdown": payload("chat-markdown"), "text/plain": "x"},
        },
        {
            "output_type": "error",
            "ename": "ValueError",
            "evalue": payload("chat-evalue"),
            "traceback": [payload("chat-traceback")],
        },
    ]
    listed = [
        ev.RunStarted(prompt=payload("chat-prompt")),
        ev.PlanUpdated(steps=[{"step": payload("chat-plan"), "status": "in_progress"}]),
        ev.AssistantMessage(
            step=1, message={"content": payload("chat-comment"), "tool_calls": [call]}
        ),
        ev.ApprovalRequested(
            step=1,
            tool_call_id="call_1",
            name=short("approval-name"),
            arguments={"x": payload("chat-approval")},
        ),
        ev.ApprovalDecided(tool_call_id="call_1", approved=True, remember="session"),
        ev.ToolCallStarted(
            step=1, tool_call_id="call_1", name="run_cell", arguments={"code": code}
        ),
        ev.ToolCallFinished(
            step=1,
            tool_call_id="call_1",
            name="run_cell",
            status="error",
            code=code,
            outputs=outputs,
        ),
        ev.AssistantMessage(step=2, message={"content": "", "tool_calls": [made_up]}),
        ev.ToolCallFinished(
            step=2,
            tool_call_id="call_2",
            name=short("tool-name"),
            status="refused",
            result=payload("chat-result"),
        ),
        ev.PackagesInstalled(
            packages=[{"name": short("chat-package"), "version": short("chat-version")}],
            reason=payload("chat-install-reason"),
        ),
        ev.SessionRestored(summary=payload("chat-restored"), problems=[payload("chat-problem")]),
        ev.RunFinished(
            status="model_error",
            reason=payload("chat-reason"),
            answer=payload("chat-answer") + "\n\n![remote](https://example.invalid/x.png)",
            steps=2,
        ),
    ]
    return [dataclasses.replace(e, seq=n) for n, e in enumerate(listed)]


def chat_markdown() -> str:
    """Every chat message the persona would post for that run, as the chat gets them."""
    state = fold(_chat_events())
    bodies = [
        chat.started_body(short("chat-session"), short("chat-model")),
        chat.plan_body(state.plan),
        *(chat.item_body(item, state) or "" for item in state.items),
        chat.error_body(payload("chat-error"), 409),
    ]
    return "\n\n".join(b for b in bodies if b)


def test_newer_surfaces_show_hostile_content_as_text(
    browser_page: Any, screenshot: Any, tmp_path: Any
) -> None:
    page = browser_page
    to_html = mistune.create_markdown(escape=False, plugins=["table", "strikethrough"])
    chat_html = str(to_html(chat_markdown()))
    surfaces = {
        "changes": changes_html(),
        "install": install_html(),
        "sessions": sessions_html(),
        "chat": chat_html,
    }
    page.set_content("<!doctype html><html><body><div id='surfaces'></div></body></html>")
    page.evaluate(
        """(surfaces) => {
            const root = document.getElementById('surfaces');
            for (const [name, html] of Object.entries(surfaces)) {
                const box = document.createElement('div');
                box.className = name;
                box.innerHTML = html;   // what ipywidgets.HTML does with its value
                root.appendChild(box);
            }
        }""",
        surfaces,
    )
    # Harness check: the same kinds of payloads, unescaped, do fire in this page.
    page.evaluate(
        "(html) => { const c = document.createElement('div'); c.innerHTML = html;"
        " document.body.appendChild(c); }",
        "".join(CONTROLS),
    )
    page.wait_for_function(
        "(want) => want.every(m => (window.__pwned || []).includes(m))",
        arg=sorted(CONTROL_MARKERS),
        timeout=15_000,
    )
    # The user opens every folded block (a change's diff) and clicks every link.
    page.evaluate("document.querySelectorAll('#surfaces details').forEach(d => d.open = true)")
    for link in page.locator("#surfaces a").all():
        link.click(modifiers=["Control"], no_wait_after=True, force=True, timeout=5_000)
    page.wait_for_timeout(500)
    screenshot(page, "surfaces")

    fired = page.evaluate("window.__pwned || []")
    assert [m for m in fired if not m.startswith("control-")] == []
    live = page.evaluate(
        "(sel) => Array.from(document.querySelectorAll(sel)).map(e => e.outerHTML.slice(0, 200))",
        LIVE,
    )
    assert live == []
    assert (
        page.evaluate(
            "(sel) => Array.from(document.querySelectorAll(sel)).map(e => e.src)", CHAT_FETCHES
        )
        == []
    )
    for name in surfaces:
        shown = page.inner_text(f"#surfaces .{name}")
        assert SHOWN in shown, f"{name}: the payloads are not shown as text"
    chat_text = page.inner_text("#surfaces .chat")
    for field in ("chat-code", "chat-fence", "chat-answer", "tool-name", "chat-restored"):
        assert field in chat_text, f"the chat does not show {field}"
