"""Settings shared by every layer, as plain dataclasses.

Each field carries a docstring-style comment so the CLI, the server traits and the
session notebook can all describe the same knob the same way.

Over 300 lines on purpose: every setting of every layer is declared here once, with its
help text, and the system prompt is built from the tools offered next to them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, fields
from typing import Any


def _setting(
    default: Any, help: str, *, name: str = "", enforced_as: str = "", figure: str = ""
) -> Any:
    """A settings field with its help text: the one description of the knob that the
    server's traits (``c.CodeAgent.…``) and the CLI's flags show too. ``name``: the
    trait's and flag's name where it is not the field's own. For a sandbox limit,
    ``enforced_as``: its key in ``Sandbox.enforcement`` (how this machine enforces it,
    ``"none"`` when nothing does: then the report names it as a gap), and ``figure``: how
    the one-line report states it (``"memory {} MiB"``)."""
    metadata = {"help": help, "name": name, "enforced_as": enforced_as, "figure": figure}
    return field(default=default, metadata=metadata)


def _help(cls: type, name: str) -> str:
    return str(next(f for f in fields(cls) if f.name == name).metadata["help"])


@dataclass(frozen=True)
class SandboxLimits:
    """Resource limits applied to one sandbox kernel.

    Every field is a ceiling the launcher tries to enforce; what is really enforced on
    this machine is reported separately in ``Sandbox.enforcement`` (never assumed).
    """

    memory_mb: int = _setting(
        2048,
        "Data-segment limit (RLIMIT_DATA) in MiB; a larger allocation raises MemoryError.",
        enforced_as="memory",
        figure="memory {} MiB",
    )
    cpu_seconds: int = _setting(
        600,
        "CPU seconds each cell may use (RLIMIT_CPU, re-armed before every cell); past it the "
        "cell ends with CPUBudgetExceeded and the kernel keeps its state.",
        enforced_as="cpu",
        figure="cpu {} s per cell",
    )
    """Threads a cell leaves running get one more budget after the cell, then the kernel is
    ended (SIGXCPU) and restarted. Per process, all its threads together: eight busy threads
    use it eight times as fast. The kernel's whole life is capped at 100 budgets (a hard
    limit code in the kernel cannot lift); past it the kernel is killed and restarted."""
    cell_timeout: float = _setting(
        60.0,
        "Wall seconds one cell may run before it is interrupted (then restarted if needed).",
        figure="cell {:g} s",
    )
    output_bytes: int = _setting(
        1_000_000, "Bytes of output kept per cell in the recording; the rest is cut with a marker."
    )
    file_size_mb: int = _setting(
        512, "Largest file the kernel may write (RLIMIT_FSIZE), in MiB.", enforced_as="file_size"
    )
    max_processes: int = _setting(
        512,
        "Processes and threads the sandbox may hold at once (cgroup pids.max or RLIMIT_NPROC).",
        enforced_as="processes",
        figure="processes {}",
    )
    """Threads count: the kernel itself holds about a dozen, a BLAS or OpenMP pool one per
    thread, joblib one process per worker. The launcher sizes OpenMP/OpenBLAS/MKL pools to
    the sandbox's CPU share (at most an eighth of this), so common numeric libraries fit on
    many-core machines while a fork bomb still stops here."""
    network: bool = _setting(
        False, "Whether the kernel may reach the network; off runs it in its own network namespace."
    )
    egress_broker: bool = _setting(
        False,
        "Network under policy: the kernel keeps its own network namespace and reaches out only "
        'through the egress broker, which applies the egress policy (network: "policy").',
    )
    disk_mb: int = _setting(
        1024,
        "Disk the workspace may use, in MiB, counting each file's full length (sparse files "
        "too); watched for the sandbox's whole life, whose processes are stopped once over "
        "(the run fails), and checked before every copy into the workspace.",
        figure="disk {} MiB",
    )

    @classmethod
    def enforced_keys(cls) -> tuple[str, ...]:
        """The ``Sandbox.enforcement`` keys of the limits that declare one, in their order:
        what the launcher reports (``"none"`` when unenforced) and the report checks."""
        return tuple(f.metadata["enforced_as"] for f in fields(cls) if f.metadata["enforced_as"])

    def figures(self) -> list[str]:
        """The limits as the one-line report states them (``memory 2048 MiB``), each from
        its declaration's ``figure``; a limit of 0 or None (not set) is left out."""
        return [
            f.metadata["figure"].format(getattr(self, f.name))
            for f in fields(self)
            if f.metadata["figure"] and getattr(self, f.name)
        ]

    @classmethod
    def help(cls, name: str) -> str:
        """What the CLI flag and the server's ``limits`` setting say about limit ``name``."""
        return _help(cls, name)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SandboxLimits:
        """Build from a (possibly partial, possibly untrusted) dict; unknown keys raise."""
        known = {f.name: f for f in fields(cls)}
        data = network_mode(data)
        unknown = sorted(set(data) - set(known))
        if unknown:
            raise ValueError(f"unknown limit(s): {', '.join(unknown)}")
        values: dict[str, Any] = {}
        for name, value in data.items():
            default = getattr(cls, name)
            kind = type(default)
            if kind is bool:
                if not isinstance(value, bool):
                    raise ValueError(f"limit {name} must be true or false")
            elif (
                isinstance(value, bool)
                or not isinstance(value, (int, float))
                or not math.isfinite(value)
                or value <= 0
            ):
                raise ValueError(f"limit {name} must be a positive, finite number")
            values[name] = kind(value)
        return cls(**values)

    def tightened_by(self, recorded: Any) -> SandboxLimits:
        """These limits, lowered wherever ``recorded`` asks for less; never raised.

        For what a session notebook says it ran under: a notebook is data anyone may have
        edited, so it can only make a resume stricter (``network: false`` turns it off,
        ``network: true`` never turns it on). Each value is judged alone: an unknown name or
        an invalid value is ignored rather than failing the resume.
        """
        if not isinstance(recorded, dict):
            return self
        values = self.to_dict()
        for name, mine in values.items():
            if name not in recorded:
                continue
            try:
                asked = getattr(SandboxLimits.from_dict({name: recorded[name]}), name)
            except (TypeError, ValueError):
                continue
            if asked < mine:
                values[name] = asked
        return SandboxLimits(**values)


