"""The ``CodeAgent`` configurable: every setting an administrator writes as
``c.CodeAgent.<name>`` in ``jupyter_server_config.py`` (or ``--CodeAgent.<name>=…``), with
its validation. The extension app (``app.py``) only wires them to the session manager.

Over 300 lines on purpose: it is the administrator's one list of settings, most of them a
trait and its help text, read as a whole (``jupyter server --help-all`` prints it).
"""

from __future__ import annotations

import copy
import os
from dataclasses import fields
from pathlib import Path
from typing import Any

from jupyter_core.paths import jupyter_data_dir
from traitlets import Bool, Dict, Enum, Float, Int, List, Type, Unicode, default, validate
from traitlets.config import Configurable

from ..config import START_ENV, STARTS, VISION_MODES, AgentConfig, ModelSettings, SandboxLimits
from ..egress import EgressPolicy
from ..errors import ConfigError
from ..packages.policy import PackagePolicy
from ..sandbox.backend import BACKENDS, SETTINGS_HELP, SandboxBackend, make_backend

APPROVAL_POLICIES = ("auto", "ask")
AGENT_TRAITS = ("max_steps", "max_wall_s", "max_tokens", "result_chars", "approval", "vision")
"""``AgentConfig`` fields an administrator sets as ``c.CodeAgent.<name>``."""


def _agent_trait(name: str, more_help: str = "") -> Any:
    """The trait of an ``AgentConfig`` field: its type, default and help come from there."""
    default = getattr(AgentConfig(), name)
    if name == "vision":
        return Enum(VISION_MODES, default, config=True, help=AgentConfig.help(name) + more_help)
    kind = {int: Int, float: Float, dict: Dict}[type(default)]
    return kind(default, config=True, help=AgentConfig.help(name) + more_help)


def _model_trait(name: str, more_help: str = "") -> Any:
    """The trait of a ``ModelSettings`` field (``c.CodeAgent.<setting_name>``): its type,
    default and help come from there."""
    default = getattr(ModelSettings(), name)
    text = ModelSettings.help(name) + more_help
    if default is None:
        return Unicode(None, allow_none=True, config=True, help=text)
    kind = {bool: Bool, int: Int, float: Float}[type(default)]
    return kind(default, config=True, help=text)


