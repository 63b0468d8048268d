"""``codeagent mcp``: the sandbox's tools for one MCP client over stdio.

The client (Claude Code, VS Code, Cursor, any MCP host) starts the command; the sandbox
starts with it and keeps its state until the client leaves (stdin closes, or SIGTERM), then
the kernel is shut down and the session notebook closed. stdout is the protocol's: every
line for people (the isolation first, as ``run`` says it) goes to stderr.

Exit codes: 0 the client left, 1 the sandbox could not start, 2 bad usage.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import fcntl
import importlib
import io
import os
import signal
import sys
import uuid
from pathlib import Path
from typing import Any, BinaryIO

from .args import (
    add_hooks,
    add_install,
    add_isolation,
    add_limits,
    announce,
    existing_workdir,
    install_policy,
    limits_from,
    make_sandbox,
    writable_notebook,
)
from .output import warn
from .tool_flags import add_tools, check_tool_flags, plugin_tools
from .wiring import hook_chain, install_tool, snapshot_sink

MCP_EXAMPLES = """\
examples:
  codeagent mcp --workdir ~/project
  codeagent mcp --workdir ~/project --memory-mb 4096 --cell-timeout 300
  claude mcp add codeagent -- codeagent mcp --workdir ~/project

The MCP client starts this command and talks to it over stdin/stdout; the isolation in
force and the session notebook's path are written to stderr. Exit codes: 0 the client
left, 1 the sandbox could not start, 2 bad usage.
"""


def add_parser(sub: Any) -> None:
    """``codeagent mcp``: the session and sandbox flags of ``run`` (no model: the client's
    agent is the model)."""
    mcp = sub.add_parser(
        "mcp",
        help="serve the sandbox's tools to an MCP client over stdio",
        description="Serve the sandbox's tools (run_cell, run_command, the file tools) to one\n"
        "MCP client over stdio; every call is recorded in a session notebook.",
        epilog=MCP_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    session = mcp.add_argument_group("session")
    session.add_argument(
        "--workdir", type=Path, default=Path.cwd(), help="workspace (default: the current folder)"
    )
    session.add_argument(
        "--out",
        type=Path,
        help="session notebook to write (default: .codeagent/sessions/ID.ipynb in the workspace)",
    )
    add_hooks(session)
    add_tools(session, mcp_servers=False)
    session.add_argument(
        "--no-snapshots",
        action="store_true",
        help="do not snapshot the workspace after each call (such a session cannot be resumed "
        "with its files)",
    )
    sandbox = mcp.add_argument_group(
        "sandbox limits", "What the code may use, and where it runs (see docs/security.md)."
    )
    add_limits(sandbox)
    add_isolation(sandbox)
    add_install(sandbox)


async def run(args: argparse.Namespace) -> int:
    """Serve until the client leaves; the sandbox is shut down however that happens.

    The sandbox starts first: the MCP SDK's import (about two seconds) happens while the
    kernel boots. The protocol's stdin and stdout are moved away from fds 0 and 1 before
    that (``claim_stdio``), so the kernel, started before the transport, cannot write into
    the protocol's stream either."""
    from ..core.starting import StartingSandbox
    from .wiring import prepare_sandbox

    workdir = existing_workdir(args.workdir)
    session_id = uuid.uuid4().hex[:12]
    out = writable_notebook(args.out or workdir / ".codeagent" / "sessions" / f"{session_id}.ipynb")
    limits = limits_from(args)
    install_policy(args)  # bad install flags: one line, before anything starts
    hooks = hook_chain(args.hook, session_id)
    check_tool_flags(args)
    wire_in, wire_out = claim_stdio()
    prepared = asyncio.ensure_future(asyncio.to_thread(prepare_sandbox, args))

    def make() -> Any:
        return make_sandbox(args, workdir, limits)

    starting = StartingSandbox(
        make=make, on_ready=announce, before=prepared, workdir=workdir, limits=limits
    )
    async with starting:
        # The SDK's import (and nbformat's) in a thread once the kernel is launched: done
        # here before, on the loop's thread, they held the launch up until they were done.
        await starting.launched()
        await asyncio.to_thread(_load_server)
        import anyio
        from mcp.server.stdio import stdio_server

        from ..core.bus import EventBus
        from ..mcp.server import build_server, instructions
        from ..mcp.session import SAVE_DELAY_S, ToolSession, sandbox_tools
        from ..record.notary import cli_notary
        from ..record.recorder import NotebookRecorder
        from ..sandbox import report
        from .trust import signing

        stop = _stop_on_signals()
        sandbox = await starting.ready()
        sign = signing(cli_notary())  # its key existed before the sandbox: it is hidden
        stdin = anyio.wrap_file(io.TextIOWrapper(wire_in, encoding="utf-8", errors="replace"))
        stdout = anyio.wrap_file(io.TextIOWrapper(wire_out, encoding="utf-8"))
        async with stdio_server(stdin, stdout) as (read, write):
            recorder = NotebookRecorder(
                out, session_id=session_id, on_saved=sign, save_delay=SAVE_DELAY_S
            )
            sinks: list[Any] = [recorder]
            if not args.no_snapshots:
                sinks.insert(0, snapshot_sink(workdir, recorder))
            if hooks is not None:
                sinks.append(hooks)
            bus = EventBus([s.emit for s in sinks], keep=False)
            network = getattr(sandbox, "network_log", None)
            if network is not None:  # --network policy: each request in the session notebook
                network.attach(bus)
            offered = sandbox_tools(sandbox, workdir, install_tool(args, sandbox))
            offered += plugin_tools(args, sandbox, attended=False)
            tools = ToolSession(offered, sandbox, bus, hooks=hooks)

            async def session_for(ctx: Any) -> ToolSession:
                return tools

            text = instructions(
                report.summary(sandbox.enforcement, sandbox.limits),
                report.warning(sandbox.enforcement),
            )
            server = build_server(session_for, tools.schemas, instructions_text=text)
            warn(f"codeagent mcp: serving on stdio; session notebook {out}")
            serving = asyncio.ensure_future(
                server.run(read, write, server.create_initialization_options())
            )
            try:
                await asyncio.wait({serving, stop}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                serving.cancel()
                stop.cancel()
                with contextlib.suppress(BaseException):
                    await serving
                tools.end("the MCP client left")
                if hooks is not None:
                    await hooks.end({})
    warn(f"Session: {out}")
    return 0


SERVING_MODULES = (
    "anyio",
    "mcp.server.stdio",  # the MCP SDK: about a second
    "codeagent_jupyter.mcp.server",
    "codeagent_jupyter.mcp.session",
    "codeagent_jupyter.record.recorder",  # nbformat
)


def _load_server() -> None:
    """What serving imports, loaded ahead in a thread (see ``run``)."""
    for name in SERVING_MODULES:
        importlib.import_module(name)


def claim_stdio() -> tuple[BinaryIO, BinaryIO]:
    """The protocol's stdin and stdout, moved to private descriptors (above 2, closed on
    exec); fd 0 then reads the null device and fd 1 writes to stderr, as the MCP SDK's own
    transport arranges, but before any child process exists: nothing started afterwards
    (the kernel, a helper) inherits the wire."""
    sys.stdout.flush()
    wire_in = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    wire_out = fcntl.fcntl(1, fcntl.F_DUPFD_CLOEXEC, 3)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    return os.fdopen(wire_in, "rb"), os.fdopen(wire_out, "wb")


def _stop_on_signals() -> asyncio.Future[None]:
    """A future that SIGTERM or SIGINT completes: the client may stop us either way."""
    aio = asyncio.get_running_loop()
    stop: asyncio.Future[None] = aio.create_future()

    def done() -> None:
        if not stop.done():
            stop.set_result(None)

    for sig in (signal.SIGINT, signal.SIGTERM):
        aio.add_signal_handler(sig, done)
    stop.add_done_callback(
        lambda _: [aio.remove_signal_handler(s) for s in (signal.SIGINT, signal.SIGTERM)]
    )
    return stop
