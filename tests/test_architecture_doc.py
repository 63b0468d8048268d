"""docs/architecture.md names only modules that exist: every path in a code span (``core/``,
``tools/registry.py``, ``codeagent_jupyter/events.py``) and every bare module name in a row of
its table (``loop.py`` in the ``core/`` row) is in the tree. The page once named modules that
had been renamed away (``cli_args.py``, ``resume_cli.py``)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "codeagent_jupyter"
_SPAN = re.compile(r"`([\w./*-]+(?:\.py|/))`")


def missing(text: str) -> list[str]:
    """Named paths that are no file or folder: a path is tried from the checkout and from
    the package; a bare ``name.py`` from its table row's folder, else anywhere in the package."""
    gone = []
    for line in text.splitlines():
        row_folder = re.match(r"\| `(?:codeagent_jupyter/)?([\w/]+/)`", line)
        for name in _SPAN.findall(line):
            if "*" in name:
                continue  # a pattern (gateway_*.py) stands for several
            places = [ROOT / name, PACKAGE / name]
            if row_folder and "/" not in name:
                places.append(PACKAGE / row_folder.group(1) / name)
            if "/" not in name.rstrip("/"):
                places += list(PACKAGE.rglob(name))
            if not any(p.exists() for p in places):
                gone.append(name)
    return gone


def test_architecture_md_names_only_modules_that_exist() -> None:
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    assert len(_SPAN.findall(text)) > 80  # the check sees the page's module names
    assert missing(text) == []


def test_the_check_catches_a_module_that_is_gone() -> None:
    text = "| `codeagent_jupyter/cli/` | `main.py`, `cli_args.py`; `tools/registry.py`, `x/` |"
    assert missing(text) == ["cli_args.py", "x/"]


def test_it_has_the_how_to_sections() -> None:
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    for heading in ("## Adding a tool", "## Adding a limit", "## Adding an event"):
        assert heading in text
