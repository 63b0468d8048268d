"""The typed, versioned events an agent run emits.

Events are the one-way channel from the loop to everything that shows or stores a run
(the notebook recorder, the server's WebSocket stream, the CLI printer, the widget).
They are frozen dataclasses with a stable JSON form (``to_dict``/``from_dict``) so a
client written against ``FORMAT_VERSION`` can read them from any of those places. The words
the events use (run statuses, tool statuses; ``traits`` says what a tool is) are
declared here once too.

Longer than 300 lines on purpose: it is the one list of the event contract, every type next
to the others, read as a whole by whoever writes a client.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field, fields
from typing import Any, ClassVar, Literal

from .traits import ToolTraits, code_before_traits, traits_for

FORMAT_VERSION = 1
"""Bumped when an event's fields change incompatibly."""

# Final run statuses (RunFinished.status).
ANSWERED = "answered"
MAX_STEPS = "max_steps"
MAX_WALL_TIME = "max_wall_time"
MAX_TOKENS = "max_tokens"
MALFORMED = "malformed"
MODEL_ERROR = "model_error"
CANCELLED = "cancelled"
ERROR = "error"
INTERRUPTED = "interrupted"  # set by the server for runs that a crash cut short

# How one tool call ended (ToolCallFinished.status): a cell's own statuses, then two for
# calls that never ran.
CellStatus = Literal["ok", "error", "timeout", "died"]
ToolStatus = Literal["ok", "error", "timeout", "died", "refused", "denied"]
NOT_RUN: frozenset[str] = frozenset({"refused", "denied"})
"""Statuses of calls that did not run: malformed or refused (``refused``), or not allowed by
the user or a hook (``denied``)."""

_REGISTRY: dict[str, type[Event]] = {}


@dataclass(frozen=True)
class Event:
    """Common fields: ``seq`` orders events within a session (0, 1, 2, …), ``time`` is epoch s."""

    type: ClassVar[str] = "event"
    seq: int = 0
    time: float = field(default_factory=time.time)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        _REGISTRY[cls.type] = cls

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["type"] = self.type
        data["v"] = FORMAT_VERSION
        return data

    @staticmethod
    def from_dict(data: dict[str, Any]) -> Event:
        """Rebuild an event from its JSON form; unknown fields are ignored (newer writers)."""
        cls = _REGISTRY.get(data.get("type", ""))
        if cls is None:
            raise ValueError(f"unknown event type: {data.get('type')!r}")
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


@dataclass(frozen=True)
class RunStarted(Event):
    """A run (the first prompt or a follow-up) begins."""

    type: ClassVar[str] = "run_started"
    prompt: str = ""
    run_index: int = 0
    title: str = ""
    """How the request reads to people ("Fix In [9]: ZeroDivisionError: …") when ``prompt``
    was written for the model (``%agent fix``); empty when the prompt is the user's own."""
    model: str = ""
    base_url: str = ""
    workdir: str = ""
    limits: dict[str, Any] = field(default_factory=dict)
    enforcement: dict[str, Any] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)
    preloaded: list[str] | None = None
    """What the sandbox imported before the session, as the model is told it (``pandas as
    pd``); None when the sandbox did not say (an older recording)."""


@dataclass(frozen=True)
class PlanUpdated(Event):
    """The model's plan: ``steps`` is ``[{"step": str, "status": pending|in_progress|done}]``."""

    type: ClassVar[str] = "plan_updated"
    steps: list[dict[str, str]] = field(default_factory=list)


@dataclass(frozen=True)
class TextDelta(Event):
    """A fragment of the model's text as it streams (display only; not recorded)."""

    type: ClassVar[str] = "text_delta"
    step: int = 0
    text: str = ""


@dataclass(frozen=True)
class AssistantMessage(Event):
    """The complete assistant turn as received: its text and its tool calls (OpenAI form).

    ``message`` is exactly what goes back into the conversation, so a recording of these
    is enough to replay a run without a model.
    """

    type: ClassVar[str] = "assistant_message"
    step: int = 0
    message: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ModelRetry(Event):
    """A model request failed in a way worth retrying; the loop waits ``wait_s`` and tries again.

    Recordings made before ``ModelNote`` existed use ``attempt`` 0 for a note; readers still
    take it as one (``ModelNote``), writers no longer do.
    """

    type: ClassVar[str] = "model_retry"
    step: int = 0
    attempt: int = 0
    wait_s: float = 0.0
    reason: str = ""


@dataclass(frozen=True)
class ModelNote(Event):
    """The model adapter changed how it asks, for the rest of the session (e.g. a server that
    cannot stream tool calls is asked without streaming from then on): a note for people, not
    a failure."""

    type: ClassVar[str] = "model_note"
    step: int = 0
    text: str = ""


