"""Where the model settings come from: flags first, then the environment.

Kept apart from the adapter so that reading settings never imports ``openai``.
"""

from __future__ import annotations

import os
from urllib.parse import urlparse

from ..errors import ConfigError

OPENAI_BASE_URL = "https://api.openai.com/v1"


def resolve_settings(
    model: str | None = None, base_url: str | None = None, api_key: str | None = None
) -> tuple[str, str, str | None]:
    """Fill model, base URL and key from ``CODEAGENT_MODEL``, ``OPENAI_BASE_URL``,
    ``OPENAI_API_KEY``; raise ``ConfigError`` (one line) when the run cannot work.

    The key may be ``None`` for a non-OpenAI endpoint: local servers usually need none.
    """
    model = (model or os.environ.get("CODEAGENT_MODEL") or "").strip()
    if not model:
        raise ConfigError("no model name: pass --model NAME or set CODEAGENT_MODEL")
    base_url = (base_url or os.environ.get("OPENAI_BASE_URL") or OPENAI_BASE_URL).strip()
    parsed = urlparse(base_url)
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise ConfigError(f"invalid base URL {base_url!r}: expected http(s)://host[:port]/v1")
    api_key = api_key or os.environ.get("OPENAI_API_KEY") or None
    if api_key is None and parsed.hostname == "api.openai.com":
        raise ConfigError(
            f"no API key for {base_url}: set OPENAI_API_KEY, or pass --base-url for a local server"
        )
    return model, base_url, api_key
