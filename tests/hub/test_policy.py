"""The policy file: how class, group and user rules combine, and live reloading."""

from __future__ import annotations

import json
import os
from datetime import datetime, timezone
from pathlib import Path

import pytest

from codeagent_jupyter.hub.policy import PolicyError, PolicyFile, parse_policy

POLICY = {
    "allowed_models": ["small"],
    "daily_tokens": 100,
    "quota_reset_utc": "04:30",
    "groups": {
        "exam": {"ai_enabled": False},
        "tas": {"allowed_models": ["big"], "daily_tokens": 1000},
        "lab": {"daily_tokens": 500},
    },
    "users": {"alice": {"daily_tokens": 0, "allowed_models": []}},
}


def test_groups_combine_and_a_user_entry_replaces() -> None:
    policy = parse_policy(POLICY)
    ta = policy.rules_for("tom", ["tas", "lab"])
    assert ta.allowed_models == ("big",) and ta.daily_tokens == 1000 and ta.ai_enabled
    assert not policy.rules_for("eve", ["exam", "tas"]).ai_enabled  # off wins
    alice = policy.rules_for("alice", ["lab"])
    assert alice.daily_tokens is None and alice.allows_model("anything")
    assert policy.rules_for("bob").allowed_models == ("small",)


def test_the_quota_day_starts_at_the_reset_time() -> None:
    policy = parse_policy(POLICY)
    assert policy.day(datetime(2025, 3, 2, 4, 29, tzinfo=timezone.utc)) == "2025-03-01"
    assert policy.day(datetime(2025, 3, 2, 4, 30, tzinfo=timezone.utc)) == "2025-03-02"
    assert policy.reset_text == "04:30 UTC"


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"daily_tokens": -1}, "daily_tokens must be a whole number"),
        ({"groups": {"x": {"colour": 1}}}, "unknown setting 'colour'"),
        ({"quota_reset_utc": "25:00"}, "quota_reset_utc must be HH:MM"),
        ({"allowed_models": "gpt"}, "allowed_models must be a list"),
        ({"surprise": True}, "unknown setting(s) surprise"),
        ({"daily_tokens": 3.0}, "policy.daily_tokens must be a whole number"),
        ({"max_concurrent": True}, "policy.max_concurrent must be a whole number"),
        ({"groups": {"x": 5}}, "policy.groups.x must be an object"),
        ({"users": {"a": {"allowed_models": [1]}}}, "users.a.allowed_models must be a list"),
        ({"quota_reset_utc": 4}, "quota_reset_utc must be HH:MM, not 4"),
        ({"default_model": 3}, "policy.default_model must be a model name"),
        ({"egress": ["*"]}, "policy.egress must be an egress policy object"),
        ({"egress": {"allow": ["a b"]}}, "policy: egress allow: 'a b' is not a host pattern"),
        ({"egress": {"wide": True}}, "policy: unknown egress policy key(s): wide"),
        ({"instructions": ["a"]}, "policy.instructions must be text of at most 8,000"),
        ({"instructions": "x" * 8_001}, "policy.instructions must be text of at most 8,000"),
    ],
)
def test_bad_policies_are_refused_in_one_line(raw: dict, message: str) -> None:
    with pytest.raises(PolicyError) as refused:
        parse_policy(raw)
    assert message in str(refused.value) and "\n" not in str(refused.value)


def test_a_changed_file_applies_at_once_and_a_broken_one_keeps_the_last_good(
    tmp_path: Path,
) -> None:
    path = tmp_path / "policy.json"

    def write(text: str, tick: int) -> None:
        path.write_text(text)
        os.utime(path, ns=(tick * 10**9, tick * 10**9))

    write(json.dumps({"ai_enabled": True}), 1)
    live = PolicyFile(path)
    assert live.current().rules_for("bob").ai_enabled
    write(json.dumps({"ai_enabled": False}), 2)
    assert not live.current().rules_for("bob").ai_enabled
    write("{not json", 3)
    assert not live.current().rules_for("bob").ai_enabled and "policy.json" in str(live.error)
    write(json.dumps({}), 4)
    assert live.current().rules_for("bob").ai_enabled and live.error is None
    with pytest.raises(PolicyError, match="does not exist"):
        PolicyFile(tmp_path / "missing.json")


def test_class_instructions_are_read_from_the_policy() -> None:
    assert parse_policy({"instructions": "  Cite the notes.\n"}).instructions == "Cite the notes."
    assert parse_policy({}).instructions == ""
