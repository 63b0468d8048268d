"""The package index through the same door: installs for a sandbox under a policy.

Under ``--network policy`` the host-side package resolution (pip with ``--only-binary``,
and the wheel downloads) must not become a way around the sandbox's policy: for each
install call it reaches the index through a broker of its own, on a free port of
127.0.0.1 for that call only, whose allow-list is exactly the package policy's index hosts
(and ``files.pythonhosted.org`` beside ``pypi.org``, where PyPI serves its files). A
lying index that links a wheel on any other host, or a redirect elsewhere, gets the
broker's 403. The sandbox's egress policy lends it what an administrator opened on
purpose (``allow_ranges``, the test-only ``hosts``) and nothing else: its allow-list,
approvals and byte budgets are the sandbox's, not the installer's.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from urllib.parse import urlsplit

from ..errors import ToolError
from .broker import Broker, OnRequest
from .policy import EgressPolicy

FILE_HOSTS = {"pypi.org": ("files.pythonhosted.org",)}
"""Where an index serves its files from another host than its pages."""
METHODS = ("GET", "HEAD", "CONNECT")
WHEEL_MB = 16384.0
"""The broker's own caps, out of the way: the installer's ``max_mb`` bounds a download."""


def index_policy(urls: Iterable[str], base: EgressPolicy | None = None) -> EgressPolicy:
    """An egress policy that allows the hosts (and ports) of the http(s) ``urls`` only."""
    hosts: list[str] = []
    ports: set[int] = set()
    for url in urls:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            continue
        default = 443 if parts.scheme == "https" else 80
        try:
            port = parts.port or default
        except ValueError:
            continue
        for host in (parts.hostname, *FILE_HOSTS.get(parts.hostname, ())):
            if host not in hosts:
                hosts.append(host)
        ports |= {port, 443}
    base = base or EgressPolicy()
    return EgressPolicy(
        allow=tuple(hosts),
        default="deny",
        methods=METHODS,
        ports=tuple(sorted(ports)) or (443,),
        max_response_mb=WHEEL_MB,
        max_session_mb=WHEEL_MB * 4,
        rate_per_minute=max(base.rate_per_minute, 6000),
        allow_ranges=base.allow_ranges,
        hosts=dict(base.hosts),
        store_body_mb=0,
    )


@contextlib.asynccontextmanager
async def open_door(policy: EgressPolicy, on_request: OnRequest | None) -> AsyncIterator[str]:
    """A broker under ``policy`` on 127.0.0.1 while the block runs; its proxy URL. A
    ``ToolError`` raised in the block after the broker refused a request says which one
    and why (pip alone would only say it found no wheel)."""
    broker = Broker(policy, Path(), on_request)
    port = await broker.start_tcp()
    try:
        yield f"http://127.0.0.1:{port}"
    except ToolError as e:
        refused = [r for r in broker.records if not r["allowed"]]
        if not refused:
            raise
        first = refused[0]
        raise ToolError(
            f"install_packages: the egress broker refused {first['method']} {first['url'][:200]}"
            f" ({first['rule']}): under --network policy the index is reached through it, "
            f"and only {', '.join(policy.allow) or 'no host'} may be"
        ) from e
    finally:
        await broker.close()


def index_door(
    urls: Iterable[str], base: EgressPolicy | None = None, on_request: OnRequest | None = None
) -> Callable[[], AbstractAsyncContextManager[str]]:
    """The installer's door (``packages.door.Door``) to the index ``urls``."""
    policy = index_policy(list(urls), base)
    return lambda: open_door(policy, on_request)