class CodeAgent(Configurable):
    """Administrator settings of the agent service (config section ``CodeAgent``)."""

    model = _model_trait("model", " The sessions' default; allowed_models lists others.")
    base_url = _model_trait("base_url")
    recording = Unicode(
        "",
        config=True,
        help=(
            "A session notebook (relative to the server root, or absolute) whose recorded "
            "model turns answer every session instead of a model: offline demos and "
            "classrooms without an API key. Empty: use the configured model."
        ),
    )
    hub_gateway = Unicode(
        "codeagent-gateway",
        config=True,
        help="Inside a JupyterHub single-user server: the hub service that is the class's "
        "model gateway. When the hub lists it, it becomes the endpoint and the student's own "
        "JUPYTERHUB_API_TOKEN the key (unless base_url is set). Empty: never use a gateway.",
    )
    api_key_env = Unicode(
        "OPENAI_API_KEY",
        config=True,
        help="Name of the server environment variable that holds the API key.",
    )
    api_key = Unicode(
        None,
        allow_none=True,
        config=True,
        help="The API key itself (overrides api_key_env). Never sent to any client or recording.",
    )
    allowed_models = List(
        Unicode(),
        config=True,
        help="Models a request may ask for. Empty: only the default model; other models get 403.",
    )
    limits = Dict(
        config=True,
        help="Default sandbox limits; a request may only tighten them. Keys: "
        + "; ".join(f"{f.name}: {SandboxLimits.help(f.name)}" for f in fields(SandboxLimits)),
    )
    egress = Dict(
        None,
        allow_none=True,
        config=True,
        help='The egress policy of sandboxes whose limits say network: "policy" (JSON keys '
        "allow, deny, default, methods, ports, max_response_mb, max_session_mb, "
        "rate_per_minute, allow_ranges; see docs/security.md). None: nothing allowed.",
    )
    pool_size = Int(1, config=True, help="Sandbox kernels kept started and ready for new sessions.")
    pool_max = Int(
        None,
        allow_none=True,
        config=True,
        help="Most sandboxes the pool grows to after bursts of sessions: it keeps as many "
        "as were handed out in the last minute, between pool_size and pool_max, and shrinks "
        "back when idle. Default: pool_size (a fixed pool).",
    )
    pool_memory_mb = Float(
        0.0,
        config=True,
        help="Memory budget of the pool's idle sandboxes (about 150 MB each): caps pool_max. "
        "0: no budget beyond pool_max.",
    )
    sessions_dir = Unicode(
        "",
        config=True,
        help="Where session notebooks are kept; relative paths are under the server root. "
        "Default: codeagent/sessions in the Jupyter data dir, outside every workspace, so "
        "sandbox code cannot reach them. Only notebooks this server signed are loaded.",
    )
    read_groups = List(
        Unicode(),
        config=True,
        help="Groups whose members may list, read and watch every user's sessions (not "
        "change them), e.g. instructors. Others see only their own sessions (404 otherwise).",
    )
    max_prompt_chars = Int(
        100_000,
        config=True,
        help="Longest prompt or follow-up accepted, in characters; longer ones get 413.",
    )
    allow_unconfined = Bool(
        False,
        config=True,
        help="Let sandboxes start without pid and filesystem isolation (no bubblewrap on "
        "this machine). Model-written code can then read your files and processes; health, "
        "the panel and every session notebook say so.",
    )
    kernel_manager_class = Type(
        default_value="jupyter_client.manager.AsyncKernelManager",
        klass="jupyter_client.manager.AsyncKernelManager",
        config=True,
        help="The jupyter_client kernel manager that starts each sandbox kernel (spec "
        "codeagent-sandbox). Another class hosts sandboxes elsewhere without code changes, "
        "e.g. a gateway's kernel manager for Kernel Gateway / Enterprise Gateway.",
    )
    sandbox_backend = Enum(
        BACKENDS, default_value="local", config=True, help=SETTINGS_HELP["sandbox_backend"]
    )
    start = Enum(
        STARTS,
        config=True,
        help="How local sandboxes start. cold: each kernel starts its own interpreter; zygote: "
        "each is forked, with numpy, pandas and matplotlib already imported, from one confined "
        "process started for the server root (the pool's entries too), and one a fork cannot "
        "be (a host or policy network, a folder outside the root) starts cold; auto: zygote "
        "where bubblewrap can build namespaces, else cold. Each sandbox's enforcement says "
        "which start it had. Default: $CODEAGENT_START, else cold.",
    )

    @default("start")
    def _start_default(self) -> str:
        """``$CODEAGENT_START`` (as the CLI's ``--start``), else cold."""
        chosen = os.environ.get(START_ENV, "cold")
        if chosen not in STARTS:
            raise ConfigError(f"${START_ENV} must be one of {', '.join(STARTS)}")
        return chosen

    gateway_url = Unicode("", config=True, help=SETTINGS_HELP["gateway_url"])
    gateway_token = Unicode("", config=True, help=SETTINGS_HELP["gateway_token"])
    prices = Dict(
        config=True,
        help='Model name -> {"input": USD per million prompt tokens, "output": USD per million '
        "completion tokens}; with a price, the panel shows what a session cost.",
    )
    approval = _agent_trait("approval", " They wait for POST .../approvals/{tool_call_id}.")
    packages = Dict(
        default_value=None,
        allow_none=True,
        config=True,
        help='Offer the model install_packages, e.g. {"index_url": "https://pypi.org/simple", '
        '"extra_index_urls": [], "find_links": [], "allow": ["*"], "deny": [], "max_mb": 500, '
        '"approval": "ask", "max_per_call": 10, "cache_dir": ""}: wheels only (never a source '
        "build), fetched outside the sandbox into its read-only package folder, each install "
        "approved by the user (ask) or not (auto). None (the default): no installs.",
    )
    hooks = List(
        Unicode(),
        config=True,
        help="Tool hooks to enable, by name (entry-point group codeagent_jupyter.hooks; "
        "shipped: policy, audit). They run around every tool call, in this order.",
    )
    tools = List(
        Unicode(),
        config=True,
        help="Plugin tools to offer the model, by name (entry-point group "
        "codeagent_jupyter.tools; see docs/tools.md). Installed plugins are offered only "
        "when named here; a name that is not installed or clashes with a built-in tool "
        "stops the server at start.",
    )
    mcp_servers = List(
        Unicode(),
        config=True,
        help="MCP servers whose tools each session offers the model as mcp__NAME__TOOL, as "
        '"[NAME=]COMMAND" (started over stdio per session) or "[NAME=]URL" (Streamable '
        "HTTP). They run outside the sandbox: each call waits for the user's approval "
        "unless the server is in mcp_approve.",
    )
    mcp_approve = List(
        Unicode(), config=True, help="Names of mcp_servers whose calls run without asking."
    )
    hook_options = Dict(
        config=True,
        help='Hook name -> its options, e.g. {"audit": {"path": "/var/log/agent.jsonl"}}.',
    )
    hook_timeout = Float(
        5.0, config=True, help="Seconds one hook call may take; past it the call is denied."
    )
    delegate_max_per_call = Int(
        0,
        config=True,
        help="Offer the model the delegate tool: at most this many helper agents per call, "
        "each in a sandbox of its own with the session's limits (0: no delegate tool).",
    )
    delegate_max_total = Int(
        6, config=True, help="Helper agents one session may start in all (delegate tool)."
    )
    delegate_max_steps = Int(
        10,
        config=True,
        help="Model calls one helper agent may make at most (less when the session's own "
        "budget left is smaller: helpers share it).",
    )
    max_sessions_per_user = Int(
        4,
        config=True,
        help="Open sessions (holding a sandbox) one user may have at once. One more closes "
        "the user's oldest idle session (its sandbox; a message resumes it from its "
        "snapshots); only when all of them are running is the new one refused (429).",
    )
    stream = _model_trait("stream", " Text arrives on the event stream as text_delta events.")
    max_steps = _agent_trait("max_steps")
    max_wall_s = _agent_trait("max_wall_s")
    max_tokens = _agent_trait("max_tokens")
    result_chars = _agent_trait("result_chars")
    mcp = Bool(
        True,
        config=True,
        help="Serve the sandbox's tools to MCP clients at /codeagent/mcp (streamable HTTP, "
        "behind the server's auth; one sandbox per MCP session) when the mcp package is "
        "installed.",
    )
    vision = _agent_trait("vision")
    model_timeout = _model_trait("timeout")
    model_max_retries = _model_trait("max_retries")
    max_output_tokens = _model_trait("max_output_tokens")
    idle_timeout = Float(
        1800.0,
        config=True,
        help="Seconds an idle session keeps its sandbox (for follow-ups) before it is closed; "
        "0 keeps it until the session is deleted.",
    )
    preload = List(
        Unicode(),
        default_value=None,
        allow_none=True,
        config=True,
        help="Modules every pooled sandbox imports before it is handed out (numpy as np, "
        "pandas as pd, matplotlib.pyplot as plt; others under their own name), so a "
        "session's first cell does not wait for them; the model is told. Default (None): "
        "whichever of numpy, pandas, matplotlib.pyplot are installed. [] turns it off.",
    )
    max_upload_mb = Float(
        512.0,
        config=True,
        help="Largest variable %agent --with may copy into a sandbox, in MB (after "
        "serializing); larger uploads get 413 and no session starts.",
    )
    warm_ttl = Float(
        300.0, config=True, help="Seconds a sandbox pre-acquired by /warm waits for its session."
    )
    snapshot_quota_mb = Float(
        1024.0,
        config=True,
        help="Disk each user's workspace snapshots may take on the server, in MiB (stored "
        "compressed, shared between steps). When full, that user's oldest snapshots of closed "
        "sessions are collected first; files that still do not fit are skipped, and health "
        "and the session summary say so.",
    )

    @validate("preload")
    def _check_preload(self, proposal: dict[str, Any]) -> list[str] | None:
        for name in proposal["value"] or []:
            if not all(part.isidentifier() for part in name.split(".")):
                raise ValueError(f"preload: {name!r} is not a module name")
        return proposal["value"]

    def preload_modules(self) -> list[str]:
        from ..sandbox.preload import default_preload

        return default_preload() if self.preload is None else list(self.preload)

    @validate("tools")
    def _check_tools(self, proposal: dict[str, Any]) -> list[str]:
        from ..tools.plugins import load

        try:
            load(proposal["value"])
        except ConfigError as e:
            raise ValueError(f"tools: {e}") from None
        return list(proposal["value"])

    @validate("mcp_servers")
    def _check_mcp_servers(self, proposal: dict[str, Any]) -> list[str]:
        from ..tools.mcp_tools import parse_specs

        try:
            parse_specs(list(proposal["value"]))
        except ConfigError as e:
            raise ValueError(f"mcp_servers: {e}") from None
        return list(proposal["value"])

    def mcp_specs(self) -> list[Any]:
        """The parsed ``mcp_servers`` (``ConfigError`` in one line when wrong)."""
        from ..tools.mcp_tools import parse_specs

        return parse_specs(list(self.mcp_servers), list(self.mcp_approve))

    @validate("limits")
    def _check_limits(self, proposal: dict[str, Any]) -> dict[str, Any]:
        SandboxLimits.from_dict(proposal["value"])  # raises with a one-line message
        return proposal["value"]

    @validate("delegate_max_per_call", "delegate_max_total", "delegate_max_steps")
    def _check_not_negative(self, proposal: dict[str, Any]) -> int:
        if proposal["value"] < 0:
            raise ValueError(f"{proposal['trait'].name} must not be negative")
        return int(proposal["value"])

    @validate("snapshot_quota_mb")
    def _check_quota(self, proposal: dict[str, Any]) -> float:
        value = proposal["value"]
        if not value > 0 or value == float("inf"):
            raise ValueError("snapshot_quota_mb must be a positive, finite number of MiB")
        return float(value)

    @validate("max_prompt_chars", "max_steps", "result_chars", "max_sessions_per_user")
    def _check_positive(self, proposal: dict[str, Any]) -> int:
        if proposal["value"] <= 0:
            raise ValueError(f"{proposal['trait'].name} must be a positive whole number")
        return int(proposal["value"])

    @validate("approval")
    def _check_approval(self, proposal: dict[str, Any]) -> dict[str, Any]:
        for tool, policy in proposal["value"].items():
            if policy not in APPROVAL_POLICIES:
                raise ValueError(f"approval for {tool!r} must be 'auto' or 'ask', not {policy!r}")
        return proposal["value"]

    @validate("packages")
    def _check_packages(self, proposal: dict[str, Any]) -> dict[str, Any] | None:
        if proposal["value"] is not None:
            try:
                PackagePolicy.from_dict(proposal["value"])
            except ConfigError as e:
                raise ValueError(str(e)) from None
        return proposal["value"]

    @validate("egress")
    def _check_egress(self, proposal: dict[str, Any]) -> dict[str, Any] | None:
        if proposal["value"] is not None:
            EgressPolicy.from_dict(proposal["value"])  # PolicyError: a one-line ValueError
        return proposal["value"]

    def egress_policy(self) -> EgressPolicy | None:
        """The egress policy brokers apply (None: the default, nothing allowed)."""
        return None if self.egress is None else EgressPolicy.from_dict(self.egress)

    def package_policy(self) -> PackagePolicy | None:
        """The install policy, or None when installs are off."""
        return None if self.packages is None else PackagePolicy.from_dict(self.packages)

    def sandbox_backend_of(self, root_dir: Path | None = None) -> SandboxBackend:
        """The backend that makes every sandbox (``ConfigError`` for a bad choice); with
        ``start`` zygote or auto, a zygote serving ``root_dir`` (started at the first fork)."""
        local = self.sandbox_backend == "local"
        options: dict[str, Any] = {"egress": self.egress_policy()} if local else {}
        zygote = self._zygote(root_dir)
        if zygote is not None:
            options.update(zygote=zygote, cold_fallback=self.start == "auto")
        return make_backend(
            self.sandbox_backend,
            self.gateway_url,
            self.gateway_token,
            allow_unconfined=self.allow_unconfined,
            kernel_manager_class=self.kernel_manager_class,
            **options,
        )

    def _zygote(self, root_dir: Path | None) -> Any:
        """The zygote ``start`` asks for, unstarted; None for a cold start."""
        if self.start == "cold" or root_dir is None:
            return None
        from jupyter_client.manager import AsyncKernelManager

        from ..sandbox import bubblewrap

        if self.sandbox_backend != "local" or self.kernel_manager_class is not AsyncKernelManager:
            if self.start == "zygote":
                raise ConfigError("start zygote needs the local backend's own kernel manager")
            return None
        if self.start == "auto" and bubblewrap.choose(network=False).bwrap is None:
            return None
        from ..sandbox.zygote_host import Zygote

        return Zygote(root_dir)

    def sandbox_limits(self) -> SandboxLimits:
        return SandboxLimits.from_dict(self.limits)

    def model_settings(self) -> ModelSettings:
        """The model traits as the ``ModelSettings`` they were declared from."""
        return ModelSettings(
            **{
                f.name: getattr(self, ModelSettings.setting_name(f.name))
                for f in fields(ModelSettings)
            }
        )

    def agent_config(self) -> AgentConfig:
        return AgentConfig(**{name: copy.deepcopy(getattr(self, name)) for name in AGENT_TRAITS})

    def resolved_api_key(self) -> str | None:
        if self.api_key:
            return self.api_key
        return os.environ.get(self.api_key_env) or None

    def sessions_path(self, root_dir: Path) -> Path:
        if not self.sessions_dir:
            return state_dir() / "sessions"
        path = Path(self.sessions_dir).expanduser()
        return path if path.is_absolute() else root_dir / path


def state_dir() -> Path:
    """The server's own files (sessions, signing key): the Jupyter data dir, which
    survives restarts and is no workspace (unless the server root contains it)."""
    return Path(jupyter_data_dir()) / "codeagent"
