"""The class policy: who may use which models, how much, and whether AI is on at all.

The policy is a JSON file the instructor edits (path in ``c.CodeAgentGateway.policy_file``).
It is re-read whenever its modification time changes, so switching AI off for an exam or
raising a quota takes effect on the very next request, without restarting anything::

    {
      "ai_enabled": true,
      "default_model": "gpt-4o-mini",
      "allowed_models": ["gpt-4o-mini", "gpt-4o"],
      "daily_tokens": 200000,
      "course_tokens": 2000000,
      "max_concurrent": 2,
      "quota_reset_utc": "00:00",
      "groups": {"exam-room": {"ai_enabled": false}, "tas": {"daily_tokens": 1000000}},
      "users": {"alice": {"daily_tokens": 50000}},
      "egress": {"allow": ["*.opendata.org"], "default": "deny", "methods": ["GET", "CONNECT"]},
      "instructions": "Cite the course notes by section. Plots need axis labels and units."
    }

Rules (``ai_enabled``, ``allowed_models``, ``daily_tokens``, ``course_tokens``,
``max_concurrent``) apply to the class, then to each group the user is in, then to the user.
Between groups, AI off wins, allowed models add up and limits take the most generous group;
a user entry replaces whatever the class and groups said. ``allowed_models: []`` allows any
model; a limit of ``0`` or ``null`` means none. ``instructions`` (at most ``MAX_INSTRUCTIONS``
characters) are the class's: every student's agent places them in its system message,
named beside the project's instruction files. The file is checked against ``SCHEMA`` with
jsonschema; a problem is said in one line that names the setting.

``egress`` (optional; the keys of ``c.CodeAgent.egress``) is the class's ceiling on what the
students' sandboxes may reach under ``network: policy``: each student's server fetches it at
start (``GET v1/egress``) and can only narrow it (``egress.ceiling``).
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from ..egress.policy import EgressPolicy
from ..egress.policy import PolicyError as EgressPolicyError
from ..util.strict_schema import StrictValidator

RULES = ("ai_enabled", "allowed_models", "daily_tokens", "course_tokens", "max_concurrent")
_LIMITS = ("daily_tokens", "course_tokens", "max_concurrent")
MAX_INSTRUCTIONS = 8_000
"""Characters of class instructions a policy may give (every request carries them)."""


class PolicyError(ValueError):
    """The policy file cannot be used; the message names the file and the problem."""


@dataclass(frozen=True)
class Rules:
    """What one user may do right now (after class, group and user rules are combined)."""

    ai_enabled: bool = True
    allowed_models: tuple[str, ...] = ()
    daily_tokens: int | None = None
    course_tokens: int | None = None
    max_concurrent: int | None = None

    def allows_model(self, model: str) -> bool:
        return not self.allowed_models or model in self.allowed_models


@dataclass(frozen=True)
class Policy:
    """A parsed policy file; ``rules_for`` answers for one user."""

    base: Rules = field(default_factory=Rules)
    default_model: str | None = None
    reset: tuple[int, int] = (0, 0)
    groups: dict[str, dict[str, Any]] = field(default_factory=dict)
    users: dict[str, dict[str, Any]] = field(default_factory=dict)
    egress: dict[str, Any] | None = None
    """The class's egress ceiling (``EgressPolicy`` JSON), or None: none set."""
    instructions: str = ""

    def rules_for(self, user: str, groups: list[str] | tuple[str, ...] = ()) -> Rules:
        rules = self.base
        chosen = [self.groups[g] for g in sorted(groups) if g in self.groups]
        if chosen:
            rules = _merge_groups(rules, chosen)
        if user in self.users:
            rules = replace(rules, **self.users[user])
        return rules

    def day(self, now: datetime | None = None) -> str:
        """The quota day ``now`` falls in (a day starts at ``quota_reset_utc``)."""
        now = now or datetime.now(timezone.utc)
        shifted = now - timedelta(hours=self.reset[0], minutes=self.reset[1])
        return shifted.date().isoformat()

    @property
    def reset_text(self) -> str:
        return f"{self.reset[0]:02d}:{self.reset[1]:02d} UTC"


def _merge_groups(base: Rules, entries: list[dict[str, Any]]) -> Rules:
    """Combine the rules of several groups: off wins, models add up, the largest limit wins."""
    changes: dict[str, Any] = {}
    if any(e.get("ai_enabled") is False for e in entries):
        changes["ai_enabled"] = False
    models = [m for e in entries for m in e.get("allowed_models", ())]
    if any("allowed_models" in e for e in entries):
        open_group = any("allowed_models" in e and not e["allowed_models"] for e in entries)
        changes["allowed_models"] = () if open_group else tuple(dict.fromkeys(models))
    for name in _LIMITS:
        values = [e[name] for e in entries if name in e]
        if values:
            changes[name] = None if None in values else max(values)
    return replace(base, **changes)


