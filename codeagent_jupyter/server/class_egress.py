"""A student's server under its class's egress ceiling (JupyterHub with the class gateway).

At start the server reads the class's ``egress`` from the gateway (``hub.student``) and
makes it the ceiling of its own ``c.CodeAgent.egress``: the student's settings can only
narrow it (``egress.ceiling``), and a server configured for the host's whole network is
put under the policy broker instead. A ceiling that cannot be read as a policy denies
everything (fail closed).

What this does not do: a student who controls their server's process (its code, its
environment) controls its broker too. Where students may not be trusted with that, the
boundary is the network around their servers (a NetworkPolicy that lets pods reach only
an egress proxy; see docs/deploy-kubernetes.md), and this ceiling is the configuration
every honest server follows.
"""

from __future__ import annotations

from typing import Any

from ..config import SandboxLimits, network_of
from ..egress.ceiling import under_ceiling
from ..egress.policy import EgressPolicy, PolicyError


def apply_class_egress(settings: Any, ceiling: dict[str, Any]) -> str:
    """Narrow ``settings`` (a ``CodeAgent``) to ``ceiling``; one line saying what was done."""
    try:
        class_policy = EgressPolicy.from_dict(ceiling)
        said = "the class's egress policy is this server's ceiling"
    except PolicyError as e:
        class_policy = EgressPolicy(default="deny")
        said = f"the class's egress policy cannot be used ({e}): nothing leaves the sandboxes"
    own = settings.egress_policy() if settings.egress else None  # {}: nothing of its own
    settings.egress = under_ceiling(class_policy, own).to_dict()
    if network_of(SandboxLimits.from_dict(settings.limits)) == "host":
        settings.limits = {**settings.limits, "network": "policy"}
        said += "; network host became policy"
    return said
