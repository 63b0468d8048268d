"""Installs through the same door: under ``--network policy`` pip and the wheel downloads
reach the index only through a broker whose allow-list is the index's host (a real index
on 127.0.0.1, a real broker, pip itself).

The broker's records are the proof that pip and the downloads went through it; the index
on loopback is reachable only because the egress policy opens 127.0.0.1 (test-only).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from codeagent_jupyter.egress import EgressPolicy
from codeagent_jupyter.egress.index_door import index_door, index_policy
from codeagent_jupyter.errors import ToolError
from codeagent_jupyter.packages import Installer, PackagePolicy

PINNED = EgressPolicy(allow_ranges=("127.0.0.1/32",), hosts={"pkgs.test": "127.0.0.1"})


def _installer(served: Any, records: list) -> Installer:
    policy = PackagePolicy(index_url=served.url, cache_dir=str(served.cache))
    return Installer(policy, door=index_door(policy.sources, PINNED, records.append))


async def test_an_install_goes_through_the_broker_to_the_index_host_only(
    served: Any, tmp_path: Path
) -> None:
    records: list[dict[str, Any]] = []
    installer = _installer(served, records)
    plan = await installer.plan(["tinyapp"], {})
    assert {w.name for w in plan.wheels} == {"tinyapp", "tinydep"}
    overlay = tmp_path / "overlay"
    overlay.mkdir()
    await installer.install(plan, overlay)
    assert (overlay / "tinyapp" / "__init__.py").is_file()
    assert records and all(r["allowed"] for r in records)
    assert {r["url"].split("/")[2] for r in records} == {f"127.0.0.1:{served.index.port}"}
    assert any("/simple/tinyapp/" in r["url"] for r in records)  # pip's resolution
    assert any(r["url"].endswith(".whl") for r in records)  # and the download


async def test_a_lying_index_cannot_send_pip_to_another_host(served: Any) -> None:
    """The index's page links the wheel on ``localhost`` (the same server, so a request
    that got there would be logged): the broker refuses the host, nothing arrives."""
    port = served.index.port
    page = served.index.root / "simple" / "tinydep"
    listing = json.loads((page / "index.json").read_text())
    for entry in listing["files"]:
        entry["url"] = f"http://localhost:{port}/files/{entry['filename']}"
        entry.pop("core-metadata", None)
        entry.pop("dist-info-metadata", None)
    (page / "index.json").write_text(json.dumps(listing))
    html = (
        (page / "index.html").read_text().replace("../../files/", f"http://localhost:{port}/files/")
    )
    (page / "index.html").write_text(html.replace("data-", "data-x-"))
    records: list[dict[str, Any]] = []
    installer = _installer(served, records)
    before = len(served.index.log)
    with pytest.raises(ToolError) as said:
        await installer.plan(["tinydep"], {})
    assert f"the egress broker refused GET http://localhost:{port}/files/" in str(said.value)
    refused = [r for r in records if not r["allowed"]]
    assert refused and all("localhost" in r["url"] for r in refused)
    assert {r["rule"] for r in refused} == {"default deny"}
    assert not any("/files/" in path for _, path in served.index.log[before:])


async def test_the_door_refuses_every_host_but_the_index() -> None:
    policy = index_policy(["https://pypi.org/simple", "http://pkgs.test:8080/simple"], PINNED)
    assert policy.allow == ("pypi.org", "files.pythonhosted.org", "pkgs.test")
    assert policy.default == "deny" and set(policy.ports) == {443, 8080}
    door = index_door(["http://pkgs.test:8080/simple"], PINNED)
    async with door() as proxy, httpx.AsyncClient(proxy=proxy, trust_env=False) as http:
        answer = await http.get("http://evil.test:8080/simple/")
    assert answer.status_code == 403 and "default deny" in answer.text
