"""Security tests run the real server (the fixtures of ``tests/server``) and the real CLI.

``TokenUsers`` is a real identity provider, configured through the server's own
``identity_provider_class`` setting: it names users by their token, so one server can
hold sessions of alice and bob (and of carol, an instructor) at the same time.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from jupyter_server.auth.identity import IdentityProvider, User

from tests.server.conftest import (  # noqa: F401  (fixtures used by the tests here)
    api,
    echo_kernel_spec,
    http_server,
    http_server_client,
    http_server_port,
    jp_argv,
    jp_asyncio_loop,
    jp_auth_header,
    jp_base_url,
    jp_config_dir,
    jp_configurable_serverapp,
    jp_data_dir,
    jp_env_config_path,
    jp_env_jupyter_path,
    jp_environ,
    jp_fetch,
    jp_home_dir,
    jp_http_port,
    jp_kernel_dir,
    jp_logging_stream,
    jp_nbconvert_templates,
    jp_root_dir,
    jp_runtime_dir,
    jp_server_cleanup,
    jp_server_config,
    jp_serverapp,
    jp_system_config_path,
    jp_system_jupyter_path,
    jp_web_app,
    jp_ws_fetch,
)
from tests.server.conftest import pytest_configure as _server_markers


def pytest_configure(config: Any) -> None:
    _server_markers(config)


@dataclasses.dataclass
class GroupUser(User):
    """A jupyter_server ``User`` with the groups an identity provider (e.g. a hub) gives."""

    groups: list[str] = dataclasses.field(default_factory=list)


USERS = {
    "alice-token": GroupUser("alice"),
    "bob-token": GroupUser("bob"),
    "carol-token": GroupUser("carol", groups=["instructors"]),
}


def as_user(token: str) -> dict[str, str]:
    return {"Authorization": f"token {token}"}


class TokenUsers(IdentityProvider):
    """``Authorization: token alice-token`` is alice, and so on; anything else is no one."""

    def get_user(self, handler: Any) -> User | None:
        token = self.get_token(handler)
        user = USERS.get(token or "")
        if user is not None:
            handler._token_authenticated = True  # API calls with a token skip XSRF checks
        return user

    @property
    def auth_enabled(self) -> bool:
        return True
