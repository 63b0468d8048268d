"""``--network policy``: attacks on the egress broker from code inside a real sandbox.

One real sandbox under a real broker; real HTTP(S) servers on loopback. The data server
listens on 127.0.0.2, which the test policy alone opens (``allow_ranges``) and reaches by a
test host name pinned to it (``hosts``: test-only keys, off by default); a "victim" server
on 127.0.0.1 stands for the user's own localhost services, which must stay out of reach.
Each attack is sent as raw bytes to the sandbox's proxy, so what the broker receives is
exactly the attack. Needs bubblewrap (the sandbox's own network namespace): skipped in the
lane that hides it.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from textwrap import dedent
from typing import Any

import pytest
import pytest_asyncio

from codeagent_jupyter.egress import EgressPolicy
from codeagent_jupyter.sandbox import Sandbox, SandboxLimits, bubblewrap
from tests.egress.origin import CSV, files, origin, self_signed

pytestmark = pytest.mark.asyncio(loop_scope="module")
LIMITS = SandboxLimits(memory_mb=1024, cell_timeout=60, max_processes=64, egress_broker=True)
RAW = """
import socket
def raw(data, timeout=30):
    s = socket.create_connection(("127.0.0.1", 3128), timeout=timeout)
    s.sendall(data)
    out = b""
    while True:
        try:
            chunk = s.recv(65536)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    s.close()
    return out
"""


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    if bubblewrap.find() is None:
        pytest.skip("bubblewrap is not installed: no network namespace for --network policy")
    root = tmp_path_factory.mktemp("origin")
    served = files(root / "www")
    tls, cert = self_signed(root, "secure.test")
    with (
        origin(served) as port,
        origin(served, host="127.0.0.1") as victim,
        origin(served, tls=tls) as tls_port,
    ):
        yield {"port": port, "victim": victim, "tls_port": tls_port, "cert": cert.read_text()}


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def net(
    servers: dict[str, Any], tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[tuple[Sandbox, list[dict[str, Any]]]]:
    policy = EgressPolicy.from_dict(
        {
            "allow": [
                "data.test",
                "secure.test",
                "sneaky.test",
                "internal.test",
                "127.0.0.1",
                "2130706433",
                "0x7f.1",
                "0177.0.0.1",
                "[::ffff:127.0.0.1]",
                "169.254.169.254",
            ],
            "deny": ["*.blocked.test"],
            "default": "deny",
            "ports": [80, 443, 22, servers["port"], servers["victim"], servers["tls_port"]],
            "max_response_mb": 1,
            "allow_ranges": ["127.0.0.2/32"],
            "hosts": {
                "data.test": "127.0.0.2",
                "secure.test": "127.0.0.2",
                "sneaky.test": "127.0.0.1",
                "internal.test": "10.1.2.3",
            },
        }
    )
    records: list[dict[str, Any]] = []
    ws = tmp_path_factory.mktemp("ws")
    async with Sandbox(ws, LIMITS, egress=policy, on_egress=records.append) as sb:
        assert sb.enforcement["egress"] == "broker", sb.enforcement
        await _run(sb, RAW)
        yield sb, records


async def _run(sb: Sandbox, code: str) -> str:
    r = await sb.execute(dedent(code))
    assert r.status == "ok", r.text
    return r.text


async def _raw(sb: Sandbox, request: str) -> str:
    """What the sandbox's proxy answered to these exact bytes (decoded for the asserts)."""
    out = await _run(sb, f"print(raw({request.encode()!r}).decode('latin-1'))")
    return out


