"""What the CLI wires around a session besides the loop: workspace snapshots and tool hooks.

``run`` and ``resume`` share these, so both take the same ``--hook`` flags and snapshot the
workspace the same way.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from .protocols import EventSink


def add_hooks(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--hook",
        action="append",
        default=[],
        metavar="NAME[:KEY=VALUE,...]",
        help="enable a tool hook (entry-point group codeagent_jupyter.hooks; shipped: policy, "
        "audit), with options, e.g. --hook audit:path=audit.jsonl; repeatable, run in order",
    )


def hook_chain(specs: list[str], session_id: str) -> Any:
    """The hooks named on the command line, or None (unknown names: a usage error)."""
    if not specs:
        return None
    from .hooks import HookChain
    from .hooks.base import parse_spec

    parsed = [parse_spec(spec) for spec in specs]
    options = {name: opts for name, opts in parsed}
    return HookChain.from_names([n for n, _ in parsed], options, session_id=session_id)


def snapshot_sink(workdir: Path, recorder: Any) -> EventSink:
    """Snapshots after each step; before the recorder, so each save includes its step's."""
    from .snapshot_sink import SnapshotRecorder
    from .snapshots import SnapshotStore

    meta = recorder.notebook.metadata["codeagent"]
    store = SnapshotStore.for_workspace(workdir)
    return SnapshotRecorder(store, workdir, meta, session=recorder.session_id)


def add_delegate(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--delegate",
        type=int,
        default=0,
        metavar="N",
        help="offer the model the delegate tool: up to N helper agents per call, each in its "
        "own sandbox (default 0: off)",
    )


def with_delegate(
    loop: Any,
    count: int,
    model: Any,
    workdir: Path,
    make_sandbox: Any,
    earlier: Any = None,
    session_id: str = "",
) -> Any:
    """``loop`` with the ``delegate`` tool added (a new loop on the same bus, sandbox and
    settings; children record to .codeagent/delegates/<session_id>/ and use the parent's tool
    hooks), or ``loop`` when ``count`` is 0. ``earlier``: the notebook of a resumed session,
    whose helpers the new ones are numbered after."""
    if count <= 0:
        return loop
    from .delegate import DelegateSettings, Delegator, offer_delegate
    from .snapshots import SnapshotStore

    settings = DelegateSettings(max_per_call=count, max_total=count * 2)
    store = SnapshotStore.for_workspace(workdir)
    notebooks = workdir / ".codeagent" / "delegates" / session_id
    delegator = Delegator(
        model,
        workdir,
        make_sandbox,
        store,
        notebooks,
        settings,
        session=session_id or None,
    )
    if earlier is not None:
        delegator.count_earlier(earlier)
    return offer_delegate(loop, delegator)
