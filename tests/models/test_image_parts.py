"""The scripted server checks image parts as the real chat-completions API does: only in
user messages, a decodable data URL of the image type it names (or an https URL)."""

from __future__ import annotations

import base64
import io

import pytest
from PIL import Image

from tests.scripted_model.validation import conversation_problem


def png() -> str:
    out = io.BytesIO()
    Image.new("RGB", (4, 4)).save(out, "PNG")
    return "data:image/png;base64," + base64.b64encode(out.getvalue()).decode()


def body(*messages: dict) -> dict:
    return {"model": "m", "messages": [{"role": "system", "content": "s"}, *messages]}


def image(url: str, **extra: str) -> dict:
    return {"type": "image_url", "image_url": {"url": url, **extra}}


def test_a_user_message_with_text_and_image_parts_is_accepted():
    parts = [{"type": "text", "text": "look"}, image(png()), image("https://x.test/a.png")]
    assert conversation_problem(body({"role": "user", "content": parts})) is None


@pytest.mark.parametrize(
    ("message", "problem"),
    [
        ({"role": "assistant", "content": [image("https://x.test/a.png")]}, "only supported"),
        ({"role": "user", "content": []}, "non-empty array"),
        ({"role": "user", "content": [{"type": "audio"}]}, "'audio'"),
        ({"role": "user", "content": [image("data:image/png;base64,%%%")]}, "base64 data URL"),
        ({"role": "user", "content": [image("data:image/png;base64,QUJD")]}, "not a png"),
        ({"role": "user", "content": [image(png(), detail="max")]}, "detail"),
        ({"role": "user", "content": [{"type": "text", "text": 3}]}, "expected a string"),
    ],
)
def test_malformed_parts_are_rejected(message, problem):
    assert problem in (conversation_problem(body(message)) or "")
