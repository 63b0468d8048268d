"""The project's demo is known by its digest, and only byte for byte (``record.bundled``)."""

from __future__ import annotations

import hashlib
from pathlib import Path

from codeagent_jupyter.record.bundled import BUNDLED, bundled_example

ROOT = Path(__file__).parents[2]


def test_every_bundled_example_is_pinned_to_its_current_text() -> None:
    """Rebuilt the demo (examples/make_demo.py)? Put its new SHA-256 in record/bundled.py."""
    for digest, path in BUNDLED.items():
        text = (ROOT / path).read_text(encoding="utf-8")
        assert hashlib.sha256(text.encode("utf-8")).hexdigest() == digest, path
        assert bundled_example(text) == path


def test_one_byte_changed_is_not_the_example() -> None:
    text = (ROOT / "examples" / "demo.ipynb").read_text(encoding="utf-8")
    assert bundled_example(text.replace("monthly", "Monthly", 1)) is None
    assert bundled_example(text + "\n") is None