async def test_allowed_get_from_urllib_pandas_and_requests(net: Any, servers: Any) -> None:
    sb, records = net
    url = f"http://data.test:{servers['port']}/data.csv"
    out = await _run(
        sb,
        f"""
        import urllib.request, pandas as pd
        print(urllib.request.urlopen({url!r}).read().decode())
        print(pd.read_csv({url!r})["sales"].sum())
        try:
            import requests
        except ImportError:
            print("requests True")
        else:
            print("requests", requests.get({url!r}).text == {CSV!r})
    """,
    )
    assert CSV in out and "42" in out and "requests True" in out
    import hashlib

    mine = [r for r in records if r["url"] == url]
    assert len(mine) >= 2 and all(r["status"] == 200 and r["allowed"] for r in mine)
    assert mine[0]["sha256"] == hashlib.sha256(CSV.encode()).hexdigest()
    assert mine[0]["rule"] == "allow data.test" and mine[0]["bytes_down"] > len(CSV)


async def test_a_program_ignoring_the_proxy_has_no_network(net: Any, servers: Any) -> None:
    sb, _ = net
    out = await _run(
        sb,
        f"""
        import socket
        for host in ("127.0.0.2", "127.0.0.1"):
            try:
                socket.create_connection((host, {servers["port"]}), timeout=5)
                print("REACHED", host)
            except OSError as e:
                print("no way", host, type(e).__name__)
    """,
    )
    assert "REACHED" not in out and out.count("no way") == 2


async def test_denied_hosts_get_403_naming_the_rule(net: Any, servers: Any) -> None:
    sb, records = net
    port = servers["port"]
    for host, rule in (("x.blocked.test", "deny *.blocked.test"), ("other.test", "default deny")):
        out = await _raw(sb, f"GET http://{host}:{port}/ HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n")
        assert out.startswith("HTTP/1.1 403"), out
        assert f"codeagent egress broker: 403 {rule}" in out
        assert any(r["url"].startswith(f"http://{host}") and r["rule"] == rule for r in records)


@pytest.mark.parametrize(
    ("host", "why"),
    [
        ("127.0.0.1", "loopback"),
        ("2130706433", "loopback"),
        ("0x7f.1", "loopback"),
        ("0177.0.0.1", "loopback"),
        ("[::ffff:127.0.0.1]", "loopback"),
        ("169.254.169.254", "link-local"),
        ("sneaky.test", "loopback"),
        ("internal.test", "private"),
    ],
)
async def test_ssrf_forms_are_refused_by_address(
    net: Any, servers: Any, host: str, why: str
) -> None:
    """Allowed by name, each lands on a loopback, private or metadata address: refused."""
    sb, records = net
    port = servers["victim"]
    out = await _raw(sb, f"GET http://{host}:{port}/data.csv HTTP/1.1\r\n\r\n")
    assert out.startswith("HTTP/1.1 403"), out
    assert "address refused" in out and why in out
    assert records[-1]["url"] == f"http://{host}:{port}/data.csv" and not records[-1]["allowed"]
    assert CSV not in out


async def test_connect_to_port_22_is_refused(net: Any) -> None:
    sb, _ = net
    out = await _raw(sb, "CONNECT data.test:2222 HTTP/1.1\r\nHost: data.test:2222\r\n\r\n")
    assert out.startswith("HTTP/1.1 403") and "ports" in out
    out = await _raw(sb, "CONNECT 127.0.0.1:22 HTTP/1.1\r\n\r\n")
    assert out.startswith("HTTP/1.1 403") and "address refused" in out


async def test_host_header_disagreeing_with_the_url_is_refused(net: Any, servers: Any) -> None:
    sb, _ = net
    port = servers["port"]
    out = await _raw(
        sb, f"GET http://data.test:{port}/data.csv HTTP/1.1\r\nHost: 169.254.169.254\r\n\r\n"
    )
    assert out.startswith("HTTP/1.1 400") and "Host header" in out and CSV not in out
    out = await _raw(sb, f"CONNECT data.test:{port} HTTP/1.1\r\nHost: other.test:{port}\r\n\r\n")
    assert out.startswith("HTTP/1.1 400") and "Host header" in out


