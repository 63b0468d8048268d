"""Serving a session's recorded fetches to ``replay --model recorded``, ``resume`` and ``fork``.

A session that ran under ``--network policy`` logged each request in its notebook, and the
plain-HTTP ``GET`` bodies went into the workspace's content store (``.codeagent/fetched``).
When the session being replayed or carried on has such requests, its new sandbox gets an
egress broker that answers from that recording instead of the network: it reruns offline,
and a request the recording cannot answer gets a 502 that names it, said here too.

The store read is the workspace's own (or ``--snapshots-from``'s): a notebook names bodies
by digest only, never the folder they are in. ``--network host`` keeps the network as it
is (no recording is served); ``resume``/``fork --network policy`` serves the recording
while the cells are run again and then hands over to the policy for the new run.
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path
from typing import Any

from ..config import SandboxLimits
from ..egress.bodies import BodyStore
from ..egress.replay import Recording
from .output import warn


def recording_for(args: argparse.Namespace, notebook: Any, store_of: Path) -> Recording | None:
    """The recorded requests of ``notebook`` with the content store of the workspace
    ``store_of``; None when it has none, or the flags ask for the host's network or a
    gateway (whose kernels run where no broker of ours does)."""
    if getattr(args, "network", "none") == "host" or getattr(args, "gateway_url", ""):
        return None
    recording = Recording.from_notebook(notebook, BodyStore.for_workspace(store_of))
    return recording if len(recording) else None


def limits_with(limits: SandboxLimits, recording: Recording | None) -> SandboxLimits:
    """``limits`` with the broker as the sandbox's one way out when a recording is served
    (it reaches no network while it plays)."""
    if recording is None or limits.network:
        return limits
    return dataclasses.replace(limits, egress_broker=True)


def say_replayed(recording: Recording | None) -> None:
    """One line for what the recording served, and one per request it could not answer."""
    if recording is None:
        return
    warn(f"codeagent: network: {recording.served} request(s) served from the recording")
    for line in recording.missed:
        warn(f"codeagent: network: {line}")
