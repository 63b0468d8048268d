"""Kernel messages as websocket frames, in the two protocols a gateway may speak.

The socket asks for the binary subprotocol ``v1.kernel.websocket.jupyter.org`` (offered by
every gateway built on jupyter_server 2, Kernel Gateway 3.0 included): the gateway then
forwards the kernel's message parts as they are, instead of verifying, parsing, adapting
and re-encoding each one as JSON, which is most of its CPU per message. A gateway that does
not offer it speaks the legacy JSON protocol, in which a message with binary buffers (a
widget's or comm's data) comes as a binary frame of its own. Both are read here, buffers
kept in ``msg["buffers"]``; a binary frame that is no kernel message is dropped.
The framing itself is jupyter_server's (its own encoders and decoders are used).
"""

from __future__ import annotations

import json
import struct
from typing import Any

from jupyter_server.services.kernels.connection.base import (
    deserialize_binary_message,
    deserialize_msg_from_ws_v1,
    serialize_msg_to_ws_v1,
)

V1 = "v1.kernel.websocket.jupyter.org"
"""The binary kernel websocket subprotocol of jupyter_server 2."""


def encode(msg: dict[str, Any], channel: str, protocol: str) -> bytes | str:
    """A request (header, parent_header, metadata, content; no buffers) as one frame."""
    if protocol == V1:
        return bytes(serialize_msg_to_ws_v1(msg, channel, _pack))
    return json.dumps({**msg, "channel": channel, "buffers": []})


def decode(raw: str | bytes, protocol: str) -> dict[str, Any] | None:
    """One frame as a message dict with ``channel`` and ``buffers`` (None: not a message).

    V1: every frame is binary (offsets, channel, then header, parent header, metadata,
    content and buffers as separate parts). Legacy: a text frame is the JSON message; a
    binary frame is a message with buffers (jupyter_server's ``serialize_binary_message``).
    """
    try:
        if isinstance(raw, str):
            return dict(json.loads(raw))
        if not _plausible(raw, protocol == V1):
            return None
        if protocol != V1:
            return dict(deserialize_binary_message(raw))
        channel, parts = deserialize_msg_from_ws_v1(raw)
        header, parent, metadata, content = (json.loads(part) for part in parts[:4])
    except (ValueError, TypeError, IndexError, struct.error):
        return None
    return {
        "header": header,
        "parent_header": parent,
        "metadata": metadata,
        "content": content,
        "buffers": parts[4:],
        "channel": channel,
    }


def _plausible(raw: bytes, v1: bool) -> bool:
    """Whether a binary frame's part count fits its length: the decoders trust that count
    (a garbage frame would have them build a list or format string of billions)."""
    if v1:  # 8-byte count, then count offsets: channel start and end, then each part's end
        count = int.from_bytes(raw[:8], "little") if len(raw) >= 8 else 0
        return count >= 6 and 8 * (count + 1) <= len(raw)
    count = int.from_bytes(raw[:4], "big") if len(raw) >= 4 else 0
    return count >= 1 and 4 * (count + 1) <= len(raw)


def _pack(obj: Any) -> bytes:
    return json.dumps(obj).encode()
