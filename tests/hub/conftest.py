"""The hub tests: each module's hub (``real_hub.running_hub``), and their marker."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.hub.real_hub import Hub, running_hub


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/hub/" in str(item.fspath).replace(os.sep, "/"):
            item.add_marker(pytest.mark.hub)


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hub]:
    yield from running_hub(tmp_path_factory.mktemp("hub"))