async def test_content_length_with_transfer_encoding_is_refused(net: Any, servers: Any) -> None:
    sb, _ = net
    port = servers["port"]
    smuggled = (
        f"POST http://data.test:{port}/ HTTP/1.1\r\nHost: data.test:{port}\r\n"
        "Content-Length: 44\r\nTransfer-Encoding: chunked\r\n\r\n"
        f"0\r\n\r\nGET http://127.0.0.1:{servers['victim']}/data.csv HTTP/1.1\r\n\r\n"
    )
    out = await _raw(sb, smuggled)
    assert out.startswith("HTTP/1.1 400") and "Transfer-Encoding" in out and CSV not in out


async def test_an_oversized_response_is_cut_at_the_cap(net: Any, servers: Any) -> None:
    sb, records = net
    url = f"http://data.test:{servers['port']}/big.bin"
    out = await _run(
        sb,
        f"""
        import urllib.request
        got = b""
        try:
            with urllib.request.urlopen({url!r}) as r:
                while chunk := r.read(65536):
                    got += chunk
        except Exception as e:
            print("cut:", type(e).__name__)
        print("bytes", len(got))
    """,
    )
    size = int(re.search(r"bytes (\d+)", out).group(1))  # type: ignore[union-attr]
    assert size <= 1024 * 1024 < 3 * 1024 * 1024
    [rec] = [r for r in records if r["url"] == url]
    assert "cut at max_response_mb 1" in rec["rule"]


async def test_https_goes_through_an_uninspected_tunnel(net: Any, servers: Any) -> None:
    sb, records = net
    port = servers["tls_port"]
    out = await _run(
        sb,
        f"""
        import ssl, urllib.request
        ctx = ssl.create_default_context(cadata={servers["cert"]!r})
        url = "https://secure.test:{port}/data.csv"
        print(urllib.request.urlopen(url, context=ctx).read().decode())
    """,
    )
    assert CSV.strip() in out
    [rec] = [r for r in records if r["url"] == f"secure.test:{port}"]
    assert rec["method"] == "CONNECT" and rec["status"] == 200 and rec["sha256"] == ""
    assert rec["bytes_down"] > len(CSV)


async def test_pip_inside_cannot_download(net: Any) -> None:
    """pip inside has the proxy, but no index: installs go through install_packages."""
    sb, records = net
    before = len(records)
    out = await _run(
        sb,
        """
        import subprocess, sys
        done = subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "-d", "/tmp/dl", "tinyapp"],
            capture_output=True, text=True, timeout=120,
        )
        print("exit", done.returncode)
    """,
    )
    assert "exit 0" not in out
    assert all("pypi" not in r["url"] for r in records[before:])


async def test_two_sandboxes_cannot_reach_each_others_broker(
    net: Any, servers: Any, tmp_path: Path
) -> None:
    sb, records = net
    theirs: list[dict[str, Any]] = []
    policy = EgressPolicy.from_dict({"allow": ["*"], "default": "deny"})
    async with Sandbox(tmp_path, LIMITS, egress=policy, on_egress=theirs.append) as other:
        assert other.egress is not None and other.egress.broker is not None
        path = str(other.egress.broker.path)
        out = await _run(
            sb,
            f"""
            import os, socket
            print("visible", os.path.exists({path!r}))
            s = socket.socket(socket.AF_UNIX)
            try:
                s.connect({path!r})
                print("REACHED")
            except OSError as e:
                print("no way", type(e).__name__)
        """,
        )
        assert "visible False" in out and "REACHED" not in out
        before = len(records)
        await _run(other, RAW)
        await _raw(other, "GET http://only-mine.test/ HTTP/1.1\r\n\r\n")
        await asyncio.sleep(0.2)
        assert [r["url"] for r in theirs] == ["http://only-mine.test/"]
        assert not any("only-mine" in r["url"] for r in records[before:])
    assert json.dumps(theirs)  # plain data
