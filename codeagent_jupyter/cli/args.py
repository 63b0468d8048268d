"""The ``codeagent`` command's building blocks: flags declared from the settings, argument
checks that fail in one line, and the sandbox the flags choose.

Shared by ``cli/main.py`` (run, replay) and ``cli/resume.py`` so every subcommand takes the same
flags the same way.

Over 300 lines on purpose: each flag group is a few lines of help text, and keeping them in
one module is what keeps run, resume, replay and mcp from declaring a flag twice.
"""

from __future__ import annotations

import argparse
import math
import os
import tempfile
from dataclasses import fields
from pathlib import Path
from typing import Any

from ..config import (
    NETWORK_MODES,
    START_ENV,
    STARTS,
    VISION_MODES,
    AgentConfig,
    ModelSettings,
    SandboxLimits,
)
from ..errors import ConfigError
from .tool_flags import add_tools

Flags = Any
"""Where flags are declared: a parser or one of its argument groups (both ``add_argument``)."""

RUN_EXAMPLES = """\
examples:
  codeagent run "load sales.csv and plot monthly revenue" --model gpt-4o-mini
  codeagent run "compute 2 + 3 in python" --model local --base-url http://127.0.0.1:8080/v1
  codeagent run "fit a model to data.csv" --workdir ~/project --memory-mb 4096 --cell-timeout 300
  codeagent run "..." --isolation none     # no bubblewrap here: runs UNCONFINED

The model flags fall back to $CODEAGENT_MODEL, $OPENAI_BASE_URL and $OPENAI_API_KEY (a local
server given with --base-url needs no key). Progress goes to stderr (live on a terminal; set
NO_COLOR for no colour), the answer and the session path to stdout. Exit codes: 0 answered,
1 stopped on a budget or a model error (the session notebook is still written), 2 bad usage.
"""


def add_model_flags(parser: Flags) -> None:
    """One flag per ``ModelSettings`` field (``--model``, ``--base-url``, ``--stream``,
    ``--max-output-tokens``, ``--model-timeout``, ``--model-max-retries``), with the help
    and default declared there: the same flags for ``run`` and ``resume``."""
    for f in fields(ModelSettings):
        name = ModelSettings.setting_name(f.name)
        flag, metavar = "--" + name.replace("_", "-"), name.upper()
        if f.default is None:
            parser.add_argument(flag, dest=f.name, metavar=metavar, help=_lower(f))
        elif isinstance(f.default, bool):
            parser.add_argument(flag, dest=f.name, action="store_true", help=_lower(f))
        else:
            kind = positive_int if isinstance(f.default, int) else positive_float
            if f.name == "max_retries":
                kind = not_negative_int
            parser.add_argument(
                flag,
                dest=f.name,
                metavar=metavar,
                type=kind,
                default=f.default,
                help=f"{_lower(f)} (default: {f.default:g})",
            )


def model_settings_from(args: argparse.Namespace) -> ModelSettings:
    """The ``ModelSettings`` the model flags chose."""
    return ModelSettings(**{f.name: getattr(args, f.name) for f in fields(ModelSettings)})


def _lower(f: Any) -> str:
    """A field's help as a flag says it: lower case first, no full stop."""
    text = ModelSettings.help(f.name).rstrip(".")
    return text[:1].lower() + text[1:]


def add_vision(parser: Flags) -> None:
    """``--vision auto|on|off``: whether images reach the model (``AgentConfig.vision``)."""
    text = AgentConfig.help("vision").rstrip(".")
    parser.add_argument(
        "--vision",
        choices=VISION_MODES,
        default=AgentConfig.vision,
        help=f"{text[:1].lower()}{text[1:]} (default: {AgentConfig.vision})",
    )


def add_max_steps(parser: Flags) -> None:
    """The run's budgets, declared with ``AgentConfig``: ``--max-steps``, ``--max-wall-time``
    (seconds) and ``--max-tokens``; a slow local model may need more than the default time."""
    parser.add_argument(
        "--max-steps",
        type=positive_int,
        default=AgentConfig.max_steps,
        help=f"{AgentConfig.help('max_steps')} (default: {AgentConfig.max_steps})",
    )
    parser.add_argument(
        "--max-wall-time",
        dest="max_wall_s",
        metavar="SECONDS",
        type=finite_seconds,
        default=AgentConfig.max_wall_s,
        help=f"{AgentConfig.help('max_wall_s')} (default: {AgentConfig.max_wall_s:g})",
    )
    parser.add_argument(
        "--max-tokens",
        type=positive_int,
        default=AgentConfig.max_tokens,
        help=f"{AgentConfig.help('max_tokens')} (default: {AgentConfig.max_tokens})",
    )


