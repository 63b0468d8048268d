"""The gateway's decisions: may this student send this request, and what did it cost.

Handlers ask ``admit`` before forwarding (AI switches, allowed models, quotas), hold a
``slot`` while the request runs (concurrency), and ``record`` the outcome in the ledger.
Everything here is read fresh per request (the policy file by mtime, switches from memory
kept in step with the ledger), so a change applies to the next request.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator
from typing import Any

from . import errors
from .ledger import CLASS_SCOPE, Entry, Ledger
from .policy import Policy, PolicyFile, Rules
from .upstream import Reply, Upstream


class Gateway:
    """Policy, ledger and provider of one class, shared by every handler."""

    def __init__(
        self,
        policy: PolicyFile,
        ledger: Ledger,
        upstream: Upstream,
        *,
        prices: dict[str, dict[str, float]] | None = None,
        store_transcripts: bool = False,
        instructor_groups: tuple[str, ...] = (),
    ) -> None:
        self.policy = policy
        self.ledger = ledger
        self.upstream = upstream
        self.prices = dict(prices or {})
        self.store_transcripts = store_transcripts
        self.instructor_groups = frozenset(instructor_groups)
        self._switches = ledger.switches()
        self._active: dict[str, int] = {}

    # -- who ---------------------------------------------------------------------------------
    def is_instructor(self, user: dict[str, Any]) -> bool:
        """Hub admins and members of an instructor group see the usage of the class."""
        return bool(user.get("admin")) or bool(self.instructor_groups & set(user_groups(user)))

    def rules(self, user: dict[str, Any]) -> tuple[Rules, Policy]:
        policy = self.policy.current()
        return policy.rules_for(user["name"], user_groups(user)), policy

    # -- before ------------------------------------------------------------------------------
    def ai_switched_off(self, user: dict[str, Any], rules: Rules) -> bool:
        if not rules.ai_enabled or self._switches.get(CLASS_SCOPE) is False:
            return True
        return any(self._switches.get(group) is False for group in user_groups(user))

    def admit(self, user: dict[str, Any], model: str) -> str:
        """The quota day of an allowed request; ``GatewayError`` (403/429) otherwise."""
        rules, policy = self.rules(user)
        if self.ai_switched_off(user, rules):
            raise errors.ai_off()
        if not rules.allows_model(model):
            raise errors.model_not_allowed(model)
        day = policy.day()
        name = user["name"]
        if rules.daily_tokens and self.ledger.tokens(name, day) >= rules.daily_tokens:
            raise errors.quota_used_up("daily", rules.daily_tokens, policy.reset_text)
        if rules.course_tokens and self.ledger.tokens(name) >= rules.course_tokens:
            raise errors.quota_used_up("course", rules.course_tokens, None)
        return day

    @contextlib.contextmanager
    def slot(self, user: dict[str, Any]) -> Iterator[None]:
        """Count the request as running for its user; 429 above ``max_concurrent``."""
        name = user["name"]
        limit = self.rules(user)[0].max_concurrent
        if limit and self._active.get(name, 0) >= limit:
            raise errors.too_many_at_once(limit)
        self._active[name] = self._active.get(name, 0) + 1
        try:
            yield
        finally:
            self._active[name] -= 1
            if not self._active[name]:
                del self._active[name]

    def set_switch(self, group: str | None, enabled: bool, by: str) -> None:
        scope = group or CLASS_SCOPE
        self.ledger.set_switch(scope, enabled, by)
        self._switches[scope] = enabled

    def switches(self) -> dict[str, bool]:
        return dict(self._switches)

    # -- after -------------------------------------------------------------------------------
    def cost(self, model: str, prompt_tokens: int, completion_tokens: int) -> float:
        """USD from ``prices`` (per million tokens); 0 for a model without a price."""
        price = self.prices.get(model) or {}
        return (
            prompt_tokens * float(price.get("input", 0))
            + completion_tokens * float(price.get("output", 0))
        ) / 1_000_000

    def record(
        self,
        user: dict[str, Any],
        model: str,
        day: str,
        reply: Reply,
        *,
        session: str | None,
        request: dict[str, Any] | None = None,
    ) -> None:
        entry = Entry(
            user=user["name"],
            model=model,
            prompt_tokens=reply.prompt_tokens,
            completion_tokens=reply.completion_tokens,
            cost=self.cost(model, reply.prompt_tokens, reply.completion_tokens),
            status=reply.status,
            day=day,
            session=session,
            estimated=reply.estimated,
            ts=time.time(),
        )
        transcript = None
        if self.store_transcripts and request is not None:
            transcript = (json.dumps(request), "".join(reply.text))
        self.ledger.record(entry, transcript)


def user_groups(user: dict[str, Any]) -> list[str]:
    groups = user.get("groups")
    return [g for g in groups if isinstance(g, str)] if isinstance(groups, list) else []
