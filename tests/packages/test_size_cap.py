"""``max_mb`` before the download: the size the index states (PEP 700 ``size`` on its
PEP 691 JSON page) refuses a wheel before any byte of it is fetched; without a stated
size, the response's ``Content-Length`` refuses it before its body is read; and a body
longer than either (a lying index) is cut off the moment it passes the cap. The real
index on 127.0.0.1 logs every request and counts the body bytes it got out."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from codeagent_jupyter.errors import ToolError
from codeagent_jupyter.packages import Installer, PackagePolicy
from tests.packages.index import PackageIndex, make_wheel

MB = 1024 * 1024
BIG = 24 * MB
"""Far more than a loopback socket buffers: a client that stops reading is seen stopping."""


@pytest.fixture
def index(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[PackageIndex]:
    served = PackageIndex(tmp_path / "index", json=getattr(request, "param", True))
    served.add(make_wheel(tmp_path / "built", "hugepkg", "1.0", pad_bytes=BIG))
    served.start()
    yield served
    served.stop()


def _wheel(index: PackageIndex) -> Path:
    [wheel] = index.files.glob("hugepkg-*.whl")
    return wheel


async def _refused(index: PackageIndex, tmp_path: Path) -> str:
    cache = tmp_path / "cache"
    policy = PackagePolicy(index_url=index.url, cache_dir=str(cache), max_mb=1)
    with pytest.raises(ToolError) as refused:
        await Installer(policy).plan(["hugepkg"], {})
    assert not list(cache.rglob("hugepkg-*.whl"))  # nothing kept
    message = str(refused.value)
    assert "\n" not in message
    return message


async def test_the_stated_size_refuses_before_any_byte_of_the_wheel(
    index: PackageIndex, tmp_path: Path
) -> None:
    message = await _refused(index, tmp_path)
    assert "24.0 MB, over this server's limit of 1 MB" in message
    assert index.body_gets(_wheel(index).name) == 0  # pip read the metadata; nobody the body
    assert any(p.endswith(".whl.metadata") for _, p in index.log)


@pytest.mark.parametrize("index", [False], indirect=True)
async def test_without_a_stated_size_the_content_length_refuses_before_the_body(
    index: PackageIndex, tmp_path: Path
) -> None:
    message = await _refused(index, tmp_path)
    assert "24.0 MB, over this server's limit of 1 MB" in message
    assert index.body_gets(_wheel(index).name) == 1
    assert index.sent[_wheel(index).name] < BIG // 2  # the body was left unread


async def test_a_lying_index_is_cut_off_at_the_cap(index: PackageIndex, tmp_path: Path) -> None:
    """The JSON page states 2 kB and the body comes without a length: the stream is read
    until it passes 1 MB, then dropped."""
    name = _wheel(index).name
    index.stated_sizes[name] = 2048
    index.unsized.add(name)
    index.write_pages()
    message = await _refused(index, tmp_path)
    assert "over this server's limit of 1 MB" in message
    assert index.body_gets(name) == 1
    assert index.sent[name] < BIG // 2
