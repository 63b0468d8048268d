"""The broker's rules without a socket: addresses, the request parser, the policy.

Each refusal is one line naming what was refused; the address table is the one the
issue lists (loopback, private, link-local and metadata, CGNAT, multicast, IPv6 unique
local and link-local, IPv4-mapped and NAT64 forms).
"""

from __future__ import annotations

import ipaddress
import json
from pathlib import Path
from typing import Any

import pytest

from codeagent_jupyter.egress import EgressPolicy, PolicyError
from codeagent_jupyter.egress.addresses import refusal
from codeagent_jupyter.egress.http1 import BadRequest, parse


@pytest.mark.parametrize(
    ("address", "refused"),
    [
        ("127.0.0.1", "loopback"),
        ("10.0.0.1", "private"),
        ("172.16.5.4", "private"),
        ("192.168.1.1", "private"),
        ("169.254.169.254", "link-local"),
        ("100.64.0.1", "carrier-grade NAT"),
        ("224.0.0.1", "multicast"),
        ("0.0.0.0", "this network"),
        ("::1", "loopback"),
        ("fc00::1", "unique local"),
        ("fd12::1", "unique local"),
        ("fe80::1", "link-local"),
        ("::ffff:127.0.0.1", "loopback"),
        ("::ffff:169.254.169.254", "link-local"),
        ("64:ff9b::7f00:1", "NAT64"),
        ("93.184.216.34", None),
        ("2606:4700::1111", None),
    ],
)
def test_addresses(address: str, refused: str | None) -> None:
    why = refusal(ipaddress.ip_address(address))
    assert (why is None) if refused is None else (why is not None and refused in why)


def test_allow_ranges_open_only_what_they_name() -> None:
    ranges = [ipaddress.ip_network("10.20.0.0/16")]
    assert refusal(ipaddress.ip_address("10.20.1.2"), ranges) is None
    assert refusal(ipaddress.ip_address("10.21.1.2"), ranges) is not None


@pytest.mark.parametrize(
    ("head", "status", "words"),
    [
        (b"GET /x HTTP/1.1\r\n\r\n", 400, "absolute http"),
        (b"GET https://a.test/ HTTP/1.1\r\n\r\n", 400, "CONNECT"),
        (b"GET http://u:p@a.test/ HTTP/1.1\r\n\r\n", 400, "credentials"),
        (b"GET http://a.test/ HTTP/1.1\r\nX: 1\r\n folded\r\n\r\n", 400, "folded"),
        (b"GET http://a.test/ HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", 400,
         "conflicting"),
        (b"GET http://a.test/ HTTP/1.1\r\nContent-Length: -1\r\n\r\n", 400, "Content-Length"),
        (b"POST http://a.test/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", 411, "chunked"),
        (b"GET http://a.test/\x1b[2J HTTP/1.1\r\n\r\n", 400, "control"),
        (b"GET http://a.test/ HTTP/1.1\r\nHost: a.test\r\nHost: b.test\r\n\r\n", 400, "more than"),
        (b"CONNECT a.test HTTP/1.1\r\n\r\n", 400, "host:port"),
    ],
)  # fmt: skip
def test_the_parser_refuses_ambiguity(head: bytes, status: int, words: str) -> None:
    with pytest.raises(BadRequest) as caught:
        parse(head)
    assert caught.value.status == status and words in caught.value.reason


def test_policy_rules() -> None:
    policy = EgressPolicy.from_dict(
        {"allow": ["*.example.org", "data.test"], "deny": ["bad.example.org"], "default": "deny"}
    )
    assert policy.decide("a.example.org", 443, "GET").rule == "allow *.example.org"
    assert not policy.decide("example.org", 443, "GET").allowed  # the apex is not below it
    assert policy.decide("bad.example.org", 443, "GET").rule == "deny bad.example.org"
    assert policy.decide("Data.Test.", 80, "GET").allowed
    assert policy.decide("data.test", 22, "CONNECT").rule == "ports 80, 443 (not 22)"
    asked = EgressPolicy().decide("x.test", 443, "GET")
    assert asked.ask and not asked.allowed and "nobody to ask" in asked.rule


@pytest.mark.parametrize(
    ("data", "words"),
    [
        ({"allow": "x.org"}, "allow must be a list"),
        ({"nope": 1}, "unknown egress policy key(s): nope"),
        ({"default": "allow"}, "default must be ask or deny"),
        ({"allow_ranges": ["10.0.0.0/33"]}, "allow_ranges"),
        ({"max_response_mb": float("inf")}, "max_response_mb"),
        ({"allow": ["bad host/x"]}, "not a host pattern"),
        ({"ports": [0]}, "not a port"),
    ],
)
def test_bad_policies_fail_in_one_line(tmp_path: Path, data: Any, words: str) -> None:
    path = tmp_path / "p.json"
    path.write_text(json.dumps(data))
    with pytest.raises(PolicyError) as caught:
        EgressPolicy.from_file(path)
    assert words in str(caught.value) and "\n" not in str(caught.value)
