"""Markers of the egress tests."""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "broker_options(**options): policy keys and Broker options for the test"
    )
