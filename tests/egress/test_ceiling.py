"""A student's egress policy under the class's ceiling can only narrow it, key by key."""

from __future__ import annotations

from codeagent_jupyter.egress.ceiling import NO_METHOD, covers, under_ceiling
from codeagent_jupyter.egress.policy import EgressPolicy

CLASS = EgressPolicy.from_dict(
    {
        "allow": ["data.example.org", "*.opendata.org"],
        "deny": ["*.internal"],
        "default": "ask",
        "methods": ["GET", "HEAD", "CONNECT"],
        "ports": [80, 443],
        "max_response_mb": 16,
        "max_session_mb": 100,
        "rate_per_minute": 60,
        "allow_ranges": ["10.20.0.0/16"],
        "ask_timeout_s": 120,
        "hosts": {"data.example.org": "10.20.0.5"},
    }
)


def test_nothing_of_its_own_gets_the_class_policy() -> None:
    assert under_ceiling(CLASS, None) == CLASS


def test_a_student_cannot_widen_any_key() -> None:
    wide = EgressPolicy.from_dict(
        {
            "allow": ["*", "evil.example.com", "*.org", "a.opendata.org", "data.example.org"],
            "deny": ["ads.example.org"],
            "default": "ask",
            "methods": ["GET", "POST"],
            "ports": [443, 22],
            "max_response_mb": 1000,
            "max_session_mb": 10,
            "rate_per_minute": 6000,
            "allow_ranges": ["10.0.0.0/8", "10.20.1.0/24", "192.168.0.0/16", "::1/128"],
            "ask_timeout_s": 3600,
            "hosts": {"evil.example.com": "169.254.169.254"},
        }
    )
    got = under_ceiling(CLASS, wide)
    assert got.allow == ("a.opendata.org", "data.example.org")
    assert got.deny == ("*.internal", "ads.example.org")
    assert got.default == "ask" and got.methods == ("GET",) and got.ports == (443,)
    assert (got.max_response_mb, got.max_session_mb, got.rate_per_minute) == (16, 10, 60)
    assert got.allow_ranges == ("10.20.1.0/24",) and got.ask_timeout_s == 120
    assert dict(got.hosts) == {"data.example.org": "10.20.0.5"}  # the class's pins only
    for host in ("evil.example.com", "x.org", "metadata.internal"):
        assert not got.decide(host, 443, "GET").allowed


def test_default_deny_wins_and_disjoint_methods_allow_none() -> None:
    strict = EgressPolicy.from_dict({**CLASS.to_dict(), "default": "deny"})
    mine = EgressPolicy.from_dict({"default": "ask", "methods": ["POST"]})
    got = under_ceiling(strict, mine)
    assert got.default == "deny" and got.methods == (NO_METHOD,)
    assert not got.decide("data.example.org", 443, "GET").allowed
    assert under_ceiling(CLASS, EgressPolicy.from_dict({"default": "deny"})).default == "deny"
    # a student without a methods list gets the class's
    assert under_ceiling(CLASS, EgressPolicy()).methods == CLASS.methods


def test_covers() -> None:
    assert covers("*", "*") and covers("*", "x.org") and not covers("x.org", "*")
    assert covers("*.opendata.org", "a.b.opendata.org") and covers(
        "*.opendata.org", "*.a.opendata.org"
    )
    assert not covers("*.opendata.org", "opendata.org") and not covers("a.org", "*.a.org")
    assert covers("Data.Example.org.", "data.example.org")


def test_a_students_server_applies_the_class_ceiling_to_its_own_settings() -> None:
    from codeagent_jupyter.server.class_egress import apply_class_egress
    from codeagent_jupyter.server.settings import CodeAgent

    mine = CodeAgent(egress={"allow": ["*"], "methods": ["POST"]}, limits={"network": "host"})
    said = apply_class_egress(mine, CLASS.to_dict())
    assert "ceiling" in said and "network host became policy" in said
    assert mine.limits["network"] == "policy"
    got = mine.egress_policy()
    assert got is not None and got.allow == () and got.methods == (NO_METHOD,)
    broken = CodeAgent()
    said = apply_class_egress(broken, {"allow": "everything"})
    assert "nothing leaves" in said and broken.egress_policy() == EgressPolicy(default="deny")
