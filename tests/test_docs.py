"""The docs name what is in the tree: a folder of ``tests/`` that docs/testing.md names
exists (the page once listed folders that had been renamed away)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).parents[1]
_NAMED = re.compile(r"(?<![\w/.-])tests/[\w./-]*[\w]")


def named_paths(text: str) -> list[str]:
    """Every ``tests/…`` path a page names (in code spans, tables or prose)."""
    return sorted(set(_NAMED.findall(text)))


def missing(text: str, root: Path) -> list[str]:
    """The named paths that are neither a folder nor a file (``x`` for ``x.py`` too)."""
    return [
        name
        for name in named_paths(text)
        if not (root / name).exists() and not (root / f"{name}.py").is_file()
    ]


def test_testing_md_names_only_folders_that_exist() -> None:
    text = (ROOT / "docs" / "testing.md").read_text(encoding="utf-8")
    assert len(named_paths(text)) > 15  # the check sees the page's folder list
    assert missing(text, ROOT) == []


def test_the_check_catches_a_folder_that_is_gone() -> None:
    text = "Run `tests/widget` and `tests/loop`; `tests/cli/in_process` and tests/conftest.py."
    assert missing(text, ROOT) == ["tests/loop"]
