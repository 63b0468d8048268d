"""A real package index on 127.0.0.1 for each test that asks for one (see ``index.py``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.packages.index import Served, served_index


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    with served_index(tmp_path) as index:
        yield index
