"""Which addresses the broker never connects to, and name resolution done once.

The broker resolves a name itself and connects to the very address it checked, so a name
whose second answer differs (DNS rebinding) gains nothing. Every answer must be public:
one private address among the answers refuses the request, so a name cannot smuggle an
internal address in behind a public one. ``allow_ranges`` of the policy are the
administrator's explicit exceptions.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Iterable, Mapping

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network

REFUSED: tuple[tuple[str, str], ...] = (
    ("0.0.0.0/8", "this network"),
    ("127.0.0.0/8", "loopback"),
    ("10.0.0.0/8", "private"),
    ("172.16.0.0/12", "private"),
    ("192.168.0.0/16", "private"),
    ("169.254.0.0/16", "link-local (cloud metadata)"),
    ("100.64.0.0/10", "carrier-grade NAT"),
    ("224.0.0.0/4", "multicast"),
    ("240.0.0.0/4", "reserved"),
    ("::1/128", "loopback"),
    ("::/128", "unspecified"),
    ("fc00::/7", "unique local (private)"),
    ("fe80::/10", "link-local"),
    ("ff00::/8", "multicast"),
    ("64:ff9b::/96", "NAT64 (embeds an IPv4 address)"),
    ("2002::/16", "6to4 (embeds an IPv4 address)"),
)
_REFUSED = tuple((ipaddress.ip_network(net), why) for net, why in REFUSED)
RESOLVE_TIMEOUT_S = 10.0


def networks(ranges: Iterable[str]) -> tuple[Network, ...]:
    """CIDRs of ``allow_ranges``; ``ValueError`` for one that is not a network."""
    return tuple(ipaddress.ip_network(r, strict=False) for r in ranges)


def refusal(address: Address, allowed: Iterable[Network] = ()) -> str | None:
    """Why ``address`` is refused (``"127.0.0.1 is loopback (127.0.0.0/8)"``), or None.

    An IPv4-mapped IPv6 address (``::ffff:127.0.0.1``) is judged as the IPv4 address it
    carries; anything Python does not call global is refused even if no row names it.
    """
    mapped = address.ipv4_mapped if isinstance(address, ipaddress.IPv6Address) else None
    judged: Address = mapped or address
    allowed = tuple(allowed)
    if any(judged.version == net.version and judged in net for net in allowed):
        return None
    for net, why in _REFUSED:
        if judged.version == net.version and judged in net:
            return f"{address} is {why} ({net})"
    if not judged.is_global:
        return f"{address} is not a public address"
    return None


async def resolve(host: str, port: int, hosts: Mapping[str, str] | None = None) -> list[Address]:
    """Every address ``host`` has (IP literals in any spelling: ``2130706433``, ``0x7f.1``).

    ``hosts`` pins names to addresses before any lookup (the policy's test-only mapping).
    Raises ``OSError`` when the name does not resolve (in ``RESOLVE_TIMEOUT_S``).
    """
    if hosts and host in hosts:
        return [ipaddress.ip_address(hosts[host])]
    loop = asyncio.get_running_loop()
    try:
        infos = await asyncio.wait_for(
            loop.getaddrinfo(host, port, type=socket.SOCK_STREAM), RESOLVE_TIMEOUT_S
        )
    except TimeoutError:
        raise OSError(f"resolving {host} timed out") from None
    found: list[Address] = []
    for family, *_, sockaddr in infos:
        if family in (socket.AF_INET, socket.AF_INET6):
            address = ipaddress.ip_address(str(sockaddr[0]).split("%", 1)[0])
            if address not in found:
                found.append(address)
    if not found:
        raise OSError(f"{host} has no address")
    return found