@dataclass(frozen=True)
class ToolCallStarted(Event):
    """A tool call is about to run (after approval, where approval is needed)."""

    type: ClassVar[str] = "tool_call_started"
    step: int = 0
    tool_call_id: str = ""
    name: str = ""
    arguments: Any = None
    code: str | None = None
    """What the call runs or shows, for display (a cell's code, a command): the tool's own
    ``code`` of the arguments; None for a tool without one."""
    cell_source: str | None = None
    """The notebook cell the call becomes once it ran (it changes the workspace, a re-run
    recreates it); None: it is recorded as a note."""
    traits: ToolTraits | None = None
    """The tool's traits (None in recordings made before events carried them)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "traits", ToolTraits.from_json(self.traits))

    @property
    def tool(self) -> ToolTraits:
        """The traits to act on (``traits_for``: an older recording's by the tool's name)."""
        return traits_for(self.name, self.traits)

    def shown_code(self) -> str | None:
        """The display code: ``code``, or in an older recording the argument that held it."""
        if self.traits is not None or self.code is not None:
            return self.code
        return code_before_traits(self.name, self.arguments)


@dataclass(frozen=True)
class ApprovalRequested(Event):
    """A tool under the ``ask`` policy waits for the user's decision."""

    type: ClassVar[str] = "approval_requested"
    step: int = 0
    tool_call_id: str = ""
    name: str = ""
    arguments: Any = None


@dataclass(frozen=True)
class ApprovalDecided(Event):
    """The user approved or denied a waiting tool call."""

    type: ClassVar[str] = "approval_decided"
    tool_call_id: str = ""
    approved: bool = False
    remember: str = ""
    """``"session"``: the user allowed this tool for the rest of the session (on the call
    they decided, and on every later call approved by that allowance)."""


