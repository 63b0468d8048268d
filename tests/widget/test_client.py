"""Finding the server from a kernel, and authenticating with its token."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from codeagent_jupyter.widget.client import (
    NO_SERVER,
    AgentClient,
    ClientError,
    ServerInfo,
    ServerNotFound,
    find_server,
    notebook_path,
)


def runtime_info(pid: int, port: int, root: str, token: str = "t") -> dict:
    """The fields of a ``jpserver-<pid>.json`` runtime file that discovery reads."""
    return {"pid": pid, "url": f"http://127.0.0.1:{port}/", "token": token, "root_dir": root}


def test_find_server_matches_the_kernels_parent(tmp_path: Path) -> None:
    servers = [runtime_info(11, 8888, "/elsewhere", "a"), runtime_info(22, 9999, "/other", "b")]
    found = find_server({"JPY_PARENT_PID": "22"}, servers)
    assert found == ServerInfo("http://127.0.0.1:9999/", "b", "/other")
    # No parent match: the one server whose root holds the working directory.
    here = runtime_info(33, 7777, str(Path.cwd()), "c")
    assert find_server({}, [*servers, here]).url == "http://127.0.0.1:7777/"
    # Environment overrides win, and the token override applies to a discovered server.
    env = {"CODEAGENT_SERVER_URL": "http://h:1/base", "CODEAGENT_SERVER_TOKEN": "x"}
    assert find_server(env, servers) == ServerInfo("http://h:1/base/", "x")
    assert find_server({"CODEAGENT_SERVER_TOKEN": "z"}, [here]).token == "z"
    with pytest.raises(ServerNotFound) as err:
        find_server({}, servers)
    assert str(err.value) == NO_SERVER and "\n" not in NO_SERVER
    with pytest.raises(ServerNotFound):
        find_server({}, [])


def test_notebook_path_is_relative_to_the_server_root(tmp_path: Path) -> None:
    server = ServerInfo("http://h/", "", str(tmp_path))
    assert notebook_path(server, {"JPY_SESSION_NAME": "work/a.ipynb"}) == "work/a.ipynb"
    absolute = str(tmp_path / "work" / "b.ipynb")
    assert notebook_path(server, {"JPY_SESSION_NAME": absolute}) == "work/b.ipynb"
    assert notebook_path(server, {"JPY_SESSION_NAME": "/not/under/root.ipynb"}) is None
    assert notebook_path(server, {}) is None


def test_token_is_required_and_checked(run: Any, server_info: ServerInfo) -> None:
    run(_token_is_required_and_checked(server_info))


async def _token_is_required_and_checked(server_info: ServerInfo) -> None:
    good = AgentClient(server_info)
    assert await asyncio.to_thread(good.check) == []  # blocking check from another thread
    assert (await good.health())["model"]["name"] == "scripted"

    bad = AgentClient(ServerInfo(server_info.url, "wrong-token"))
    with pytest.raises(ClientError) as err:
        await bad.sessions()
    assert err.value.status == 403
    with pytest.raises(ServerNotFound) as refused:
        await asyncio.to_thread(bad.check)
    assert "refused the token" in str(refused.value)
    with pytest.raises(ClientError) as bad_field:
        await good.request("POST", "/sessions", {"prompt": "x", "colour": "red"})
    assert bad_field.value.status == 400 and "colour" in str(bad_field.value)

    gone = AgentClient(ServerInfo("http://127.0.0.1:9/", "t"))
    with pytest.raises(ServerNotFound) as unreachable:
        await asyncio.to_thread(gone.check, 2.0)
    assert "cannot reach" in str(unreachable.value) and "\n" not in str(unreachable.value)