_LIMIT = {"anyOf": [{"type": "integer", "minimum": 0}, {"type": "null"}]}
_RULE_SCHEMAS: dict[str, Any] = {
    "ai_enabled": {"type": "boolean"},
    "allowed_models": {"type": "array", "items": {"type": "string"}},
    **dict.fromkeys(_LIMITS, _LIMIT),
}
_ENTRY = {"type": "object", "properties": _RULE_SCHEMAS, "additionalProperties": False}
_TABLE = {"type": "object", "additionalProperties": _ENTRY}
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        **_RULE_SCHEMAS,
        "default_model": {"type": ["string", "null"]},
        "quota_reset_utc": {"type": "string", "pattern": r"^([01]?[0-9]|2[0-3]):[0-5]?[0-9]$"},
        "groups": _TABLE,
        "users": _TABLE,
        "egress": {"type": ["object", "null"]},  # its keys are checked by EgressPolicy
        "instructions": {"type": "string", "maxLength": MAX_INSTRUCTIONS},
    },
    "additionalProperties": False,
}
"""The policy file's JSON schema (checked with jsonschema); ``_problem`` words its errors."""
_SAYS = {
    "ai_enabled": "must be true or false",
    "allowed_models": "must be a list of model names",
    **dict.fromkeys(_LIMITS, "must be a whole number >= 0 or null"),
    "default_model": "must be a model name",
    "groups": "must be an object of name -> settings",
    "users": "must be an object of name -> settings",
    "egress": "must be an egress policy object",
    "instructions": f"must be text of at most {MAX_INSTRUCTIONS:,} characters",
}


def _problem(where: str, raw: dict[str, Any], error: Any) -> str:
    """One line for a schema error, naming the setting as ``where.groups.NAME.key``."""
    path = [str(part) for part in error.absolute_path]
    if path[:1] in (["groups"], ["users"]) and len(path) >= 2:
        prefix, path = f"{where}.{path[0]}.{path[1]}", path[2:]
    else:
        prefix = where
    if error.validator == "additionalProperties" and not path:
        unknown = sorted(set(error.instance) - set(error.schema["properties"]))
        if prefix == where:
            return f"{where}: unknown setting(s) {', '.join(unknown)}"
        return f"{prefix}: unknown setting {unknown[0]!r} (known: {', '.join(RULES)})"
    if not path:
        return f"{prefix} must be an object"
    if path[0] == "quota_reset_utc":
        return f"{prefix}.quota_reset_utc must be HH:MM, not {raw['quota_reset_utc']!r}"
    return f"{prefix}.{path[0]} {_SAYS[path[0]]}"


def _rules(raw: dict[str, Any]) -> dict[str, Any]:
    """The rule fields one policy entry sets (already valid): models as a tuple, 0 as none."""
    out = {key: raw[key] for key in RULES if key in raw}
    if "allowed_models" in out:
        out["allowed_models"] = tuple(out["allowed_models"])
    return {k: None if k in _LIMITS and v == 0 else v for k, v in out.items()}


def parse_policy(raw: Any, where: str = "policy") -> Policy:
    """A ``Policy`` from the decoded JSON; ``PolicyError`` with a one-line reason otherwise."""
    if not isinstance(raw, dict):
        raise PolicyError(f"{where} must hold a JSON object")
    errors = list(StrictValidator(SCHEMA).iter_errors(raw))
    if errors:
        order = list(raw)  # unknown top-level settings first, then in the file's order

        def rank(error: Any) -> tuple[bool, int, int]:
            path = error.path
            return bool(path), order.index(path[0]) if path else 0, len(path)

        raise PolicyError(_problem(where, raw, min(errors, key=rank)))
    hours, minutes = (int(part) for part in raw.get("quota_reset_utc", "00:00").split(":"))
    groups, users = ({n: _rules(e) for n, e in raw.get(t, {}).items()} for t in ("groups", "users"))
    egress = raw.get("egress")
    if egress is not None:
        try:
            EgressPolicy.from_dict(egress)
        except EgressPolicyError as e:
            raise PolicyError(f"{where}: {e}") from None
    rules = Rules(**_rules(raw))
    return Policy(
        rules,
        raw.get("default_model"),
        (hours, minutes),
        groups,
        users,
        egress,
        raw.get("instructions", "").strip(),
    )


class PolicyFile:
    """The policy as the file says now: re-read when its mtime (or size) changes.

    A file that turns invalid keeps the last good policy in force and reports the problem
    through ``error``, so a typo during an exam does not switch AI back on.
    """

    def __init__(self, path: str | os.PathLike[str] | None) -> None:
        self.path = Path(path) if path else None
        self.error: str | None = None
        self._stamp: tuple[int, int] | None = None
        self._policy = Policy()
        self._lock = threading.Lock()
        if self.path is not None:
            self._policy = self._read()  # a broken file at start-up is fatal (raises)

    def _read(self) -> Policy:
        assert self.path is not None
        try:
            info = self.path.stat()
            raw = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise PolicyError(f"policy file {self.path} does not exist") from None
        except (OSError, ValueError) as e:
            raise PolicyError(f"policy file {self.path}: {e}") from None
        self._stamp = (info.st_mtime_ns, info.st_size)
        return parse_policy(raw, where=self.path.name)

    def current(self) -> Policy:
        """The policy in force; one ``stat`` per call, a re-read only after a change."""
        if self.path is None:
            return self._policy
        try:
            info = self.path.stat()
            stamp = (info.st_mtime_ns, info.st_size)
        except OSError as e:
            self.error = f"policy file {self.path}: {e}"
            return self._policy
        if stamp != self._stamp:
            with self._lock:
                try:
                    self._policy = self._read()
                    self.error = None
                except PolicyError as e:
                    self._stamp = stamp
                    self.error = str(e)
        return self._policy