def add_run_parser(sub: Any) -> None:
    """``codeagent run``: its flags in groups (model, session, sandbox limits), examples last."""
    run = sub.add_parser(
        "run",
        help="run a request and save the session as a notebook",
        description="Run a request: the model plans, writes Python and runs it in a sandbox\n"
        "kernel in the workspace; the session is saved as a notebook.",
        epilog=RUN_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    run.add_argument("prompt", help="what you want done, in plain words")
    add_model_flags(run.add_argument_group("model"))
    session = run.add_argument_group("session")
    session.add_argument(
        "--workdir", type=Path, default=Path.cwd(), help="workspace (default: the current folder)"
    )
    session.add_argument(
        "--out",
        type=Path,
        help="session notebook to write (default: .codeagent/sessions/ID.ipynb in the workspace)",
    )
    session.add_argument(
        "--notebook", type=Path, help="your notebook, given to the model as context"
    )
    add_max_steps(session)
    add_vision(session)
    add_hooks(session)
    add_delegate(session)
    add_install(session)
    add_tools(session)
    session.add_argument(
        "--no-snapshots",
        action="store_true",
        help="do not snapshot the workspace after each step (such a session cannot be resumed "
        "with its files)",
    )
    sandbox = run.add_argument_group(
        "sandbox limits", "What the code may use, and where it runs (see docs/security.md)."
    )
    add_limits(sandbox)
    add_isolation(sandbox)


def add_hooks(parser: Any) -> None:
    parser.add_argument(
        "--hook",
        action="append",
        default=[],
        metavar="NAME[:KEY=VALUE,...]",
        help="enable a tool hook (entry-point group codeagent_jupyter.hooks; shipped: policy, "
        "audit), with options, e.g. --hook audit:path=audit.jsonl; repeatable, run in order",
    )


def add_install(parser: Any) -> None:
    """``--allow-install`` with where packages come from: the same flags on run and resume."""
    parser.add_argument(
        "--allow-install",
        action="store_true",
        help="offer the model the install_packages tool: wheels (never source builds) fetched "
        "outside the sandbox into a read-only package folder on its path, without asking",
    )
    parser.add_argument(
        "--index-url",
        metavar="URL",
        help="the package index to install from (default: PyPI; with --find-links alone, none)",
    )
    parser.add_argument(
        "--find-links",
        action="append",
        default=[],
        type=Path,
        metavar="DIR",
        help="a folder of wheels to install from (offline); repeatable",
    )


def install_policy(args: argparse.Namespace) -> Any:
    """The ``PackagePolicy`` the install flags choose (approval ``auto``: the flag is the
    user's consent), or None without ``--allow-install``; ``ConfigError`` for bad flags."""
    from ..packages.policy import DEFAULT_INDEX, PackagePolicy

    links = [str(p.resolve()) for p in getattr(args, "find_links", [])]
    index = getattr(args, "index_url", None)
    if not getattr(args, "allow_install", False):
        if index or links:
            raise ConfigError("--index-url and --find-links need --allow-install")
        return None
    if index is None:
        index = "" if links else DEFAULT_INDEX
    policy = PackagePolicy(index_url=index, find_links=tuple(links), approval="auto")
    policy.check()
    refusal = policy.writable_source([getattr(args, "workdir", None)])
    if refusal is not None:
        raise ConfigError(f"--find-links: {refusal}")
    return policy


def add_delegate(parser: Any) -> None:
    parser.add_argument(
        "--delegate",
        type=int,
        default=0,
        metavar="N",
        help="offer the model the delegate tool: up to N helper agents per call, each in its "
        "own sandbox (default 0: off)",
    )


class Parser(argparse.ArgumentParser):
    """Usage errors are one line (``codeagent run: error: …``), like every other error."""

    def error(self, message: str) -> Any:
        from ..util.visible import visible

        self.exit(2, visible(f"{self.prog}: error: {message}") + "\n")


def add_isolation(parser: Flags) -> None:
    parser.add_argument(
        "--isolation",
        choices=("auto", "none"),
        default="auto",
        help="auto: refuse to run without pid and filesystem isolation; none: allow an "
        "UNCONFINED sandbox where the machine cannot isolate (its code can read your files)",
    )
    parser.add_argument(
        "--start",
        choices=STARTS,
        default=os.environ.get(START_ENV, "cold"),
        help=f"(default: ${START_ENV}, else cold) cold: the sandbox's kernel starts its own "
        "interpreter; zygote: it is forked, "
        "with numpy, pandas and matplotlib already imported, from a confined process kept for "
        "this workspace (started by the first run, ended after 15 idle minutes; a kernel "
        "restart is a fork); auto: zygote where it can be used "
        "(a local sandbox without --network policy), else cold",
    )
    parser.add_argument(
        "--gateway-url",
        default="",
        help="run the sandbox kernel on this Jupyter kernel gateway instead of locally "
        "(token from $CODEAGENT_GATEWAY_TOKEN; the workspace must be the same path there)",
    )


def check_backend(args: argparse.Namespace, replay: Any = None) -> None:
    """Flags no backend honours together: one line, before anything starts (``run`` makes
    its sandbox only once its first model request is under way)."""
    policy = getattr(args, "network", "none") == "policy" or replay is not None
    if getattr(args, "start", "cold") not in STARTS:  # from the environment's default
        raise ConfigError(f"${START_ENV} must be one of {', '.join(STARTS)}")
    if getattr(args, "gateway_url", "") and policy:
        raise ConfigError("--network policy needs a local sandbox (not --gateway-url)")
    if getattr(args, "start", "cold") == "zygote" and getattr(args, "gateway_url", ""):
        raise ConfigError("--start zygote needs a local sandbox (not --gateway-url)")
    if getattr(args, "start", "cold") == "zygote" and policy:
        raise ConfigError("--start zygote has no egress broker: --network policy starts cold")
    if getattr(args, "start", "cold") == "zygote" and getattr(args, "network", "") == "host":
        raise ConfigError("--start zygote has no network: --network host starts cold")


def _forked(args: argparse.Namespace, policy: bool) -> bool:
    """Whether ``--start`` makes this sandbox a zygote's fork (``auto``: where one can be)."""
    start = getattr(args, "start", "cold")
    if start == "auto":
        if args.gateway_url or policy or getattr(args, "network", "none") == "host":
            return False
        from ..sandbox import bubblewrap

        return bubblewrap.choose(network=False).bwrap is not None  # what the zygote needs
    return bool(start == "zygote")


def make_sandbox(
    args: argparse.Namespace,
    workdir: Path,
    limits: SandboxLimits | None = None,
    on_egress: Any = None,
    replay: Any = None,
) -> Any:
    """An unstarted sandbox from the backend the flags chose (local unless --gateway-url).

    Under ``--network policy`` its broker applies the egress flags, tells ``on_egress``
    each request (a ``NetworkLog``) and keeps complete ``GET`` bodies in the workspace's
    content store; with ``replay`` (a ``Recording``) it answers from that instead while it
    plays. The broker runs beside a local kernel only."""
    from ..sandbox.backend import make_backend

    check_backend(args, replay)
    kind = "gateway" if args.gateway_url else "local"
    options: dict[str, Any] = {"allow_unconfined": args.isolation == "none"}
    policy = getattr(args, "network", "none") == "policy" or replay is not None
    if _forked(args, policy):
        from ..sandbox.zygote_manager import shared_manager_class

        auto = getattr(args, "start", "cold") == "auto"  # a zygote that cannot run: cold
        options["kernel_manager_class"] = shared_manager_class(workdir, cold_fallback=auto)
    if policy:
        from ..egress import EgressPolicy
        from ..egress.bodies import BodyStore
        from .egress_ask import terminal_approver

        policy = egress_policy(args) or EgressPolicy(default="deny")
        options.update(egress=policy, on_egress=on_egress, egress_replay=replay)
        options["egress_bodies"] = BodyStore.for_workspace(workdir, policy.store_body_mb)
        options["approve_egress"] = terminal_approver()
    backend = make_backend(kind, args.gateway_url, **options)
    return backend.create(workdir, limits or SandboxLimits())


def announce(sandbox: Any) -> None:
    """The first progress line: what the sandbox really enforces; then a warning if any."""
    from ..sandbox import report
    from .output import warn

    warn(report.summary(sandbox.enforcement, sandbox.limits))
    warning = report.warning(sandbox.enforcement)
    if warning is not None:
        warn(warning)


def add_limits(parser: Flags) -> None:
    """One flag per sandbox limit (``--memory-mb`` …), with the help and default that
    ``SandboxLimits`` declares, so the CLI and the server's ``limits`` setting agree."""
    for f in fields(SandboxLimits):
        if f.type in ("bool", bool):
            continue
        kind = positive_float if f.type in ("float", float) else positive_int
        flag = "--" + f.name.replace("_", "-")
        parser.add_argument(
            flag,
            type=kind,
            default=f.default,
            help=f"{SandboxLimits.help(f.name)} (default: {f.default})",
        )
    parser.add_argument(
        "--network",
        choices=NETWORK_MODES,
        default="none",
        help="none: its own empty network namespace (the default); host: the machine's "
        "network; policy: only through the egress broker, under --allow-domain and "
        "--egress-policy",
    )
    add_egress(parser)


def add_egress(parser: Flags) -> None:
    """``--allow-domain`` (repeatable) and ``--egress-policy FILE`` for ``--network policy``."""
    parser.add_argument(
        "--allow-domain",
        action="append",
        default=[],
        metavar="HOST",
        help="with --network policy: a host the sandbox may reach (*.example.org for names "
        "below it); repeatable",
    )
    parser.add_argument(
        "--egress-policy",
        type=Path,
        metavar="FILE",
        help="with --network policy: a JSON egress policy (allow, deny, default, methods, "
        "ports, max_response_mb, max_session_mb, rate_per_minute, allow_ranges); see "
        "docs/security.md",
    )


def egress_policy(args: argparse.Namespace) -> Any:
    """The ``EgressPolicy`` the flags choose, or None unless ``--network policy``;
    ``ConfigError`` (one line) for a bad file or flags without ``--network policy``."""
    from ..egress import EgressPolicy, PolicyError

    file, hosts = getattr(args, "egress_policy", None), getattr(args, "allow_domain", [])
    if getattr(args, "network", "none") != "policy":
        if file or hosts:
            raise ConfigError("--allow-domain and --egress-policy need --network policy")
        return None
    try:
        policy = EgressPolicy.from_file(file) if file else EgressPolicy()
        return policy.with_allowed(tuple(hosts)) if hosts else policy
    except PolicyError as e:
        raise ConfigError(str(e)) from None


def limits_from(args: argparse.Namespace) -> SandboxLimits:
    """The limits the flags chose; bad egress flags fail here, before any sandbox starts."""
    egress_policy(args)
    skip = ("network", "egress_broker")
    values = {f.name: getattr(args, f.name) for f in fields(SandboxLimits) if f.name not in skip}
    return SandboxLimits(
        **values, network=args.network == "host", egress_broker=args.network == "policy"
    )


def positive_int(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError("must be a positive whole number")
    return value


def not_negative_int(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError("must be a whole number, 0 or more")
    return value


def positive_float(text: str) -> float:
    value = float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError("must be a positive number")
    return value


def finite_seconds(text: str) -> float:
    """A positive, finite number of seconds (``inf`` and ``nan`` are not budgets)."""
    value = positive_float(text)
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError("must be a finite number of seconds")
    return value


def existing_workdir(path: Path) -> Path:
    if not path.is_dir():
        raise ConfigError(f"workspace {str(path)!r} is not a directory")
    return path.resolve()


def writable_notebook(path: Path) -> Path:
    """Fail before the run, not after it, when the session notebook can't be written."""
    path = path.resolve()
    if path.suffix != ".ipynb":
        raise ConfigError(f"--out {str(path)!r} must end in .ipynb")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path.parent, prefix=".codeagent-check-"):
            pass
    except OSError as exc:
        raise ConfigError(f"cannot write {str(path)!r}: {exc.strerror or exc}") from None
    if path.is_dir():
        raise ConfigError(f"--out {str(path)!r} is a directory")
    return path


def read_notebook(path: Path) -> Any:
    import nbformat  # slow to import (schema validators): only when a notebook is read

    try:
        return nbformat.read(path, as_version=4)
    except FileNotFoundError:
        raise ConfigError(f"notebook {str(path)!r} not found") from None
    except Exception as exc:
        raise ConfigError(f"{str(path)!r} is not a readable notebook: {exc}") from None
