"""``codeagent resume SESSION.ipynb PROMPT [--from-step N]``: carry on a recorded session.

A new sandbox (local, or on ``--gateway-url``) working in ``--workdir`` or the current
folder gets the workspace of the session's last step (or of step N) from that folder's
snapshot store (or ``--snapshots-from``'s), the successful cells are run again to rebuild
the kernel (their fetches answered from the session's recording, ``netreplay.py``), the
model gets the whole earlier conversation, and the run continues with PROMPT. The notebook
is data: its limits may only tighten this command's, and the folder it names is never
adopted (``cli_trust``). Without ``--from-step`` and ``--out`` the session's own notebook
grows by a run; with either, a new notebook is written whose metadata names its parent
(``metadata.codeagent.parent``): a fork, history cut at step N.
"""

from __future__ import annotations

import argparse
import sys
import uuid
from pathlib import Path
from typing import Any

from .. import events as ev
from ..errors import ConfigError, ToolError
from .args import (
    add_delegate,
    add_hooks,
    add_install,
    add_isolation,
    add_limits,
    add_max_steps,
    add_model_flags,
    add_vision,
    positive_int,
)
from .tool_flags import add_tools

RESUME_EXAMPLES = """\
examples:
  codeagent resume .codeagent/sessions/SESSION.ipynb "now plot it by region"
  codeagent resume SESSION.ipynb "try a log scale instead" --from-step 3 --out fork.ipynb

Without --from-step and --out the session's own notebook grows by a run; with either, a new
notebook is written (a fork) whose metadata names the session it came from.
"""


