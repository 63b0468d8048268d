"""How a student's single-user server finds the class gateway: zero configuration.

Inside a JupyterHub single-user server the hub provides ``JUPYTERHUB_API_URL`` and the
server's own ``JUPYTERHUB_API_TOKEN``. If the hub lists the gateway service to that token
(scope ``read:services!service=NAME``), the gateway's URL becomes the model endpoint and
the student's own token its key; the class key never comes near the student. The class's
egress ceiling comes from the same gateway (``v1/egress``). Stdlib only (no jupyterhub
import): this runs in every student's server at start.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote


@dataclass(frozen=True)
class HubGateway:
    """Where the student's agent sends model requests, and with which key."""

    base_url: str
    token: str
    default_model: str | None
    egress: dict[str, Any] | None = None
    """The class's egress ceiling (``GET v1/egress``); None: the class sets none."""


def _get(url: str, token: str, timeout: float) -> Any:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return json.loads(response.read())


def find_gateway(
    service: str, environ: Mapping[str, str] | None = None, timeout: float = 5.0
) -> tuple[HubGateway | None, str]:
    """``(gateway, why)``: the gateway service when the hub lists it, else ``None`` and why."""
    env = os.environ if environ is None else environ
    api_url, token = env.get("JUPYTERHUB_API_URL"), env.get("JUPYTERHUB_API_TOKEN")
    if not service:
        return None, "switched off (c.CodeAgent.hub_gateway is empty)"
    if not (api_url and token):
        return None, "not running inside a JupyterHub single-user server"
    try:
        model = _get(f"{api_url.rstrip('/')}/services/{quote(service)}", token, timeout)
    except (urllib.error.URLError, OSError, ValueError) as e:
        return None, f"the hub does not list a service {service!r} to this server ({e})"
    url, prefix = model.get("url"), model.get("prefix") or f"/services/{service}/"
    if not isinstance(url, str) or not url:
        return None, f"the hub's service {service!r} has no URL"
    base_url = f"{url.rstrip('/')}/{prefix.strip('/')}/v1"
    default = None
    try:
        listed = _get(f"{base_url}/models", token, timeout).get("data") or []
        default = next((m["id"] for m in listed if isinstance(m.get("id"), str)), None)
    except (urllib.error.URLError, OSError, ValueError, AttributeError, TypeError):
        pass  # the gateway answers later; a model name can still come from c.CodeAgent.model
    egress = class_egress(base_url, token, timeout)
    return HubGateway(base_url, token, default, egress), f"using the class gateway at {base_url}"


DENY_ALL: dict[str, Any] = {"default": "deny"}
"""The ceiling when the gateway could not say its own: nothing leaves (fail closed)."""


def class_egress(base_url: str, token: str, timeout: float) -> dict[str, Any] | None:
    """The class's egress ceiling; None when the class sets none (or the gateway is older
    than ``v1/egress``: 404); deny-all when the gateway cannot answer, so a hiccup at
    start never lets a server run wider than its class."""
    try:
        egress = _get(f"{base_url}/egress", token, timeout).get("egress")
    except urllib.error.HTTPError as e:
        return None if e.code == 404 else DENY_ALL
    except (urllib.error.URLError, OSError, ValueError, AttributeError):
        return DENY_ALL
    return egress if isinstance(egress, dict) else None if egress is None else DENY_ALL


MAX_CLASS_INSTRUCTIONS = 8_000
"""Characters of class instructions a student's agent places in its system message."""


def class_instructions(base_url: str, token: str, timeout: float = 5.0) -> str:
    """The class instructions the gateway at ``base_url`` gives (the policy's
    ``instructions``), bounded; "" when there are none or the gateway cannot say (a
    gateway of an older version, a network failure: sessions still start)."""
    url = f"{base_url.rstrip('/')}/codeagent/instructions"
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            data = json.loads(response.read(4 * MAX_CLASS_INSTRUCTIONS + 1024))
    except (urllib.error.URLError, OSError, ValueError):
        return ""
    text = data.get("instructions") if isinstance(data, dict) else None
    return text.strip()[:MAX_CLASS_INSTRUCTIONS] if isinstance(text, str) else ""
