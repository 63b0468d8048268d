"""The sandbox's URLs in the session notebook's Network cell are text, never Markdown.

The broker accepts any printable ASCII in a request target, so a URL can carry
``<img/src=x/onerror=…>``, a Markdown link or a fence of its own. The recorder puts each
request in a fenced text block; a URL cannot close the fence. Real recorder, real events,
the notebook read back from disk.
"""

from __future__ import annotations

from pathlib import Path

import nbformat

from codeagent_jupyter import events as ev
from codeagent_jupyter.core.bus import EventBus
from codeagent_jupyter.record.network_cell import MAX_LINES
from codeagent_jupyter.record.recorder import NotebookRecorder

HOSTILE = [
    "http://x.test/<img/src=x/onerror=alert(1)>",
    "http://x.test/[click](javascript:alert(1))",
    "http://x.test/````%0A<script>alert(1)</script>",
    "http://x.test/\x1b[2J",
]


def _network_cell(tmp_path: Path, urls: list[str]) -> str:
    recorder = NotebookRecorder(tmp_path / "s.ipynb")
    bus = EventBus([recorder.emit])
    bus.publish(ev.RunStarted, prompt="fetch", run_index=0)
    for url in urls:
        bus.publish(ev.NetworkRequest, method="GET", url=url, status=403, rule="default deny")
    bus.publish(ev.RunFinished, status=ev.ANSWERED, answer="done")
    notebook = nbformat.read(tmp_path / "s.ipynb", as_version=4)
    [cell] = [c for c in notebook.cells if c.metadata["codeagent"].get("kind") == "network"]
    return str(cell.source)


def test_hostile_urls_stay_inside_one_fenced_text_block(tmp_path: Path) -> None:
    source = _network_cell(tmp_path, HOSTILE)
    head, fenced = source.split("\n````text\n", 1)
    body, after = fenced.rsplit("\n````", 1)
    assert head.startswith("**Network:** 4 requests") and after == ""
    assert "````" not in body  # no URL closes the fence early
    assert "<img/src=x/onerror=alert(1)>" in body and "\x1b" not in source


def test_a_run_lists_at_most_max_lines_then_counts(tmp_path: Path) -> None:
    urls = [f"http://x.test/{i}" for i in range(MAX_LINES + 5)]
    source = _network_cell(tmp_path, urls)
    assert source.count("GET http://x.test/") == MAX_LINES
    assert "… and 5 more (all in the event log)" in source
