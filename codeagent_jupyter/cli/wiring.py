"""What the CLI wires around a session besides the loop: workspace snapshots, tool hooks,
driving the run and reporting its end.

``run`` and ``resume`` share these, so both take the same ``--hook`` flags, snapshot the
workspace the same way, stop cleanly on Ctrl-C and end with the same output and exit code.
"""

from __future__ import annotations

import asyncio
import signal
import sys
from pathlib import Path
from typing import Any

from .. import events as ev
from ..core.ports import EventSink


def add_hooks(parser: Any) -> None:
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
    from ..hooks import HookChain
    from ..hooks.base import parse_spec

    parsed = [parse_spec(spec) for spec in specs]
    options = {name: opts for name, opts in parsed}
    return HookChain.from_names([n for n, _ in parsed], options, session_id=session_id)


def snapshot_sink(workdir: Path, recorder: Any) -> EventSink:
    """Snapshots after each step; before the recorder, so each save includes its step's."""
    from ..record.snapshot_sink import SnapshotRecorder
    from ..record.snapshots import SnapshotStore

    meta = recorder.notebook.metadata["codeagent"]
    store = SnapshotStore.for_workspace(workdir)
    return SnapshotRecorder(store, workdir, meta, session=recorder.session_id)


def changes_sink(workdir: Path, recorder: Any) -> Any:
    """After the recorder: the notebook's last cell is the session's change set, and
    ``line()`` is the summary ``report`` prints."""
    from ..record.changes_cell import ChangesCell, inside
    from ..record.snapshots import SnapshotStore

    own = inside(workdir, recorder.path)  # an --out notebook in the workspace is not a change
    return ChangesCell(SnapshotStore.for_workspace(workdir), recorder, own)


def add_delegate(parser: Any) -> None:
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
    from ..record.snapshots import SnapshotStore
    from ..tools.delegate import DelegateSettings, Delegator, offer_delegate

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


async def drive(loop: Any, prompts: list[str]) -> ev.RunFinished:
    """Run the prompts in order; Ctrl-C or SIGTERM stops the run cleanly (still recorded)."""
    aio = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        aio.add_signal_handler(sig, loop.cancel, f"stopped by {sig.name}")
    try:
        finished = None
        for prompt in prompts:
            finished = await loop.run(prompt)
            if finished.status != ev.ANSWERED:
                break
        assert finished is not None
        return finished
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            aio.remove_signal_handler(sig)


def report(finished: ev.RunFinished, out: Path, changes: Any = None) -> int:
    """The answer, what the session did to the files (``changes.line()``), the notebook."""
    if finished.answer:
        print(finished.answer)
    line = changes.line() if changes is not None else None
    if line:
        print(line)
    print(f"Session: {out}")
    if finished.status != ev.ANSWERED:
        print(f"codeagent: stopped: {finished.reason}", file=sys.stderr)
        return 1
    return 0
