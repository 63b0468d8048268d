"""The host side of ``--network policy``: one egress broker per sandbox, beside it.

The broker listens on a unix socket in a folder of its own (0700, created for this one
sandbox); the launcher binds that socket, and nothing else of the folder, into the
sandbox. Another sandbox never sees it: two sandboxes cannot reach each other's broker,
and each broker's budgets and record are its own sandbox's. It lives as long as the
``Sandbox`` object, across kernel restarts.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from ..egress.bodies import BodyStore
from ..egress.broker import Broker, OnRequest
from ..egress.policy import Approver, EgressPolicy
from ..egress.replay import Recording

EGRESS_DIR_PREFIX = "codeagent-egress-"
SOCKET_NAME = "egress.sock"


class EgressLink:
    """Starts and stops the broker of one sandbox; ``socket`` is what the launcher binds."""

    def __init__(
        self,
        policy: EgressPolicy,
        on_request: OnRequest | None = None,
        approve: Approver | None = None,
        bodies: BodyStore | None = None,
        replay: Recording | None = None,
    ) -> None:
        self.policy = policy
        self.on_request = on_request
        self.approve = approve
        self.bodies = bodies
        """The content store complete ``GET`` bodies go into (None: none kept)."""
        self.replay = replay
        """A recording to answer from instead of the network while it plays."""
        self.broker: Broker | None = None
        self._folder: Path | None = None

    async def start(self) -> Path:
        """Create the folder and start listening; returns the socket's path."""
        if self.broker is not None:
            return self.broker.path
        # /tmp rather than a deep TMPDIR: an AF_UNIX path holds 107 bytes at most.
        self._folder = Path(tempfile.mkdtemp(prefix=EGRESS_DIR_PREFIX, dir=_short_tmp()))
        broker = Broker(
            self.policy,
            self._folder / SOCKET_NAME,
            self.on_request,
            approve=self.approve,
            bodies=self.bodies,
            replay=self.replay,
        )
        await broker.start()
        self.broker = broker
        return broker.path

    def set_approver(self, approve: Approver | None) -> None:
        """Who answers ``default: ask`` from now on: a sandbox made before its session (a
        pooled one) is given the session's approver once the session exists."""
        self.approve = approve
        if self.broker is not None:
            self.broker.approve = approve

    def keep_bodies(self, bodies: BodyStore) -> None:
        """Keep complete ``GET`` bodies in ``bodies`` from now on: a pooled sandbox learns
        its owner (and so its owner's store) only when a session takes it."""
        self.bodies = bodies
        if self.broker is not None:
            self.broker.bodies = bodies

    def play(self, recording: Recording) -> None:
        """Answer from ``recording`` while it plays (a resume's cells run again), then
        from the policy again."""
        self.replay = recording
        if self.broker is not None:
            self.broker.replay = recording

    async def close(self) -> None:
        """Stop the broker and remove its folder."""
        if self.broker is not None:
            broker, self.broker = self.broker, None
            await broker.close()
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)
            self._folder = None


def _short_tmp() -> str | None:
    base = tempfile.gettempdir()
    return None if len(base) < 60 else "/tmp"
