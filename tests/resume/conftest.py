"""The server fixtures of ``tests/server`` (a real Jupyter server with the extension)."""

from tests.server.conftest import *  # noqa: F403  (fixtures and the marker registration)
from tests.server.conftest import pytest_configure  # noqa: F401
