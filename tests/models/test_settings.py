"""Settings resolution: flags beat environment, and unusable settings fail in one line."""

from __future__ import annotations

import pytest

from codeagent_jupyter.errors import ConfigError
from codeagent_jupyter.models.openai_chat import OpenAIChatModel, resolve_settings


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in ("CODEAGENT_MODEL", "OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_environment_fills_what_flags_leave_out(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("CODEAGENT_MODEL", "env-model")
    clean_env.setenv("OPENAI_BASE_URL", "http://127.0.0.1:8080/v1")
    clean_env.setenv("OPENAI_API_KEY", "env-key")
    assert resolve_settings() == ("env-model", "http://127.0.0.1:8080/v1", "env-key")
    assert resolve_settings("flag-model", "http://localhost:11434/v1", "flag-key") == (
        "flag-model",
        "http://localhost:11434/v1",
        "flag-key",
    )


def test_local_endpoint_needs_no_key() -> None:
    assert resolve_settings("m", "http://127.0.0.1:8080/v1") == (
        "m",
        "http://127.0.0.1:8080/v1",
        None,
    )


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (
            (None, "http://127.0.0.1:1/v1"),
            "no model name: pass --model NAME or set CODEAGENT_MODEL",
        ),
        (("gpt-x", None), "no API key for https://api.openai.com/v1: set OPENAI_API_KEY"),
        (("m", "localhost:8080"), "invalid base URL 'localhost:8080'"),
    ],
)
def test_unusable_settings_are_one_line_errors(args: tuple, expected: str) -> None:
    with pytest.raises(ConfigError) as info:
        resolve_settings(*args)
    assert str(info.value).startswith(expected) and "\n" not in str(info.value)


def test_key_never_in_repr_or_attributes() -> None:
    model = OpenAIChatModel("m", "http://127.0.0.1:1/v1", api_key="sk-secret-value")
    assert "sk-secret-value" not in repr(model)
    assert all("sk-secret-value" not in repr(v) for v in vars(model).values())
