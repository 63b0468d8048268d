"""Reading a proxy request's head strictly: one interpretation or a refusal.

The head is parsed once, here, and every ambiguity that lets two parsers disagree (request
smuggling) is refused instead of guessed: ``Content-Length`` with ``Transfer-Encoding``,
two different lengths, folded or malformed header lines, a ``Host`` header that names
another host than the request's target, credentials in the URL.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urlsplit

MAX_HEAD = 32 * 1024
"""Bytes of request line and headers a client may send; more is refused (431)."""
_TOKEN = re.compile(rb"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
_METHOD = re.compile(r"^[A-Z]{1,16}$")
_HOST = re.compile(r"^([a-z0-9_]([a-z0-9_.-]*[a-z0-9_])?|\[[0-9a-f:.]+\])$")
HOP_BY_HOP = frozenset(
    {
        "connection",
        "proxy-connection",
        "keep-alive",
        "proxy-authorization",
        "proxy-authenticate",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "host",
    }
)
"""Headers the broker never passes on (it writes its own ``Host`` and ``Connection``)."""


class BadRequest(Exception):
    """A request the broker refuses before any policy: ``status`` and a one-line reason."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


@dataclass(frozen=True)
class Request:
    """One proxy request: a ``CONNECT host:port`` or an absolute ``http://`` URL."""

    method: str
    host: str
    port: int
    path: str
    """Path and query for a plain request (``/data.csv?x=1``); empty for CONNECT."""
    headers: tuple[tuple[str, str], ...]
    body_length: int

    @property
    def url(self) -> str:
        """What the record shows: the URL, query kept; ``host:port`` for a tunnel."""
        if self.method == "CONNECT":
            return f"{self.host}:{self.port}"
        port = "" if self.port == 80 else f":{self.port}"
        return f"http://{self.host}{port}{self.path}"


def parse(head: bytes) -> Request:
    """Parse the bytes up to and including the blank line; ``BadRequest`` when refused."""
    if len(head) > MAX_HEAD:
        raise BadRequest(431, "request head too large")
    lines = head.removesuffix(b"\r\n\r\n").split(b"\r\n")
    if any(b"\n" in line or b"\r" in line or b"\0" in line for line in lines):
        raise BadRequest(400, "bare CR, LF or NUL in the request head")
    parts = lines[0].decode("latin-1").split(" ")
    if len(parts) != 3 or parts[2] not in ("HTTP/1.0", "HTTP/1.1"):
        raise BadRequest(400, "malformed request line")
    method, target, _ = parts
    if any(ord(c) < 0x21 or ord(c) >= 0x7F for c in target):
        raise BadRequest(400, "control or non-ASCII characters in the request target")
    if not _METHOD.match(method):
        raise BadRequest(400, "malformed method")
    headers = _headers(lines[1:])
    length = _body_length(headers)
    if method == "CONNECT":
        host, port = _authority(target, None)
        path = ""
    else:
        host, port, path = _absolute(target)
    named = [v for k, v in headers if k.lower() == "host"]
    if len(named) > 1:
        raise BadRequest(400, "more than one Host header")
    if named and _authority(named[0], port) != (host, port):
        raise BadRequest(400, f"Host header {named[0]!r} disagrees with the target {target!r}")
    return Request(method, host, port, path, tuple(headers), length)


def _headers(lines: list[bytes]) -> list[tuple[str, str]]:
    headers = []
    for line in lines:
        if line[:1] in (b" ", b"\t"):
            raise BadRequest(400, "folded header line")
        name, colon, value = line.partition(b":")
        if not colon or not _TOKEN.match(name):
            raise BadRequest(400, "malformed header line")
        headers.append((name.decode("ascii"), value.strip(b" \t").decode("latin-1")))
    return headers


def _body_length(headers: list[tuple[str, str]]) -> int:
    lengths = {v for k, v in headers if k.lower() == "content-length"}
    encoded = any(k.lower() == "transfer-encoding" for k, _ in headers)
    if lengths and encoded:
        raise BadRequest(400, "Content-Length together with Transfer-Encoding (smuggling)")
    if encoded:
        raise BadRequest(411, "chunked request bodies are not forwarded; send Content-Length")
    if len(lengths) > 1:
        raise BadRequest(400, "conflicting Content-Length headers")
    if not lengths:
        return 0
    value = lengths.pop()
    if not value.isdigit() or len(value) > 15:
        raise BadRequest(400, "malformed Content-Length")
    return int(value)


def _authority(text: str, default_port: int | None) -> tuple[str, int]:
    """``host:port`` (or ``[v6]:port``) as a lower-case host and a port number."""
    text = text.strip().lower()
    host, sep, port_text = text.rpartition(":")
    if not sep or host.endswith(":") or (host.startswith("[") != host.endswith("]")):
        host, port_text = text, ""
    if not port_text:
        if default_port is None:
            raise BadRequest(400, "CONNECT needs host:port")
        port = default_port
    elif port_text.isdigit() and len(port_text) <= 5 and 0 < int(port_text) < 65536:
        port = int(port_text)
    else:
        raise BadRequest(400, f"malformed port in {text!r}")
    host = host.rstrip(".")
    if not _HOST.match(host):
        raise BadRequest(400, f"malformed host {host!r}")
    return host, port


def _absolute(target: str) -> tuple[str, int, str]:
    if not target.lower().startswith("http://"):
        if target.lower().startswith("https://"):
            raise BadRequest(400, "send https:// requests through CONNECT")
        raise BadRequest(400, "a proxy request needs an absolute http:// URL")
    try:
        url = urlsplit(target)
    except ValueError:
        raise BadRequest(400, "malformed URL") from None
    if "@" in url.netloc:
        raise BadRequest(400, "credentials in the URL are not forwarded")
    host, port = _authority(url.netloc, 80)
    path = url.path or "/"
    if url.query:
        path += "?" + url.query
    if any(c in path for c in " \t") or not path.startswith("/"):
        raise BadRequest(400, "malformed path")
    return host, port, path