def add_parser(sub: Any) -> None:
    """The ``resume`` subcommand, with the model flags of ``run``."""
    resume = sub.add_parser(
        "resume",
        help="continue (or fork) a recorded session",
        description="Continue a recorded session: a new sandbox gets the workspace of its\n"
        "last step (or of step N), its cells run again, and the model carries on with PROMPT.",
        epilog=RESUME_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    resume.add_argument("session", type=Path, help="a session notebook (.ipynb)")
    resume.add_argument("prompt", help="what to do next, in plain words")
    add_model_flags(resume.add_argument_group("model"))
    session = resume.add_argument_group("session")
    session.add_argument(
        "--from-step",
        type=positive_int,
        help="fork from the state after step N (the cells' metadata step; default: the end)",
    )
    session.add_argument(
        "--workdir",
        type=Path,
        help="workspace to restore the session into (default: the current folder, which must "
        "be the one the session ran in)",
    )
    session.add_argument(
        "--snapshots-from",
        type=Path,
        metavar="DIR",
        help="restore the step's files from the snapshots of this folder (the one the session "
        "ran in), e.g. to fork into an empty --workdir; default: the workspace's own",
    )
    session.add_argument(
        "--out",
        type=Path,
        help="notebook to write (default: the session's own; with --from-step, "
        ".codeagent/sessions/ID.ipynb in the workspace)",
    )
    add_max_steps(session)
    add_vision(session)
    add_hooks(session)
    add_delegate(session)
    add_install(session)
    add_tools(session)
    sandbox = resume.add_argument_group(
        "sandbox limits",
        "the limits of this command line (or the defaults); the session's recorded limits may "
        "only tighten them",
    )
    add_limits(sandbox)
    add_isolation(sandbox)


async def run(args: argparse.Namespace) -> int:
    """``codeagent resume``: the sandbox starts first; the notebook, the model and the
    recorder are readied while it boots; the rebuild runs once it is up."""
    from ..core.bus import EventBus
    from ..core.instructions import recorded_instruction_files, recorded_instructions
    from ..core.netlog import NetworkLog
    from ..core.starting import StartingSandbox
    from ..models.settings import resolve_settings
    from ..record.notary import cli_notary
    from ..record.reader import parse_session
    from ..record.restore import rebuild
    from ..record.resume import plan
    from ..record.snapshots import SnapshotStore
    from . import args as cli_args
    from .netreplay import limits_with, recording_for, say_replayed
    from .tool_flags import check_tool_flags, mcp_tools
    from .trust import read_session_file, workspace
    from .wiring import (
        CliSession,
        build_cli_agent,
        changes_sink,
        drive,
        hook_chain,
        make_model,
        report,
        snapshot_sink,
    )

    notary = cli_notary()
    read = read_session_file(args.session, notary)
    session = read.path
    todo = plan(session, args.from_step, notebook=parse_session(read.text, session))
    settings = cli_args.model_settings_from(args)
    model_name, base_url, api_key = resolve_settings(settings.model, settings.base_url)
    workdir = workspace(args.workdir, todo.workdir, session.name)
    limits = cli_args.limits_from(args).tightened_by(todo.limits)
    session_id = uuid.uuid4().hex[:12]
    fork = args.from_step is not None or (args.out is not None and args.out.resolve() != session)
    if fork and args.out is not None and args.out.resolve() == session:
        raise ConfigError("--out must not overwrite the session being forked")
    default_out = workdir / ".codeagent" / "sessions" / f"{session_id}.ipynb"
    out = cli_args.writable_notebook(args.out or default_out) if fork else session
    # The workspace's own store, or the one this command line names; never a notebook's.
    source = workdir if args.snapshots_from is None else args.snapshots_from
    store = SnapshotStore.for_workspace(cli_args.existing_workdir(source))
    recording = recording_for(args, todo.notebook, cli_args.existing_workdir(source))
    limits = limits_with(limits, recording)
    hooks = hook_chain(args.hook, session_id if fork else todo.session_id)
    check_tool_flags(args)
    read.say_if_unsigned()
    network = NetworkLog()
    unstarted = cli_args.make_sandbox(args, workdir, limits, network, recording)
    async with (
        StartingSandbox(unstarted, on_ready=cli_args.announce) as sandbox,
        mcp_tools(args) as mcp,
    ):
        model = make_model(model_name, base_url, api_key, settings)
        model.load_openai()  # in a thread, while the sandbox boots: the rebuild comes first
        recorder, printer = _recording(read, notary, out, session_id, fork, todo)
        install = await _reinstall(args, sandbox, todo)
        rebuilt = await rebuild(todo, sandbox, store)
        if recording is not None:
            say_replayed(recording)
            if args.network == "policy":
                recording.stop()  # the new run reaches the network under the policy
        meta = recorder.notebook.metadata["codeagent"]
        meta.setdefault("restores", []).append(rebuilt.to_dict())
        changes = changes_sink(workdir, recorder)
        sinks: list[Any] = [snapshot_sink(workdir, recorder), recorder, changes, printer]
        if hooks is not None:
            sinks.append(hooks)
        first_seq = 0 if fork else todo.last_seq + 1  # a resume numbers on
        bus = EventBus([sink.emit for sink in sinks], keep=False, next_seq=first_seq)
        bus.publish(ev.SessionRestored, **rebuilt.event_fields())
        network.attach(bus)
        cli = CliSession(args, workdir, limits, out, recorder.session_id, hooks, install, mcp)
        history = [*todo.messages, {"role": "user", "content": rebuilt.note_for_model()}]
        runs = len(meta.get("runs", []))
        instructions = recorded_instructions(todo.notebook)  # never the workspace's now
        kept = recorded_instruction_files(todo.notebook)
        if kept:
            from .output import warn

            warn(f"codeagent: instructions (as recorded): {', '.join(kept)}")
        loop = build_cli_agent(
            cli,
            model,
            sandbox,
            bus,
            history=history,
            run_index=runs,
            earlier=recorder.notebook,
            instructions=instructions,
            instruction_files=kept,
        )
        try:
            finished = await drive(loop, [args.prompt])
        finally:
            printer.close()
            await model.aclose()
            if hooks is not None:
                await hooks.end({})
    return report(finished, out, changes)


async def _reinstall(args: argparse.Namespace, sandbox: Any, todo: Any) -> Any:
    """The ``install_packages`` tool (``--allow-install``), after reinstalling the packages
    the session had at the cut (same versions, same files) so its cells run again; without
    the flag, a line says what is missing."""
    from ..record.packages import recorded_packages
    from .output import warn
    from .wiring import install_tool

    pins = recorded_packages(todo.notebook, todo.run, todo.step)
    tool = install_tool(args, sandbox)
    if pins and tool is None:
        names = ", ".join(f"{p['name']}=={p['version']}" for p in pins)
        warn(f"codeagent: the session installed {names}; not reinstalled without --allow-install")
    elif pins:
        try:
            done = await tool.restore(pins)
        except ToolError as e:
            warn(f"codeagent: could not reinstall the session's packages: {e}")
        else:
            warn(f"codeagent: reinstalled {done}")
    return tool


def _recording(
    read: Any, notary: Any, out: Path, session_id: str, fork: bool, todo: Any
) -> tuple[Any, Any]:
    """The resumed session's recorder (its own notebook grown, or a fork's new one) and the
    progress printer."""
    from ..record.recorder import NotebookRecorder
    from .terminal import make_printer
    from .trust import signing

    # A fork is a notebook of ours; a notebook carried on in place is signed only if it was
    # ours already (its earlier content is someone else's otherwise).
    on_saved = signing(notary) if fork or read.signed else None
    recorder = NotebookRecorder(out, session_id=session_id, on_saved=on_saved)
    if (
        not fork
        and notary is not None
        and read.signed
        and not notary.knows(notary.digest_of(recorder.notebook))
    ):
        recorder.on_saved = None  # the file changed since it was checked: not ours
    if fork:
        recorder.notebook.metadata["codeagent"]["parent"] = {
            "session_id": todo.session_id,
            "notebook": read.path.name,
            "run": todo.run,
            "step": todo.step,
        }
    return recorder, make_printer(answer_on=sys.stdout)
