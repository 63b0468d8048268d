"""A lying index against the install size cap, and the shared wheel cache after a refused
install: ``POST /codeagent/api/sessions/ID/packages`` on the real server.

The index states a tiny size for a big wheel and serves no core metadata, so pip has to
read the wheel to resolve (it used to read all of it, with no cap, and keep it in its
HTTP cache inside the shared cache folder); a second plan fetches a wheel that fits and
then one that lies. Each install is refused (413, one line), only about the cap is read
of the big body, and no byte of either plan stays in the shared cache, where another
user's install would find it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.packages.index import PackageIndex, make_wheel
from tests.security.server.conftest import TokenUsers, as_user
from tests.server.helpers import Api, of_type

ALICE = as_user("alice-token")
MB = 1024 * 1024
BIG = 48 * MB


class Indexes:
    def __init__(self, root: Path) -> None:
        built = root / "built"
        self.lying = PackageIndex(root / "lying", metadata=False)
        big = self.lying.add(make_wheel(built, "hugepkg", "1.0", pad_bytes=BIG))
        self.lying.stated_sizes[big.name] = 1000
        self.lying.unsized.add(big.name)
        self.lying.write_pages()
        self.honest = PackageIndex(root / "honest")
        self.honest.add(make_wheel(built, "pairpkg", "1.0", requires=["pairbig"], pad_bytes=MB))
        liar = self.honest.add(make_wheel(built, "pairbig", "1.0", pad_bytes=4 * MB))
        self.honest.stated_sizes[liar.name] = 1000
        self.honest.write_pages()
        self.cache = root / "cache"
        self.lying.start()
        self.honest.start()

    def stop(self) -> None:
        self.lying.stop()
        self.honest.stop()


@pytest.fixture
def indexes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Indexes]:
    served = Indexes(tmp_path_factory.mktemp("indexes"))
    try:
        yield served
    finally:
        served.stop()


@pytest.fixture
def jp_server_config(jp_server_config: Any, indexes: Indexes) -> Any:
    jp_server_config["CodeAgent"]["packages"] = {
        "index_url": indexes.lying.url,
        "extra_index_urls": [indexes.honest.url],
        "max_mb": 2,
        "cache_dir": str(indexes.cache),
    }
    return jp_server_config


def _bytes_under(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) if folder.exists() else 0


@pytest.mark.codeagent(allow_unconfined=True)  # about the host's installs: every lane
@pytest.mark.server_app(identity_provider_class=TokenUsers)
async def test_a_lying_index_is_cut_at_the_cap_and_leaves_nothing_in_the_cache(
    api: Api, scripted_model: Any, indexes: Indexes
) -> None:
    from tests.scripted_model import text

    scripted_model.set_script([text("ready")])
    code, session = await api.call(
        "POST", "sessions", {"prompt": "wait"}, headers=ALICE, request_timeout=240
    )
    assert code == 201, session
    sid = session["id"]
    for _ in range(1200):
        code, detail = await api.call("GET", f"sessions/{sid}", headers=ALICE)
        if of_type(detail["events"], "run_finished") and detail["state"] == "idle":
            break
        await asyncio.sleep(0.2)
    route = f"sessions/{sid}/packages"

    code, body = await api.call(
        "POST", route, {"packages": ["hugepkg"], "reason": "x"}, headers=ALICE, request_timeout=240
    )
    assert code == 413, body
    assert "\n" not in body["message"] and "2 MB" in body["message"], body
    sent = indexes.lying.sent_total.get("hugepkg-1.0-py3-none-any.whl", 0)
    assert sent < BIG // 2, f"{sent / MB:.1f} MiB of the lying body were read"

    code, body = await api.call(
        "POST", route, {"packages": ["pairpkg"], "reason": "x"}, headers=ALICE, request_timeout=240
    )
    assert code == 413, body
    assert "\n" not in body["message"], body
    assert indexes.honest.body_gets("pairpkg-1.0-py3-none-any.whl") == 1  # it fitted

    left = [str(p.relative_to(indexes.cache)) for p in indexes.cache.rglob("*") if p.is_file()]
    assert _bytes_under(indexes.cache) == 0, f"a refused install left {left[:5]} in the cache"