NETWORK_MODES = ("none", "host", "policy")
"""``--network``: its own empty namespace, the host's network, or the egress broker only."""
STARTS = ("cold", "zygote", "auto")
"""How a local sandbox starts: its own interpreter, a zygote's fork, or a fork where one can be."""
START_ENV = "CODEAGENT_START"
"""The environment's default start (the CLI's ``--start``, the server's ``c.CodeAgent.start``):
a user's or a test lane's choice for every sandbox."""


def network_mode(data: dict[str, Any]) -> dict[str, Any]:
    """``network`` spelled as a mode (``"none"``, ``"host"``, ``"policy"``) as the two
    fields it stands for; ``true``/``false`` keep their meaning (host, none)."""
    mode = data.get("network")
    if not isinstance(mode, str):
        return data
    if mode not in NETWORK_MODES:
        raise ValueError(f"limit network must be one of {', '.join(NETWORK_MODES)}")
    return {**data, "network": mode == "host", "egress_broker": mode == "policy"}


def network_of(limits: SandboxLimits) -> str:
    """The mode ``limits`` choose: ``host`` wins over ``policy``, which wins over ``none``."""
    if limits.network:
        return "host"
    return "policy" if limits.egress_broker else "none"


_PROMPT_HEAD = """\
You are codeagent, a careful data-science assistant working inside a Jupyter sandbox.
You solve the user's request by writing and running Python in a persistent IPython kernel.
"""

_PROMPT_TAIL = """\
Tracebacks show the cell's own frames and the last library frame (environment paths as
<env>); repeated warnings are shown once with a count; output cut short names the lines left
out and how to see them (a read_file call, or printing a slice): do that rather than guess
what they held. Read results carefully; when a cell fails, fix the cause and run the
corrected cell.
The budget you have left (steps, time, tokens) comes with the request and after each
step's results. A step is one reply of yours, however many tool calls it holds (a reply =
one step): put calls that do not depend on each other in one reply. Plan how much to do per
step, and answer before the budget runs out.
When done, reply without any tool call: a brief answer that states the result.
"""


def compose_prompt(lines: Iterable[tuple[int, str]]) -> str:
    """The system message around the offered tools' own lines (``Tool.prompt``, ranked by
    ``Tool.prompt_rank``): what the agent can really do. A function of the tools alone, so
    it is byte-identical across steps, runs and resumes of a session."""
    body = "\n".join(f"- {line}" for _, line in sorted(lines, key=lambda item: item[0]))
    return f"{_PROMPT_HEAD}\nHow to work:\n{body}\n{_PROMPT_TAIL}"


VISION_MODES = ("auto", "on", "off")

SEEING_MODELS = re.compile(
    r"gpt-4o|gpt-4\.1|gpt-4\.5|gpt-4-turbo|gpt-4-vision|gpt-5|chatgpt-4o|(?:^|[/:_-])o[134]\b"
    r"|claude|gemini|gemma-?3|qwen[\w.]*-?vl|qvq|llava|pixtral|mistral-(?:small|medium)-3"
    r"|llama-?3\.2-\d+b-vision|llama-?4|minicpm-v|internvl|phi-?4-multimodal|phi-3\.5-vision"
    r"|molmo|idefics|smolvlm|moondream|grok-(?:2-vision|4)|-vision\b|\bvl\b",
    re.I,
)
"""Model names ``vision = "auto"`` takes to see images; any other is sent none."""


