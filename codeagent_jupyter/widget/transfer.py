"""Copy the user's variables toward a sandbox: serialized here, in the user's kernel.

One direction only. A DataFrame travels as Parquet when pyarrow is installed (a format
that holds data, not code), anything else as pickle protocol 5; the sandbox unpickles it
(it already runs untrusted code). Nothing made by the sandbox is ever unpickled here:
what comes back to the user is cells the user runs, or files (see ``refuse_pickle``).
"""

from __future__ import annotations

import hashlib
import importlib.util
import pickle
from dataclasses import dataclass
from typing import Any

from ..util.variables import describe, type_name

PICKLE_MAGIC = b"\x80"
"""Every pickle of protocol 2 or later starts with the PROTO opcode."""


@dataclass(frozen=True)
class Payload:
    """One serialized variable, ready for ``AgentClient.upload``."""

    name: str
    format: str  # "parquet" | "pickle"
    data: bytes | memoryview  # a Parquet file is Arrow's own buffer, not copied into bytes
    sha256: str
    described: dict[str, Any]


def serialize(name: str, obj: Any) -> Payload:
    """``obj`` as bytes: Parquet for a pandas DataFrame (when pyarrow is there), else pickle 5.

    A frame Parquet cannot hold (non-string column names, object columns of mixed types)
    falls back to pickle, so ``--with`` never fails on the format alone.
    """
    fmt, data = "pickle", b""
    if type_name(obj) == "pandas.DataFrame" and importlib.util.find_spec("pyarrow"):
        try:
            fmt, data = "parquet", parquet(obj)
        except Exception:
            fmt = "pickle"
    if fmt == "pickle":
        data = pickle.dumps(obj, protocol=5)
    return Payload(name, fmt, data, hashlib.sha256(data).hexdigest(), describe(name, obj))


def parquet(frame: Any) -> memoryview:
    """``frame`` as an uncompressed Parquet file, the fastest way Parquet has.

    The bytes only cross the loopback to the user's own server, so compression (snappy by
    default) would cost more time than it saves: it is off. Dictionary encoding is kept
    only for columns of text and categories, where it shrinks the file; for numbers and
    dates it is a wasted pass, and so are statistics for a file read once. pandas' own
    ``to_parquet`` still checks what Parquet cannot hold (non-string column names, mixed
    object columns) and raises.
    """
    import pyarrow as pa

    dictionary = [str(c) for c, dtype in frame.dtypes.items() if dtype.kind not in _FIXED]
    sink = pa.BufferOutputStream()
    frame.to_parquet(sink, compression=None, use_dictionary=dictionary, write_statistics=False)
    return memoryview(sink.getvalue())


_FIXED = "biufcmM"
"""numpy dtype kinds of fixed width: bool, integers, floats, complex, timedelta, datetime."""


async def upload_all(client: Any, payloads: list[Payload], say: Any) -> list[str]:
    """Upload each payload (``AgentClient.upload``); their ids, for ``AgentClient.start``.
    A refusal (over the server's cap: 413) raises ``ClientError`` before any session."""
    ids = []
    for payload in payloads:
        say(f"copying {payload.name} ({len(payload.data):,} bytes) to the sandbox…")
        sent = await client.upload(payload.name, payload.format, payload.data, payload.sha256)
        ids.append(sent["id"])
    return ids


class PickleRefused(ValueError):
    """Sandbox-made bytes that would run code when loaded here."""


def refuse_pickle(data: bytes | str | None) -> None:
    """Raise ``PickleRefused`` for a pickle (any protocol that starts with PROTO); the
    panel and the notebook bridge call this on every binary payload they are handed."""
    if isinstance(data, str):
        data = data.encode("latin-1", "replace")
    if data and data[:1] == PICKLE_MAGIC and len(data) > 1 and data[1] <= pickle.HIGHEST_PROTOCOL:
        raise PickleRefused("codeagent: refusing a pickle from the sandbox; it would run code here")