@dataclass(frozen=True)
class CellOutput(Event):
    """One nbformat v4 output node produced while a cell runs (live display)."""

    type: ClassVar[str] = "cell_output"
    tool_call_id: str = ""
    output: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ToolCallFinished(Event):
    """A tool call ended; built from its ``ToolOutcome``. ``result`` is what the model was
    shown (bounded).

    For ``run_cell``/``run_command`` ``outputs`` holds the real nbformat outputs (bounded by
    the sandbox's ``output_bytes``), ``code`` the source that ran.
    """

    type: ClassVar[str] = "tool_call_finished"
    step: int = 0
    tool_call_id: str = ""
    name: str = ""
    status: ToolStatus = "ok"
    result: str = ""
    code: str | None = None
    outputs: list[dict[str, Any]] = field(default_factory=list)
    execution_count: int | None = None
    duration_s: float = 0.0
    note: str = ""
    edit: dict[str, Any] | None = None
    """``edit_cell``'s proposal: ``{cell_id, old_source, new_source, reason, diff}``;
    ``edit_file``'s change: ``{path, diff, replacements, old_string, new_string}``."""
    packages: list[dict[str, Any]] | None = None
    """``install_packages``' wheels: ``[{name, version, sha256, size_bytes, index, …}]``."""
    traits: ToolTraits | None = None
    """The tool's traits, as on ``ToolCallStarted`` (None in older recordings)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "traits", ToolTraits.from_json(self.traits))

    @property
    def tool(self) -> ToolTraits:
        """The traits to act on (``traits_for``: an older recording's by the tool's name)."""
        return traits_for(self.name, self.traits)

    @classmethod
    def from_outcome(
        cls,
        outcome: Any,
        *,
        step: int,
        tool_call_id: str,
        name: str,
        traits: ToolTraits | None = None,
    ) -> ToolCallFinished:
        """The event of a finished call: the outcome's fields, plus which call it was.

        ``outcome`` is a ``core.outcome.ToolOutcome``, taken by its fields: the vocabulary
        names no layer above it."""
        shared = {f.name for f in fields(cls)} & set(vars(outcome))
        data = {key: getattr(outcome, key) for key in shared}
        data["result"] = outcome.text
        data["outputs"] = list(outcome.outputs)
        data["duration_s"] = round(outcome.duration_s, 3)
        return cls(step=step, tool_call_id=tool_call_id, name=name, traits=traits, **data)


@dataclass(frozen=True)
class UsageUpdated(Event):
    """Token usage of one model request and the running totals of the session.

    ``estimated``: this request's counts are guessed from its size (the server sent no
    usage); ``total_estimated``: some request of the session was, so the totals are too.
    """

    type: ClassVar[str] = "usage"
    step: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    estimated: bool = False
    total_prompt_tokens: int = 0
    total_completion_tokens: int = 0
    total_estimated: bool = False


@dataclass(frozen=True)
class RunFinished(Event):
    """A run ended: ``status`` is one of the run statuses above, ``reason`` a sentence for people.

    ``usage`` holds the session's token totals, with ``"estimated": true`` when any of them
    was estimated rather than counted by the server.
    """

    type: ClassVar[str] = "run_finished"
    status: str = ANSWERED
    reason: str = ""
    answer: str | None = None
    steps: int = 0
    duration_s: float = 0.0
    usage: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class SessionRestored(Event):
    """A session was rebuilt in a new sandbox (resume or fork): the workspace snapshot of
    ``from_step`` restored and ``cells_rerun`` cells run again in ``seconds``. ``problems``
    says, one line each, what could not be rebuilt (a cell that now fails or differs)."""

    type: ClassVar[str] = "session_restored"
    from_step: int | None = None
    cells_rerun: int = 0
    seconds: float = 0.0
    files: int = 0
    problems: list[str] = field(default_factory=list)
    summary: str = ""


@dataclass(frozen=True)
class PackagesInstalled(Event):
    """The user installed packages from the panel (or over REST), between runs: their
    click is the approval. ``packages`` as ``ToolCallFinished.packages``; ``reason`` the
    user's note. Recorded in the session's installed set, so a resume reinstalls them."""

    type: ClassVar[str] = "packages_installed"
    packages: list[dict[str, Any]] = field(default_factory=list)
    reason: str = ""

    def summary(self) -> str:
        pins = ", ".join(f"{p.get('name')} {p.get('version')}" for p in self.packages)
        return f"Installed {pins} (asked for in the panel)" if pins else "Nothing to install"


@dataclass(frozen=True)
class NetworkRequest(Event):
    """A request the sandbox sent through its egress broker (``--network policy``), allowed
    or refused: ``url`` with its query (``host:port`` for an HTTPS tunnel), the ``status``
    the sandbox got, bytes each way, ``sha256`` of the response body (empty for a tunnel:
    its bytes are encrypted) and the ``rule`` that decided (``allow data.example.org``,
    ``default deny``, ``address refused: …``; a cut at a cap is added to it). For a plain
    ``GET``: whether its body went into the content store (``stored``, what a replay serves)
    and the response ``headers`` a replay sends again (``[name, value]`` pairs)."""

    type: ClassVar[str] = "network_request"
    method: str = ""
    url: str = ""
    status: int = 0
    bytes_up: int = 0
    bytes_down: int = 0
    sha256: str = ""
    rule: str = ""
    allowed: bool = False
    stored: bool = False
    headers: list[list[str]] = field(default_factory=list)

    def summary(self) -> str:
        """One line for people: ``GET http://… 200, 1,024 bytes (allow data.example.org)``,
        the URL with controls escaped (it is the sandbox's text)."""
        url = self.url.encode("ascii", "backslashreplace").decode("ascii")
        url = "".join(c if c.isprintable() else repr(c)[1:-1] for c in url)[:300]
        word = f"{self.status}" if self.allowed else f"refused {self.status}"
        return f"{self.method or '?'} {url or '?'} {word}, {self.bytes_down:,} bytes ({self.rule})"


@dataclass(frozen=True)
class NetworkApprovalRequested(Event):
    """The sandbox asked to reach a host the egress policy does not list (``default: ask``):
    the request waits for the user. Keyed by ``host`` as the broker checked it (lower case,
    strict host syntax), never by an id the model or the sandbox chose; ``port``, ``method``
    and ``rule`` (what made it ask) say what was asked; unanswered after ``timeout_s`` it is
    denied."""

    type: ClassVar[str] = "network_approval_requested"
    host: str = ""
    port: int = 0
    method: str = ""
    rule: str = ""
    timeout_s: float = 0.0


@dataclass(frozen=True)
class NetworkApprovalDecided(Event):
    """How a waiting network approval ended: ``answer`` is ``once``, ``session`` (the host
    is allowed until the session ends), ``deny`` (refused for the session), or ``timeout``
    (nobody answered in time: that request is denied, the next one asks again)."""

    type: ClassVar[str] = "network_approval_decided"
    host: str = ""
    answer: str = ""


@dataclass(frozen=True)
class HelperEvent(Event):
    """An event of a helper agent started by the ``delegate`` tool call ``parent_tool_call_id``.

    ``child`` names the helper (``"<call>-<n>"``: the session's n-th ``delegate`` call, its
    n-th task), ``task`` is what it was asked, ``event`` the helper's own event in its JSON
    form (numbered in the helper's stream). Wrapped rather than flattened so that a reader of
    the parent's stream that knows nothing of helpers never takes a helper's ``run_finished``
    for the parent's.
    """

    type: ClassVar[str] = "child_event"
    parent_tool_call_id: str = ""
    child: str = ""
    task: str = ""
    event: dict[str, Any] = field(default_factory=dict)

    def inner(self) -> Event | None:
        """The helper's event as a typed event (None for a type from a newer writer)."""
        try:
            return Event.from_dict(self.event)
        except (ValueError, TypeError):
            return None


ChildEvent = HelperEvent
"""The earlier name of ``HelperEvent`` (its JSON type stays ``child_event``)."""


@dataclass(frozen=True)
class CellDecision(Event):
    """The user accepted or rejected a cell.

    ``cell_id`` (its name in the JSON form, a contract) holds the cell's tool call id.
    """

    type: ClassVar[str] = "cell_decision"
    cell_id: str = ""
    accepted: bool = False

    @property
    def tool_call_id(self) -> str:
        return self.cell_id


def tokens_label(total: int, estimated: bool) -> str:
    """``"1,354 tokens"``, or ``"~1,354 tokens (estimated)"`` when the server did not count
    them: every place that shows tokens (CLI, panel, notebook) marks a guess the same way."""
    return f"~{total:,} tokens (estimated)" if estimated else f"{total:,} tokens"
