"""The models sessions talk to: the configured one, the allowed others, or a recording.

The API key is read from the settings when a client is built and never leaves this module
in a reply: ``info`` says only whether one is configured.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

from .errors import ApiError

RECORDED = "recorded"
"""The model name of sessions answered from ``c.CodeAgent.recording``."""


class ModelRegistry:
    """One client per model name, built on first use from ``c.CodeAgent`` settings."""

    def __init__(self, settings: Any, root_dir: Path) -> None:
        self.settings = settings
        self.root_dir = root_dir
        self._models: dict[str, Any] = {}
        self.send_session = False
        """Tell the endpoint which session each request is for (the class gateway's ledger)."""

    def _resolve(self) -> tuple[str, str]:
        """The default model and endpoint; ConfigError (one line) when there is none."""
        from ..errors import ConfigError
        from ..models.openai_chat import resolve_settings

        settings = self.settings
        if not (settings.model or os.environ.get("CODEAGENT_MODEL")):
            raise ConfigError(
                "no model configured: set c.CodeAgent.model in jupyter_server_config.py "
                "(or CODEAGENT_MODEL in the server's environment)"
            )
        name, base_url, _ = resolve_settings(
            settings.model, settings.base_url, settings.resolved_api_key()
        )
        return name, base_url

    def model_for(self, requested: str | None) -> Any:
        """The model for a session; a name outside ``allowed_models`` is refused (403)."""
        from ..errors import ConfigError
        from ..models.openai_chat import OpenAIChatModel

        settings = self.settings
        if settings.recording:
            if requested not in (None, RECORDED):
                raise ApiError(403, f"this server replays a recording; model {requested!r} is off")
            return self._recorded_model()
        try:
            default, base_url = self._resolve()
        except ConfigError as e:
            raise ApiError(503, str(e)) from e
        name = requested or default
        if name != default and name not in settings.allowed_models:
            raise ApiError(403, f"model {name!r} is not allowed on this server")
        model = self._models.get(name)
        if model is None:
            model = OpenAIChatModel(
                name,
                base_url,
                settings.resolved_api_key(),
                **settings.model_settings().client_options(),
                send_session=self.send_session,
            )
            self._models[name] = model
        return model

    def _recorded_model(self) -> Any:
        """A fresh replay of the configured recording (each session replays it from the start)."""
        from ..errors import CodeAgentError
        from ..models.replay import ReplayModel
        from ..record.recorder import load_session

        path = Path(self.settings.recording)
        path = path if path.is_absolute() else self.root_dir / path
        try:
            turns = [turn for run in load_session(path).turns for turn in run]
            return ReplayModel(turns, name=RECORDED, base_url=self.settings.recording)
        except (OSError, ValueError, CodeAgentError) as e:
            raise ApiError(503, f"cannot replay {self.settings.recording!r}: {e}") from e

    def info(self) -> dict[str, Any]:
        """What clients may know about the model: names and endpoint, never the key."""
        from ..errors import ConfigError

        settings = self.settings
        info: dict[str, Any] = {"allowed_models": list(settings.allowed_models)}
        if settings.recording:
            return info | {"configured": True, "name": RECORDED, "recording": settings.recording}
        try:
            name, base_url = self._resolve()
            info |= {"configured": True, "name": name, "base_url": base_url}
        except ConfigError as e:
            info |= {"configured": False, "error": str(e)}
        info["api_key_configured"] = bool(settings.resolved_api_key())
        info["stream"] = settings.stream
        return info

    async def aclose(self) -> None:
        for model in self._models.values():
            with contextlib.suppress(Exception):
                await model.aclose()
        self._models.clear()
