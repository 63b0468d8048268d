"""``python -m codeagent_jupyter.hub``: the class's model gateway as a JupyterHub service.

Run it as a managed service (``c.JupyterHub.services``): the hub then supplies where to
listen (``JUPYTERHUB_SERVICE_URL``), the URL prefix, its own API token and the OAuth client
the instructor's page logs in with. Settings are ``c.CodeAgentGateway.…`` in a config file
(``--config FILE``) or on the command line (``--CodeAgentGateway.policy_file=…``). The
class key is read from the service's environment (``api_key_env``) and nowhere else.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from typing import Any
from urllib.parse import urlparse

from jupyterhub.services.auth import HubOAuth, HubOAuthCallbackHandler
from tornado import web
from traitlets import Bool, Dict, Float, Integer, List, TraitError, Unicode, default, validate
from traitlets.config import Application

from ..util.hardening import make_undumpable
from .handlers import (
    ChatCompletionsHandler,
    EgressHandler,
    HealthHandler,
    InstructionsHandler,
    ModelsHandler,
)
from .ledger import Ledger
from .policy import PolicyError, PolicyFile
from .service import Gateway
from .upstream import Upstream
from .views import SwitchHandler, UsageHandler, UsagePageHandler

MAX_BODY_BYTES = 16 * 1024 * 1024


class CodeAgentGateway(Application):
    """An OpenAI-compatible gateway that spends the class key on behalf of hub users."""

    name = "codeagent-gateway"
    description = __doc__
    aliases = {
        "config": "CodeAgentGateway.config_file",
        "policy": "CodeAgentGateway.policy_file",
        "ledger": "CodeAgentGateway.ledger",
        "upstream-url": "CodeAgentGateway.upstream_url",
        "log-level": "Application.log_level",
    }

    config_file = Unicode("", config=True, help="A Python config file (c.CodeAgentGateway.…).")
    upstream_url = Unicode(
        config=True,
        help="The provider's OpenAI-compatible endpoint, e.g. https://api.openai.com/v1 "
        "(default: CODEAGENT_GATEWAY_UPSTREAM_URL, then the OpenAI API).",
    )

    @default("upstream_url")
    def _default_upstream(self) -> str:
        return os.environ.get("CODEAGENT_GATEWAY_UPSTREAM_URL") or "https://api.openai.com/v1"

    api_key_env = Unicode(
        "CODEAGENT_GATEWAY_API_KEY",
        config=True,
        help="The service environment variable that holds the class key. Put it in the "
        "service's 'environment' in jupyterhub_config.py; never in a student's server.",
    )
    policy_file = Unicode(
        "",
        config=True,
        help="JSON policy (allowed models, quotas, concurrency, AI switch; see policy.py). "
        "Re-read when it changes. Empty: any model, no limits.",
    )
    ledger = Unicode(
        "codeagent-gateway.sqlite",
        config=True,
        help="SQLite usage ledger (relative to the working directory); survives restarts.",
    )
    prices = Dict(
        config=True,
        help='Model -> {"input": USD per million prompt tokens, "output": USD per million '
        "completion tokens}; the ledger's cost column comes from it.",
    )
    store_transcripts = Bool(
        False,
        config=True,
        help="Keep every request and response body in the ledger for instructors. Off by "
        "default: tell students before turning it on.",
    )
    instructor_groups = List(
        Unicode(),
        ["instructors"],
        config=True,
        help="Hub groups whose members (besides hub admins) see usage and flip AI switches.",
    )
    upstream_timeout = Float(300.0, config=True, help="Seconds one provider request may take.")
    auth_cache_seconds = Integer(
        5,
        config=True,
        help="How long the hub's answer about a token is trusted: whose it is, their groups, "
        "that it is still valid. A revoked or expired token, a removed user or a group "
        "change (a student moved into an exam room with AI off) applies within this many "
        "seconds (at least 1: the hub is asked at most once a second per token). Sets "
        "HubAuth.cache_max_age, whose own default of 300 s would let a revoked student "
        "spend the class key for five more minutes.",
    )

    @validate("auth_cache_seconds")
    def _check_auth_cache(self, proposal: dict[str, Any]) -> int:
        if proposal["value"] < 1:
            raise TraitError("auth_cache_seconds must be at least 1")
        return int(proposal["value"])

    service_url = Unicode(config=True, help="Where to listen (default: JUPYTERHUB_SERVICE_URL).")

    @default("service_url")
    def _default_service_url(self) -> str:
        return os.environ.get("JUPYTERHUB_SERVICE_URL") or "http://127.0.0.1:10101"

    prefix = Unicode(config=True, help="URL prefix (default: JUPYTERHUB_SERVICE_PREFIX).")

    @default("prefix")
    def _default_prefix(self) -> str:
        return os.environ.get("JUPYTERHUB_SERVICE_PREFIX") or "/services/codeagent-gateway/"

    def initialize(self, argv: Any = None) -> None:
        super().initialize(argv)
        if self.config_file:
            self.load_config_file(self.config_file)
            self.update_config(self.cli_config)  # the command line wins over the file

    def build(self) -> tuple[web.Application, Gateway]:
        """The tornado application and the gateway behind it (for tests and ``start``)."""
        make_undumpable()  # same-user processes must not read the class key from /proc
        key = os.environ.get(self.api_key_env) or None
        if key is None:
            self.log.warning(
                "no class key in $%s: requests go upstream without one", self.api_key_env
            )
        gateway = Gateway(
            PolicyFile(self.policy_file or None),
            Ledger(self.ledger),
            Upstream(self.upstream_url, key, self.upstream_timeout),
            prices=dict(self.prices),
            store_transcripts=self.store_transcripts,
            instructor_groups=tuple(self.instructor_groups),
        )
        hub_auth = HubOAuth.instance(parent=self)
        hub_auth.cache_max_age = self.auth_cache_seconds  # before its cache is first made
        if not hub_auth.access_scopes:
            name = os.environ.get("JUPYTERHUB_SERVICE_NAME", "codeagent-gateway")
            hub_auth.access_scopes = {f"access:services!service={name}"}
        prefix = "/" + self.prefix.strip("/") + "/"
        args = {"gateway": gateway, "hub_auth": hub_auth}
        routes: list[Any] = [
            (prefix + "v1/chat/completions", ChatCompletionsHandler, args),
            (prefix + "v1/models", ModelsHandler, args),
            (prefix + "v1/egress", EgressHandler, args),
            (prefix + "v1/codeagent/instructions", InstructionsHandler, args),
            (prefix + "health", HealthHandler, args),
            (prefix + r"usage(\.csv)?", UsageHandler, args),
            (prefix + "switch", SwitchHandler, args),
            (prefix + "oauth_callback", HubOAuthCallbackHandler),
            (prefix.rstrip("/") + "/?", UsagePageHandler, args),
        ]
        app = web.Application(routes, cookie_secret=os.urandom(32), hub_auth=hub_auth)
        return app, gateway

    def start(self) -> None:
        try:
            asyncio.run(self._serve())
        except PolicyError as e:
            sys.exit(f"codeagent-gateway: {e}")

    async def _serve(self) -> None:
        app, gateway = self.build()
        where = urlparse(self.service_url)
        server = app.listen(
            where.port or 80,
            where.hostname or "127.0.0.1",
            max_body_size=MAX_BODY_BYTES,
            xheaders=True,
        )
        self.log.info(
            "codeagent gateway on %s%s -> %s", self.service_url, self.prefix, self.upstream_url
        )
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        await stop.wait()
        server.stop()
        await gateway.upstream.aclose()
        gateway.ledger.close()


def main(argv: list[str] | None = None) -> None:
    app = CodeAgentGateway.instance()
    app.initialize(argv)
    app.start()
