"""``codeagent resume SESSION.ipynb PROMPT [--from-step N]``: carry on a recorded session.

A new sandbox gets the workspace of the session's last step (or of step N), the successful
cells are run again to rebuild the kernel, the model gets the whole earlier conversation,
and the run continues with PROMPT. Without ``--from-step`` and ``--out`` the session's own
notebook grows by a run; with either, a new notebook is written whose metadata names its
parent (``metadata.codeagent.parent``): a fork, history cut at step N.
"""

from __future__ import annotations

import argparse
import uuid
from pathlib import Path
from typing import Any

from . import events as ev
from .cli_session import add_delegate
from .config import AgentConfig, SandboxLimits
from .errors import ConfigError


def add_parser(sub: Any, positive_int: Any, add_isolation: Any, add_hooks: Any) -> None:
    """The ``resume`` subcommand, with the model flags of ``run``."""
    resume = sub.add_parser("resume", help="continue (or fork) a recorded session")
    resume.add_argument("session", type=Path, help="a session notebook (.ipynb)")
    resume.add_argument("prompt", help="what to do next, in plain words")
    resume.add_argument(
        "--from-step",
        type=positive_int,
        help="fork from the state after step N (the cells' metadata step); default: the end",
    )
    resume.add_argument(
        "--workdir", type=Path, help="workspace (default: the session's own); restored into"
    )
    resume.add_argument("--out", type=Path, help="notebook to write (default: see above)")
    resume.add_argument("--model", help="model name (default: $CODEAGENT_MODEL)")
    resume.add_argument("--base-url", help="OpenAI-compatible endpoint")
    resume.add_argument("--stream", action="store_true", help="stream the model's reply")
    resume.add_argument("--max-output-tokens", type=positive_int, default=4096)
    resume.add_argument(
        "--max-steps",
        type=positive_int,
        default=AgentConfig.max_steps,
        help=AgentConfig.help("max_steps"),
    )
    add_isolation(resume)
    add_hooks(resume)
    add_delegate(resume)


async def run(args: argparse.Namespace) -> int:
    from . import cli, cli_args
    from .agent import build_agent
    from .bus import EventBus
    from .cli_session import hook_chain, snapshot_sink, with_delegate
    from .models.openai_chat import OpenAIChatModel, resolve_settings
    from .printer import ProgressPrinter
    from .recorder import NotebookRecorder
    from .restore import rebuild
    from .resume import plan
    from .sandbox import Sandbox
    from .snapshots import SnapshotStore

    if not args.session.is_file():
        raise ConfigError(f"session {str(args.session)!r} not found")
    session = args.session.resolve()
    todo = plan(session, args.from_step)
    model_name, base_url, api_key = resolve_settings(args.model, args.base_url)
    if args.workdir is None and todo.workdir is None:
        raise ConfigError(f"{session.name} does not say its workspace; give --workdir")
    workdir = cli_args.existing_workdir(args.workdir or todo.workdir)
    session_id = uuid.uuid4().hex[:12]
    fork = args.from_step is not None or (args.out is not None and args.out.resolve() != session)
    if fork and args.out is not None and args.out.resolve() == session:
        raise ConfigError("--out must not overwrite the session being forked")
    default_out = workdir / ".codeagent" / "sessions" / f"{session_id}.ipynb"
    out = cli_args.writable_notebook(args.out or default_out) if fork else session
    store = SnapshotStore.for_workspace(todo.workdir) if todo.workdir else None
    model = OpenAIChatModel(
        model_name, base_url, api_key, stream=args.stream, max_output_tokens=args.max_output_tokens
    )
    hooks = hook_chain(args.hook, session_id if fork else todo.session_id)
    unconfined = args.isolation == "none"
    async with Sandbox(
        workdir=workdir, limits=_limits(todo.limits), allow_unconfined=unconfined
    ) as sandbox:
        cli_args.announce(sandbox)
        rebuilt = await rebuild(todo, sandbox, store)
        recorder = NotebookRecorder(out, session_id=session_id)
        meta = recorder.notebook.metadata["codeagent"]
        if fork:
            meta["parent"] = {
                "session_id": todo.session_id,
                "notebook": session.name,
                "run": todo.run,
                "step": todo.step,
            }
        meta.setdefault("restores", []).append(rebuilt.to_dict())
        sinks: list[Any] = [snapshot_sink(workdir, recorder), recorder, ProgressPrinter()]
        if hooks is not None:
            sinks.append(hooks)
        bus = EventBus([s.emit for s in sinks], keep=False)
        if not fork:
            bus.next_seq = todo.last_seq + 1
        bus.publish(ev.SessionRestored, **rebuilt.event_fields())
        loop = build_agent(model, sandbox, bus, AgentConfig(max_steps=args.max_steps))

        def child_sandbox(path: Path) -> Any:
            return Sandbox(workdir=path, limits=sandbox.limits, allow_unconfined=unconfined)

        loop = with_delegate(
            loop,
            args.delegate,
            model,
            workdir,
            child_sandbox,
            earlier=recorder.notebook,
            session_id=recorder.session_id,
        )
        loop.messages += todo.messages
        loop.messages.append({"role": "user", "content": rebuilt.note_for_model()})
        loop.run_index = len(meta.get("runs", []))
        loop.runner.hooks = hooks
        try:
            finished = await cli._drive(loop, [args.prompt])
        finally:
            await model.aclose()
            if hooks is not None:
                await hooks.end({})
    return cli._report(finished, out)


def _limits(recorded: dict[str, Any]) -> SandboxLimits:
    """The session's own limits (a cell re-runs under what it first ran under)."""
    try:
        return SandboxLimits.from_dict(recorded) if recorded else SandboxLimits()
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"the session's recorded limits are not valid: {exc}") from None
