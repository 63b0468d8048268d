"""Fixtures shared by every test area."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.scripted_model import ScriptedModelServer


@pytest.fixture
def scripted_model() -> Iterator[ScriptedModelServer]:
    """A started scripted model server with an empty script: call ``set_script`` first."""
    server = ScriptedModelServer([]).start()
    try:
        yield server
    finally:
        server.stop()
