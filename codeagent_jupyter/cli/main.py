"""The ``codeagent`` command: run a request in a sandbox, replay a recorded session, or
serve the sandbox to an MCP client (``codeagent mcp``).

Exit codes: 0 the model answered (or a replay matched), 1 the run stopped on a budget, a
model error or a mismatch (the session notebook is written all the same), 2 bad usage or
input. Every error is one line on stderr, never a traceback.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import uuid
from pathlib import Path
from typing import Any

from .. import __version__
from ..config import AgentConfig
from ..core.context import build_context
from ..core.instructions import read_instructions
from ..core.ports import EventSink
from ..core.stopping import RunStopped
from ..errors import CodeAgentError, ConfigError, IsolationUnavailable
from ..util.hardening import make_undumpable
from .args import (
    Parser,
    add_install,
    add_isolation,
    add_limits,
    add_run_parser,
    announce,
    check_backend,
    existing_workdir,
    install_policy,
    limits_from,
    make_sandbox,
    model_settings_from,
    read_notebook,
    writable_notebook,
)
from .output import say, warn
from .tool_flags import add_tools, check_tool_flags, mcp_tools, plugin_tools, say_unoffered
from .wiring import (
    CliSession,
    attach_sinks,
    build_cli_agent,
    drive,
    hook_chain,
    install_tool,
    load_signing,
    make_model,
    prepare_sandbox,
    report,
    session_sinks,
)

MCP_EXTRA = "codeagent-jupyter[mcp]"

UNCONFINED = "its code can then read your files and see your processes"
"""What ``--isolation none`` means, said wherever it is suggested."""


def _parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="codeagent",
        description="A coding agent that runs its Python in a sandboxed Jupyter kernel.",
    )
    parser.add_argument("--version", action="version", version=f"codeagent {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    add_run_parser(sub)

    replay = sub.add_parser("replay", help="re-execute or re-drive a recorded session")
    replay.add_argument("session", type=Path, help="a session notebook (.ipynb)")
    replay.add_argument("--workdir", type=Path, default=Path.cwd(), help="workspace (default: .)")
    replay.add_argument(
        "--model",
        choices=("recorded",),
        help="'recorded': re-drive the agent loop from the recorded model turns, offline",
    )
    replay.add_argument("--out", type=Path, help="where to write the replayed session")
    add_limits(replay)
    add_isolation(replay)
    add_install(replay)
    add_tools(replay, mcp_servers=False)

    from . import mcp as mcp_cli
    from . import resume as resume_cli

    resume_cli.add_parser(sub)
    from . import diff as diff_cli

    diff_cli.add_parser(sub)
    mcp_cli.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the console script."""
    make_undumpable()  # we hold the API key: a same-user sandbox must not read our environ
    args = _parser().parse_args(argv)
    try:
        if args.command == "run":
            from ..models.early import warm_up

            warm_up()  # the first request's HTTP client, while the rest is set up
            return asyncio.run(_run(args))
        if args.command == "resume":
            from . import resume as resume_cli

            return asyncio.run(resume_cli.run(args))
        if args.command == "diff":
            from . import diff as diff_cli

            return diff_cli.run(args)
        if args.command == "mcp":
            return asyncio.run(_mcp(args))
        if args.model == "recorded":
            return asyncio.run(_replay_recorded(args))
        return asyncio.run(_reexecute(args))
    except ConfigError as exc:
        warn(f"codeagent: error: {exc}")
        return 2
    except RunStopped as exc:  # stopped while the sandbox was starting: no run began
        warn(f"codeagent: interrupted before the run began ({exc.reason})")
        return 130
    except IsolationUnavailable as exc:
        warn(f"codeagent: error: {exc.explain('--isolation none', UNCONFINED)}")
        return 1
    except CodeAgentError as exc:
        warn(f"codeagent: error: {exc}")
        return 1
    except KeyboardInterrupt:
        warn("codeagent: interrupted")
        return 130
    except Exception as exc:  # a bug of ours: still one line, and say where to look
        warn(f"codeagent: internal error: {type(exc).__name__}: {exc}")
        return 1


