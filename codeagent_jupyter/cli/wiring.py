"""How the CLI assembles a session (``build_cli_agent``, the one place for ``run`` and
``resume``) and what it wires around it: workspace snapshots, tool hooks, helpers, driving
the run and reporting its end.

``run`` and ``resume`` share these, so both take the same ``--hook`` and ``--delegate``
flags, snapshot the workspace the same way, stop cleanly on Ctrl-C and end with the same
output and exit code.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib
import signal
import sys
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import events as ev
from ..config import AgentConfig, SandboxLimits
from ..core.ports import EventSink
from .args import make_sandbox
from .tool_ask import tool_approver
from .tool_flags import plugin_tools


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


@dataclass
class CliSession:
    """What ``run`` and ``resume`` have decided about a session before building its agent."""

    args: argparse.Namespace
    workdir: Path
    limits: SandboxLimits
    out: Path
    """The session notebook: its helpers' notebooks go next to it."""
    session_id: str
    hooks: Any = None
    install: Any = None
    """The ``install_packages`` tool, made before the agent where a resume restored with it."""
    mcp: list[Any] = field(default_factory=list)
    """The ``--mcp-server`` servers' tools (``tool_flags.mcp_tools``), started already."""


def build_cli_agent(
    s: CliSession,
    model: Any,
    sandbox: Any,
    bus: Any,
    *,
    context: str = "",
    history: Sequence[dict[str, Any]] = (),
    run_index: int = 0,
    earlier: Any = None,
    instructions: str = "",
    instruction_files: Sequence[str] = (),
) -> Any:
    """The CLI's one assembly of a session's agent (``run`` and ``resume``): the standard
    tools on ``sandbox`` (still starting, for ``run``), ``delegate`` with ``--delegate N``,
    the ``--hook`` chain, and for a resume its history and run index. ``earlier``: the
    notebook of a resumed session, whose helpers the new ones are numbered after."""
    from ..core.assembly import build_agent
    from ..tools import ToolBox

    config = AgentConfig(
        max_steps=s.args.max_steps,
        max_wall_s=s.args.max_wall_s,
        max_tokens=s.args.max_tokens,
        vision=s.args.vision,
        instructions=instructions,
    )
    if instruction_files:  # recorded with the run: a resume names what it keeps
        config.extra_context["instruction_files"] = list(instruction_files)
    tools: list[Any] = [ToolBox(sandbox, s.workdir, vision=config.sees(model.name))]
    if s.args.delegate > 0:
        tools.append(_helper_tool(s, model, earlier))
    install = s.install if s.install is not None else install_tool(s.args, sandbox)
    if install is not None:
        tools.append(install)
    plugins = plugin_tools(s.args, sandbox)
    tools += plugins + s.mcp
    return build_agent(
        model,
        sandbox,
        bus,
        config,
        tools=tools,
        approver=tool_approver() if plugins or s.mcp else None,
        hooks=s.hooks,
        context=context,
        history=history,
        run_index=run_index,
    )


def install_tool(args: argparse.Namespace, sandbox: Any) -> Any:
    """``install_packages`` for ``--allow-install`` (None without it); under ``--network
    policy`` pip reaches the index through a broker that lets through its hosts only."""
    from .args import egress_policy, install_policy

    policy = install_policy(args)
    if policy is None:
        return None
    from ..packages.installer import Installer
    from ..tools.install import InstallTool

    door = None
    if getattr(args, "network", "none") == "policy":
        from ..egress.index_door import index_door

        door = index_door(policy.sources, egress_policy(args))
    return InstallTool(sandbox, Installer(policy, door=door), approval=policy.approval)


def _helper_tool(s: CliSession, model: Any, earlier: Any) -> Any:
    """``delegate`` for ``--delegate N``: N helpers a call, 2N a session, each in a sandbox
    the flags choose, with the session's limits; their notebooks next to the session's."""
    from ..record.helper_notebooks import helper_recorders, helpers_folder, helpers_started
    from ..record.snapshots import SnapshotStore
    from ..tools import HelperSettings, HelperTool

    count = s.args.delegate

    def helper_sandbox(path: Path) -> Any:
        return make_sandbox(s.args, path, s.limits)

    return HelperTool(
        model,
        s.workdir,
        helper_sandbox,
        SnapshotStore.for_workspace(s.workdir),
        helper_recorders(helpers_folder(s.out, s.session_id)),
        HelperSettings(max_per_call=count, max_total=count * 2),
        session=s.session_id,
        disk_mb=s.limits.disk_mb,
        earlier=helpers_started(earlier) if earlier is not None else (0, 0),
    )


