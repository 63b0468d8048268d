"""``view_image`` as the model is told of it and receives it: the size cap in its description,
a small image kept lossless (PNG), a large one scaled down to the cap."""

from __future__ import annotations

import base64
import io
import random

from PIL import Image, ImageDraw

from codeagent_jupyter.tools import ToolBox


def _schema(box: ToolBox) -> dict:
    return next(t for t in box.schemas() if t["function"]["name"] == "view_image")


def _sent(outcome) -> tuple[str, Image.Image]:
    head, b64 = outcome.images[0]["image_url"]["url"].split(",", 1)
    return head, Image.open(io.BytesIO(base64.b64decode(b64)))


def test_the_description_states_the_size_cap(tmp_path) -> None:
    description = _schema(ToolBox(None, tmp_path, vision=True))["function"]["description"]
    assert "1024 px" in description and "scaled down" in description


async def test_a_small_chart_stays_png_even_where_jpeg_would_be_smaller(tmp_path) -> None:
    """A 220x160 chart with thin lines over fine noise: a PNG of ~100 KB that JPEG would
    halve, and blur."""
    rng = random.Random(7)
    noise = bytes(rng.randrange(256) for _ in range(220 * 160 * 3))
    img = Image.frombytes("RGB", (220, 160), noise)
    draw = ImageDraw.Draw(img)
    for x in range(0, 220, 7):
        draw.line([(x, 0), (x, 159)], fill=(0, 0, 0), width=1)
    img.save(tmp_path / "chart.png")
    jpeg = io.BytesIO()
    img.save(jpeg, "JPEG", quality=85)
    assert jpeg.tell() < 0.7 * (tmp_path / "chart.png").stat().st_size  # JPEG is smaller
    box = ToolBox(None, tmp_path, vision=True)
    outcome = await box.call("view_image", {"path": "chart.png"})
    head, sent = _sent(outcome)
    assert head == "data:image/png;base64" and sent.size == (220, 160)
    assert sent.convert("RGB").tobytes() == img.tobytes()  # lossless: every pixel as drawn
    assert "chart.png: 220x160 PNG" in outcome.text


async def test_a_large_image_is_scaled_to_the_cap_and_says_from_what(tmp_path) -> None:
    Image.new("RGB", (1920, 800), (20, 120, 200)).save(tmp_path / "big.png")
    outcome = await ToolBox(None, tmp_path, vision=True).call("view_image", {"path": "big.png"})
    _, sent = _sent(outcome)
    assert sent.size == (1024, 427)
    assert "big.png: 1024x427, scaled from 1920x800" in outcome.text