async def _run(args: argparse.Namespace) -> int:
    """``codeagent run``: the first model request and the sandbox's start both leave at once
    (see docs/architecture.md, "A sandbox that is still starting")."""
    from ..core.bus import EventBus
    from ..core.netlog import NetworkLog
    from ..core.starting import StartingSandbox
    from ..models.settings import resolve_settings

    settings = model_settings_from(args)
    model_name, base_url, api_key = resolve_settings(settings.model, settings.base_url)
    workdir = existing_workdir(args.workdir)
    session_id = uuid.uuid4().hex[:12]
    out = writable_notebook(args.out or workdir / ".codeagent" / "sessions" / f"{session_id}.ipynb")
    notebook = read_notebook(args.notebook) if args.notebook else None
    limits = limits_from(args)
    install_policy(args)  # bad install flags fail before the sandbox starts
    check_backend(args)  # and flags no sandbox backend takes together
    hooks = hook_chain(args.hook, session_id)
    check_tool_flags(args)
    session = CliSession(args, workdir, limits, out, session_id, hooks)
    network = NetworkLog()
    folder = Path(args.notebook).parent if args.notebook else None  # its own AGENTS.md too
    applied, instructions = read_instructions(workdir, folder)  # before sandbox code runs
    if applied:
        warn(f"codeagent: instructions: {', '.join(applied)}")
    model = make_model(model_name, base_url, api_key, settings)
    prepared = asyncio.ensure_future(asyncio.to_thread(prepare_sandbox, args))

    def make() -> Any:
        return make_sandbox(args, workdir, limits, on_egress=network)

    def ready(sandbox: Any) -> None:
        announce(sandbox)
        model.load_openai()  # for the later requests, now that the kernel is up

    starting = StartingSandbox(
        make=make, on_ready=ready, before=prepared, workdir=workdir, limits=limits
    )
    signing_loaded = asyncio.ensure_future(load_signing(starting.launched()))
    async with starting as sandbox, mcp_tools(args) as session.mcp:
        bus = EventBus(keep=True)  # keeps what comes before the sinks are attached
        context = build_context(workdir, notebook)
        loop = build_cli_agent(
            session,
            model,
            sandbox,
            bus,
            context=context,
            instructions=instructions,
            instruction_files=applied,
        )
        if args.gateway_url:  # a gateway may refuse the sandbox: no model request before it
            await starting.ready()
        running = asyncio.ensure_future(drive(loop, [args.prompt]))  # the request leaves
        printer = None
        try:
            notary = (await signing_loaded)()
            sinks = session_sinks(args, workdir, out, session_id, notary, hooks)
            printer, changes = sinks.printer, sinks.changes
            attach_sinks(bus, sinks.all)
            network.attach(bus)
            finished = await running
        finally:
            if not running.done():
                running.cancel()
                with contextlib.suppress(BaseException):
                    await running
            if printer is not None:
                printer.close()
            await model.aclose()
            if hooks is not None:
                await hooks.end({})
    return report(finished, out, changes)


async def _mcp(args: argparse.Namespace) -> int:
    """The SDK is looked for, not imported: its import comes while the sandbox starts."""
    import importlib.util

    if importlib.util.find_spec("mcp") is None:
        raise CodeAgentError(f"codeagent mcp needs the MCP SDK: pip install {MCP_EXTRA!r}")
    from . import mcp as mcp_cli

    return await mcp_cli.run(args)


