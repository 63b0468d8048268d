"""Fixtures shared by every test area."""

from __future__ import annotations

import os
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


@pytest.fixture(autouse=True, scope="session")
def _temporary_jupyter_data_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Every process a test starts gets a temporary Jupyter data dir, never the user's: the
    CLI keeps its signing key there (tests that need their own set ``JUPYTER_DATA_DIR``)."""
    before = os.environ.get("JUPYTER_DATA_DIR")
    os.environ["JUPYTER_DATA_DIR"] = str(tmp_path_factory.mktemp("jupyter-data"))
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("JUPYTER_DATA_DIR", None)
        else:
            os.environ["JUPYTER_DATA_DIR"] = before