def sees(mode: str, model_name: str) -> bool:
    """Whether images go to ``model_name`` under ``mode`` (``auto``: by the model's name)."""
    if mode == "on":
        return True
    if mode == "off":
        return False
    return bool(SEEING_MODELS.search(model_name or ""))


@dataclass(frozen=True)
class AgentConfig:
    """Budgets and behaviour of one agent run; every stop is reported with its reason.

    Declared once: ``AgentConfig.help(name)`` is what the server's trait of the same name and
    the CLI's flag say about it, and their defaults are these.
    """

    max_steps: int = _setting(30, "Model calls per run before the run stops (max_steps).")
    max_wall_s: float = _setting(
        1800.0, "Wall-clock seconds per run before it stops (max_wall_time)."
    )
    max_tokens: int = _setting(
        2_000_000, "Total tokens (prompt + completion, summed over requests) before stopping."
    )
    max_malformed: int = _setting(
        3, "Consecutive tool calls with bad arguments or unknown tools before stopping."
    )
    result_chars: int = _setting(
        8_000,
        "Characters of one tool result shown to the model (head + tail kept); the recording "
        "keeps the real outputs.",
    )
    system_prompt: str = _setting(
        "",
        "System message; empty: the one written for the offered tools (``system_prompt``). "
        "Kept byte-identical across steps for caching.",
    )
    vision: str = _setting(
        "auto",
        "Whether the model is shown images (plots a cell displays, view_image): on, off, or "
        "auto (on for model names known to see: gpt-4o, gpt-4.1, claude, gemini, qwen-vl, "
        "llava, pixtral, …).",
    )
    instructions: str = _setting(
        "",
        "Project instructions (AGENTS.md, .codeagent/instructions.md) appended to the system "
        "message; byte-identical across steps, recorded with the run.",
    )
    approval: dict[str, str] = field(
        default_factory=dict,
        metadata={"help": 'Tool name -> "auto" or "ask"; tools under "ask" wait for approval.'},
    )
    extra_context: dict[str, Any] = field(
        default_factory=dict,
        metadata={"help": "Free-form context recorded with the session (e.g. the notebook path)."},
    )

    @classmethod
    def help(cls, name: str) -> str:
        return _help(cls, name)

    def __post_init__(self) -> None:
        if self.vision not in VISION_MODES:
            raise ValueError(
                f"vision must be one of {', '.join(VISION_MODES)}, got {self.vision!r}"
            )

    def sees(self, model_name: str) -> bool:
        """Whether this run shows ``model_name`` images (``vision``)."""
        return sees(self.vision, model_name)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data.pop("system_prompt")
        return data


@dataclass(frozen=True)
class ModelSettings:
    """Which model answers and how it is asked: the CLI's model flags (``run`` and
    ``resume``), the server's model traits and the adapter's defaults, declared once.

    Never the API key: that comes from the environment (or the server's own settings) only.
    """

    model: str | None = _setting(
        None, "Model name; falls back to the CODEAGENT_MODEL environment variable."
    )
    base_url: str | None = _setting(
        None, "OpenAI-compatible endpoint; falls back to OPENAI_BASE_URL, then the OpenAI API."
    )
    stream: bool = _setting(False, "Stream the model's reply as it is written.")
    max_output_tokens: int = _setting(4096, "Tokens one model reply may take.")
    timeout: float = _setting(120.0, "Seconds one model request may take.", name="model_timeout")
    max_retries: int = _setting(
        4,
        "Times a failed model request is tried again: rate limits, server errors, timeouts.",
        name="model_max_retries",
    )

    @classmethod
    def help(cls, name: str) -> str:
        return _help(cls, name)

    @classmethod
    def setting_name(cls, name: str) -> str:
        """What field ``name`` is called as a trait (``c.CodeAgent.…``) and, with dashes, as
        a CLI flag: ``timeout`` is ``model_timeout`` there, next to the agent's own timeouts."""
        return str(next(f for f in fields(cls) if f.name == name).metadata["name"] or name)

    def client_options(self) -> dict[str, Any]:
        """The adapter's keyword options (``OpenAIChatModel``): all but model and endpoint."""
        return {
            "stream": self.stream,
            "max_output_tokens": self.max_output_tokens,
            "timeout": self.timeout,
            "max_retries": self.max_retries,
        }