def make_model(name: str, base_url: str, api_key: str | None, settings: Any) -> Any:
    """The model adapter (``ModelSettings`` ``settings``), ready at once: its requests go
    out through the HTTP client ``openai`` uses until ``load_openai()`` has imported
    ``openai`` in a thread (the first request need not wait two seconds for that import)."""
    from ..models.early import EarlyChatModel

    return EarlyChatModel(name, base_url, api_key, **settings.client_options())


def attach_sinks(bus: Any, sinks: Sequence[EventSink]) -> None:
    """Subscribe ``sinks`` to a bus made with ``keep=True`` before them: the events it kept
    so far go to each sink in order, as if they had been there, and from now on the bus
    keeps nothing (a long run's events stay with the sinks only)."""
    kept, bus.events, bus.keep = list(bus.events), [], False
    for event in kept:
        for sink in sinks:
            sink.emit(event)
    for sink in sinks:
        bus.subscribe(sink.emit)


def prepare_sandbox(args: argparse.Namespace) -> None:
    """What a sandbox's start needs first, done in a thread while the first model request
    leaves: the CLI's signing secret (made now if new, so that the sandbox hides it) and the
    import of the sandbox backend's module (jupyter_client and ZMQ for a local kernel),
    after which making the sandbox takes no time."""
    from ..record.notary import ensure_cli_secret

    ensure_cli_secret()
    backend = ".gateway" if getattr(args, "gateway_url", "") else ".kernel"
    importlib.import_module(backend, "codeagent_jupyter.sandbox")


async def load_signing(launched: Awaitable[None]) -> Callable[[], Any]:
    """Once the sandbox's kernel is launched (``launched``), import what signs and records a
    session (nbformat: up to a second and a half without compiled bytecode) in a thread, off
    the start path; returns ``cli_notary``, to be called on the signing thread (a SQLite
    connection serves only the thread that opened it). A failed start is the start's to
    report, not this."""
    with contextlib.suppress(Exception):
        await launched

    def load() -> Callable[[], Any]:
        from ..record import recorder  # noqa: F401  (nbformat, for the first save)
        from ..record.notary import cli_notary

        return cli_notary

    return await asyncio.to_thread(load)


@dataclass
class SessionSinks:
    """What records and shows a ``run``: ``all`` in delivery order (the snapshots before
    the recorder, so each save includes its step's; the change set after it)."""

    all: list[EventSink]
    printer: Any
    changes: Any = None
    """The change set (None with ``--no-snapshots``): ``report`` prints its line."""


def session_sinks(
    args: argparse.Namespace, workdir: Path, out: Path, session_id: str, notary: Any, hooks: Any
) -> SessionSinks:
    """The session's recorder (signing each save with ``notary``), the terminal's printer,
    the snapshots and the change set (not with ``--no-snapshots``), then the hooks."""
    from ..record.recorder import NotebookRecorder
    from .terminal import make_printer
    from .trust import signing

    recorder = NotebookRecorder(out, session_id=session_id, on_saved=signing(notary))
    printer = make_printer(answer_on=sys.stdout)
    sinks: list[EventSink] = [recorder, printer]
    changes = None
    if not args.no_snapshots:
        sinks.insert(0, snapshot_sink(workdir, recorder))
        sinks.insert(2, changes := changes_sink(workdir, recorder))
    if hooks is not None:
        sinks.append(hooks)
    return SessionSinks(sinks, printer, changes)


async def drive(loop: Any, prompts: list[str]) -> ev.RunFinished:
    """Run the prompts in order; Ctrl-C or SIGTERM stops the run cleanly (still recorded).
    A stop while the sandbox is still starting raises ``RunStopped``: no run began."""
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
    """The answer (once: Markdown on a terminal), what the session did to the files
    (``changes.line()``), the notebook; all of it through the CLI's one writer."""
    from . import output

    if finished.answer:
        output.answer(finished.answer)
    line = changes.line() if changes is not None else None
    if line:
        output.say(line)
    output.say(f"Session: {out}")
    if finished.status != ev.ANSWERED:
        output.warn(f"codeagent: stopped: {finished.reason}")
        return 1
    return 0