async def _replay_recorded(args: argparse.Namespace) -> int:
    from ..core.assembly import build_agent
    from ..core.bus import EventBus
    from ..core.netlog import NetworkLog
    from ..models.replay import ReplayModel
    from ..record.notary import cli_notary
    from ..record.reader import parse_session
    from ..record.recorder import NotebookRecorder, load_session
    from ..tools import ToolBox
    from .netreplay import limits_with, recording_for, say_replayed
    from .terminal import make_printer
    from .trust import read_session_file, signing

    notary = cli_notary()
    read = read_session_file(args.session, notary)
    session = _load_session(load_session, read.path, parse_session(read.text, read.path))
    if not any(session.turns):
        raise ConfigError(f"{str(args.session)!r} has no recorded model turns to replay")
    workdir = existing_workdir(args.workdir)
    default_out = workdir / ".codeagent" / "replays" / args.session.name
    out = writable_notebook(args.out or default_out)
    if out == read.path:
        raise ConfigError("--out must not overwrite the session being replayed")
    if out.exists():
        out.unlink()
    label = f"recorded turns of {session.model}" if session.model else "recorded turns"
    model = ReplayModel(_flat_turns(session.turns), name=label, base_url="")
    limits = limits_from(args).tightened_by(session.notebook.metadata["codeagent"].get("limits"))
    recording = recording_for(args, session.notebook, workdir)
    limits = limits_with(limits, recording)
    check_tool_flags(args)
    read.say_if_unsigned()
    network = NetworkLog()
    async with make_sandbox(args, workdir, limits, network, recording) as sandbox:
        announce(sandbox)
        recorder = NotebookRecorder(out, on_saved=signing(notary))
        printer = make_printer(answer_on=sys.stdout)
        sinks: list[EventSink] = [recorder, printer]
        tools: list[Any] = [ToolBox(sandbox, workdir)]
        install = install_tool(args, sandbox)
        if install is not None:  # the recorded versions first: the replayed calls keep them
            from ..record.packages import recorded_packages

            await install.restore(recorded_packages(session.notebook))
            tools.append(install)
        bus = EventBus([s.emit for s in sinks], keep=False)
        network.attach(bus)
        from ..core.toolset import combine
        from ..tools.mcp_replay import RecordedMcpTools

        # Plugins run again (--tool); MCP servers' calls are answered from the recording.
        tools += [*plugin_tools(args, sandbox), RecordedMcpTools(session.events)]
        say_unoffered(session.events, combine(tools).names)
        loop = build_agent(model, sandbox, bus, AgentConfig(), tools=tools)
        try:
            finished = await drive(loop, list(session.prompts))
        finally:
            printer.close()
    say_replayed(recording)
    return report(finished, out)


async def _reexecute(args: argparse.Namespace) -> int:
    from ..record.notary import cli_notary
    from ..record.reexecute import reexecute
    from .netreplay import limits_with, recording_for, say_replayed
    from .trust import parse_notebook, read_session_file

    read = read_session_file(args.session, cli_notary())
    notebook = parse_notebook(read)
    workdir = existing_workdir(args.workdir)
    meta = notebook.metadata.get("codeagent")
    recorded = meta.get("limits") if isinstance(meta, dict) else None
    recording = recording_for(args, notebook, workdir)  # the fetches, served offline
    limits = limits_with(limits_from(args).tightened_by(recorded), recording)
    read.say_if_unsigned()
    async with make_sandbox(args, workdir, limits, replay=recording) as sandbox:
        announce(sandbox)
        checks = await reexecute(notebook, sandbox)
    say_replayed(recording)
    for check in checks:
        verdict = "match" if check.matched else f"MISMATCH: {check.detail}"
        say(f"cell {check.index} (step {check.step}): {verdict}")
    bad = sum(not c.matched for c in checks)
    say(f"{len(checks) - bad} of {len(checks)} cells match")
    return 1 if bad else 0


def _load_session(loader: Any, path: Path, notebook: Any) -> Any:
    try:
        return loader(path, notebook)
    except CodeAgentError:
        raise
    except Exception as exc:
        raise ConfigError(f"{str(path)!r} is not a session notebook: {exc}") from None


def _flat_turns(turns: list[Any]) -> list[dict[str, Any]]:
    """The recorder may group turns per run; the replay model wants one flat sequence."""
    flat: list[dict[str, Any]] = []
    for turn in turns:
        flat.extend(turn if isinstance(turn, list) else [turn])
    return flat


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
