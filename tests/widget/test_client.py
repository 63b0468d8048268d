"""Finding the server from a kernel, and authenticating with its token."""

from __future__ import annotations

import asyncio
import json
import os
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
    url = f"http://127.0.0.1:{port}/"
    return {"pid": pid, "url": url, "token": token, "root_dir": root, "base_url": "/"} | {
        "version": "2.21.1"
    }


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


def mcp_runtime_info(pid: int, port: int, root: str) -> dict[str, Any]:
    """What jupyter_server_mcp (brought by Jupyter AI 3.2) writes to jpserver-mcp-<pid>.json:
    the same pid as the Jupyter server it runs in, the URL of its own MCP endpoint."""
    return {
        "pid": pid,
        "host": "localhost",
        "port": port,
        "url": f"http://localhost:{port}/mcp",
        "name": "Jupyter MCP Server",
        "root_dir": root,
    }


class NotFoundServer:
    """A loopback HTTP server answering 404 to everything, as an MCP endpoint does to
    ``/codeagent/api/…``."""

    def __enter__(self) -> int:
        import http.server
        import threading

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self.send_error(404)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return int(self.httpd.server_address[1])

    def __exit__(self, *exc: Any) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def write_runtime_files(runtime: Path, jupyter: dict[str, Any], mcp: dict[str, Any]) -> None:
    """Both files as their writers name them; jupyter_server_mcp's own writer when present."""
    runtime.mkdir(parents=True, exist_ok=True)
    (runtime / f"jpserver-{jupyter['pid']}.json").write_text(json.dumps(jupyter))
    try:
        from jupyter_server_mcp.runtime import info_file_path, write_info_file
    except ImportError:
        (runtime / f"jpserver-mcp-{mcp['pid']}.json").write_text(json.dumps(mcp))
    else:
        write_info_file(info_file_path(runtime, mcp["pid"]), mcp)


def test_discovery_skips_the_mcp_runtime_file_of_jupyter_ai(
    run: Any, tmp_path: Path, jp_serverapp: Any, server_info: ServerInfo
) -> None:
    """Jupyter AI's MCP server writes ``jpserver-mcp-<pid>.json`` (same pid) into the runtime
    directory that ``list_running_servers`` reads; the kernel must still find the Jupyter
    server, whichever of the two files is listed first."""
    from jupyter_server.serverapp import list_running_servers

    pid = os.getpid()  # the test server runs in this process, like jupyter_server_mcp
    jupyter = {**jp_serverapp.server_info(), "pid": pid, "url": server_info.url}
    with NotFoundServer() as mcp_port:
        mcp = mcp_runtime_info(pid, mcp_port, server_info.root_dir or "")
        write_runtime_files(tmp_path / "runtime", jupyter, mcp)
        listed = list(list_running_servers(str(tmp_path / "runtime")))
        assert len(listed) == 2  # jupyter_server lists the MCP file as a server too
        env = {"JPY_PARENT_PID": str(pid)}
        for order in (listed, listed[::-1]):
            assert find_server(env, order).url == server_info.url
            client = run(asyncio.to_thread(AgentClient.discover, env, order))
            assert client.server.url == server_info.url
            assert run(asyncio.to_thread(client.check)) == []
        # An MCP file alone is no Jupyter server: one line saying so, not a 404 later.
        with pytest.raises(ServerNotFound):
            find_server(env, [mcp])


def test_discovery_probes_servers_that_share_the_kernels_parent(
    run: Any, server_info: ServerInfo
) -> None:
    """Two server-like runtime files of the kernel's parent: the one that answers wins."""
    pid = os.getpid()
    with NotFoundServer() as other_port:
        wrong = runtime_info(pid, other_port, "/x")
        right = runtime_info(pid, 0, server_info.root_dir or "", server_info.token)
        right["url"] = server_info.url
        env = {"JPY_PARENT_PID": str(pid)}
        found = run(asyncio.to_thread(AgentClient.discover, env, [wrong, right]))
        assert found.server.url == server_info.url
        with pytest.raises(ServerNotFound) as err:
            run(asyncio.to_thread(AgentClient.discover, env, [wrong, wrong]))
        assert "\n" not in str(err.value)
