"""The panel's Changes section as strings: hostile paths and contents stay text, every colour
is a JupyterLab variable, a crafted thumbnail is no image. (The section in a real browser,
Revert included, is tests/e2e/browser/test_changes_e2e.py.)"""

from __future__ import annotations

import base64
from typing import Any

from codeagent_jupyter.widget.changes_view import ChangesView, file_html, title_html
from codeagent_jupyter.widget.panel import AgentPanel
from tests.widget.test_looks import assert_themed, colours
from tests.widget.test_render import assert_inert, parse

HOSTILE = '<img src=x onerror="window.__pwned = 1">'
PNG_1x1 = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
    )
).decode()


def _change(**fields: Any) -> dict[str, Any]:
    base = {
        "path": "report.py",
        "status": "modified",
        "kind": "text",
        "brief": "+1 \u22121",
        "diff": ["--- a/report.py", "+++ b/report.py", "@@ -1 +1 @@", "-a = 1", "+a = 2"],
        "cells": [],
        "cut": None,
        "image": None,
        "thumbnail": None,
        "note": "",
        "revertible": True,
    }
    return base | fields


def test_hostile_paths_and_contents_render_as_text() -> None:
    change = _change(
        path=f"{HOSTILE}.py",
        brief=HOSTILE,
        diff=[f"+{HOSTILE}", "-<script>window.__pwned = 1</script>"],
        note=HOSTILE,
    )
    out = file_html(change)
    assert_inert(out)
    assert [tag for tag, _ in parse(out) if tag == "img"] == []
    assert "&lt;img src=x onerror=" in out
    title = title_html({"files": [change], "notes": [HOSTILE], "reverted": [HOSTILE]})
    assert_inert(title)
    assert "&lt;img" in title
    network = {"summary": f"Network: 1 request to {HOSTILE}; 0 bytes in, 0 bytes out"}
    title = title_html({"files": [], "notes": [], "reverted": [], "network": network})
    assert_inert(title)
    assert "Network: 1 request to &lt;img" in title


def test_a_crafted_thumbnail_is_not_an_image() -> None:
    good = file_html(_change(kind="image", thumbnail=f"data:image/png;base64,{PNG_1x1}"))
    images = [attrs for tag, attrs in parse(good) if tag == "img"]
    assert len(images) == 1 and images[0]["class"] == "codeagent-thumbnail"
    assert str(images[0]["src"]).startswith("data:image/png;base64,iVBOR")
    for crafted in (
        'data:image/png;base64,AAAA" onerror="window.__pwned = 1',
        "javascript:window.__pwned = 1",
        "data:text/html;base64,PHNjcmlwdD4=",
    ):
        out = file_html(_change(kind="image", thumbnail=crafted))
        assert_inert(out)
        assert [tag for tag, _ in parse(out) if tag == "img"] == [], crafted


def test_every_colour_is_a_jupyterlab_variable() -> None:
    markup = [
        file_html(_change()),
        file_html(
            _change(cells=["+ cell 1 (code) added: x", "~ cell 2 (code) changed: y"], diff=[])
        ),
        file_html(_change(note="too big to diff: sizes only", cut=400)),
        title_html({"files": [_change()], "notes": ["a note"], "reverted": ["x.py"]}),
    ]
    assert sum(len(colours(m)) for m in markup) >= 10  # the check sees the colours
    for piece in markup:
        assert_themed(piece)
    diff = file_html(_change())
    assert "color:var(--jp-mirror-editor-keyword-color)" in diff  # added lines
    assert "color:var(--jp-mirror-editor-string-color)" in diff  # removed lines
    assert "diff cut at 400 lines" in markup[2]


def test_the_section_shows_files_and_hides_when_there_are_none() -> None:
    panel = AgentPanel(None)
    view = panel.changes
    assert isinstance(view, ChangesView) and view.widget.layout.display == "none"
    view.show(
        {
            "available": True,
            "files": [_change(), _change(path="big.bin", kind="large", revertible=False)],
            "notes": [],
            "reverted": [],
        }
    )
    assert view.widget.layout.display == ""
    assert "2 files changed" in view.title.value
    assert [b.description for b in view.buttons.values()] == ["Revert this file"] * 2
    assert [b.disabled for b in view.buttons.values()] == [False, True]
    view.show({"available": True, "files": [], "notes": [], "reverted": []})
    assert view.widget.layout.display == "none"
    view.show({"available": False, "message": "no snapshots", "files": []})
    assert view.widget.layout.display == "none"
