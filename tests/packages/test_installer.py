"""The installer against a real PEP 503 index on 127.0.0.1, with pip itself: what is
resolved, downloaded and refused (no kernel: the overlay is a plain folder here)."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from codeagent_jupyter.errors import ToolError
from codeagent_jupyter.packages import Installer, PackagePolicy
from tests.packages.index import PackageIndex, make_wheel


def _installer(served, **policy) -> Installer:
    return Installer(PackagePolicy(index_url=served.url, cache_dir=str(served.cache), **policy))


async def test_resolves_against_the_environment_and_installs_into_the_overlay(
    served, tmp_path: Path
) -> None:
    installer = _installer(served)
    plan = await installer.plan(["tinyapp"], {})
    described = {(w["name"], w["version"]) for w in plan.describe()}
    assert described == {("tinyapp", "1.0"), ("tinydep", "1.0")}  # packaging: already there
    assert all(w["index"] == served.url and w["size_bytes"] > 0 for w in plan.describe())
    wheel = next(w for w in plan.wheels if w.name == "tinyapp")
    published = served.index.files / wheel.filename
    assert wheel.sha256 == hashlib.sha256(published.read_bytes()).hexdigest()
    overlay = tmp_path / "overlay"
    overlay.mkdir()
    await installer.install(plan, overlay)
    # pip resolved from the pages and core metadata: each wheel's body was fetched once,
    # by the server itself, into the shared cache (kept there under its sha256).
    assert served.index.body_gets(wheel.filename) == 1
    assert installer.cache.get(wheel.sha256) is not None
    probe = "import tinyapp, tinydep; print(tinyapp.__version__, tinydep.__version__)"
    done = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(overlay)},
        check=True,
    )
    assert done.stdout.split() == ["1.0", "1.0"]
    again = await installer.plan(["tinyapp"], {"tinyapp": "1.0", "tinydep": "1.0"})
    assert again.wheels == []  # what the overlay holds counts as installed


async def test_an_sdist_only_package_is_refused_and_its_build_code_never_runs(served) -> None:
    with pytest.raises(ToolError) as refused:
        await _installer(served).plan(["onlysrc"], {})
    message = str(refused.value)
    assert "\n" not in message
    assert "no wheel of onlysrc" in message and "never built" in message
    assert not served.marker.exists()  # setup.py never ran, here or anywhere


async def test_the_deny_list_wins_also_for_a_dependency(served) -> None:
    with pytest.raises(ToolError, match="evilpkg is on this server's deny list"):
        await _installer(served, deny=("evil*",)).plan(["EvilPkg"], {})
    with pytest.raises(ToolError, match="tinydep is on this server's deny list"):
        await _installer(served, deny=("TinyDep",)).plan(["tinyapp"], {})
    with pytest.raises(ToolError, match="tinyapp is not on this server's allow list"):
        await _installer(served, allow=("numpy",)).plan(["tinyapp"], {})


async def test_an_over_size_download_is_refused(served) -> None:
    with pytest.raises(ToolError) as refused:
        await _installer(served, max_mb=1).plan(["bigpkg"], {})
    assert "3.0 MB, over this server's limit of 1 MB" in str(refused.value)


@pytest.mark.parametrize(
    "name",
    [
        "--index-url=http://127.0.0.1:1/simple",
        "-i http://127.0.0.1:1/simple",
        "git+https://example.org/x.git",
        "tinyapp @ http://127.0.0.1:1/tinyapp-1.0-py3-none-any.whl",
        "./tinyapp",
        "/tmp/tinyapp-1.0-py3-none-any.whl",
        "tinyapp; python_version > '3'",
        "tinyapp tinydep",
    ],
)
async def test_a_name_cannot_choose_where_code_comes_from(served, name: str) -> None:
    with pytest.raises(ToolError) as refused:
        await _installer(served).plan([name], {})
    assert "\n" not in str(refused.value)
    assert served.index.requests == 0  # refused before pip was asked anything


async def test_an_index_not_in_the_policy_is_never_asked(
    served, tmp_path: Path, monkeypatch
) -> None:
    """pip's own settings (environment, config files) cannot add an index to the policy's."""
    other = PackageIndex(tmp_path / "other")
    other.add(make_wheel(tmp_path / "b", "elsewhere", "1.0"))
    other.start()
    try:
        conf = tmp_path / "pip.conf"
        conf.write_text(f"[global]\nextra-index-url = {other.url}\n")
        monkeypatch.setenv("PIP_EXTRA_INDEX_URL", other.url)
        monkeypatch.setenv("PIP_CONFIG_FILE", str(conf))
        with pytest.raises(ToolError, match="no wheel of elsewhere"):
            await _installer(served).plan(["elsewhere"], {})
        assert other.requests == 0
    finally:
        other.stop()


async def test_too_many_packages_in_one_call(served) -> None:
    with pytest.raises(ToolError, match="at most 2 packages per call"):
        await _installer(served, max_per_call=2).plan(["a", "b", "c"], {})


async def test_restore_reinstalls_the_recorded_file_or_refuses_a_changed_one(
    served, tmp_path: Path
) -> None:
    installer = _installer(served)
    plan = await installer.plan(["tinydep==1.0"], {})
    recorded = [w.to_dict() for w in plan.wheels]
    plan.discard()
    overlay = tmp_path / "overlay"
    overlay.mkdir()
    again = await installer.restore(recorded, overlay)
    assert [(w.name, w.version, w.sha256) for w in again] == [
        (r["name"], r["version"], r["sha256"]) for r in recorded
    ]
    assert (overlay / "tinydep" / "__init__.py").is_file()
    # The index now serves another file under the same name and version.
    changed = make_wheel(tmp_path / "changed", "tinydep", "1.0", code="x = 'not the same'\n")
    served.index.add(changed)
    fresh = Installer(PackagePolicy(index_url=served.url, cache_dir=str(tmp_path / "fresh-cache")))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    with pytest.raises(ToolError, match="not the recorded ones"):
        await fresh.restore(recorded, elsewhere)
    assert not (elsewhere / "tinydep").exists()


async def test_a_local_wheel_folder_works_offline(tmp_path: Path) -> None:
    folder = tmp_path / "wheels"
    make_wheel(folder, "tinydep", "1.0")
    policy = PackagePolicy(index_url="", find_links=(str(folder),), cache_dir=str(tmp_path / "c"))
    plan = await Installer(policy).plan(["tinydep"], {})
    assert [(w["name"], w["index"]) for w in plan.describe()] == [("tinydep", str(folder))]
    plan.discard()


async def test_a_package_in_the_overlay_never_runs_in_the_servers_pip(
    served, tmp_path: Path
) -> None:
    """A wheel may carry a top-level ``sitecustomize.py``: in the sandbox it is the sandbox's
    business, but pip runs outside it and must never import from the overlay."""
    marker = tmp_path / "sitecustomize-ran"
    code = f"open({str(marker)!r}, 'w').write('ran')\n"
    sneaky = make_wheel(tmp_path / "b", "sneaky", "1.0", extra_files={"sitecustomize.py": code})
    served.index.add(sneaky)
    installer = _installer(served)
    overlay = tmp_path / "overlay"
    overlay.mkdir()
    plan = await installer.plan(["sneaky"], {})
    await installer.install(plan, overlay)
    assert (overlay / "sitecustomize.py").is_file()
    again = await installer.plan(["tinydep"], {"sneaky": "1.0"})  # pip runs again
    await installer.install(again, overlay)
    await installer.restore([w.to_dict() for w in plan.wheels], overlay)
    assert not marker.exists()


async def test_restore_comes_from_the_cache_or_todays_index_never_the_recorded_url(
    served, tmp_path: Path
) -> None:
    """A resume reinstalls from the shared cache by sha256 (nothing asked of the index);
    with the cache emptied, from today's index by name, version and sha256: the recorded
    URL is not what is fetched."""
    installer = _installer(served)
    plan = await installer.plan(["tinydep==1.0"], {})
    recorded = [w.to_dict() for w in plan.wheels]
    assert recorded[0]["url"].endswith("/files/" + recorded[0]["filename"])
    first = tmp_path / "first"
    first.mkdir()
    await installer.install(plan, first)  # an installed wheel is what joins the cache
    served.index.log.clear()
    cached = tmp_path / "from-cache"
    cached.mkdir()
    await installer.restore(recorded, cached)
    assert (cached / "tinydep" / "__init__.py").is_file()
    assert served.index.log == []  # nothing asked of the index at all
    shutil.rmtree(served.cache)
    fetched = tmp_path / "from-index"
    fetched.mkdir()
    recorded[0]["url"] = "http://127.0.0.1:9/elsewhere/" + recorded[0]["filename"]
    await _installer(served).restore(recorded, fetched)
    assert (fetched / "tinydep" / "__init__.py").is_file()
    assert ("GET", "/simple/tinydep/") in served.index.log
    assert served.index.body_gets(recorded[0]["filename"]) == 1


async def test_a_set_recorded_before_urls_were_kept_still_reinstalls(
    served, tmp_path: Path
) -> None:
    """Older notebooks record name, version, sha256 and index only: what the cache lacks
    comes back through one hash-pinned pip call, as it did then."""
    plan = await _installer(served).plan(["tinydep==1.0"], {})
    old = [{k: v for k, v in w.to_dict().items() if k != "url"} for w in plan.wheels]
    shutil.rmtree(served.cache)
    overlay = tmp_path / "overlay"
    overlay.mkdir()
    again = await _installer(served).restore(old, overlay)
    assert [w.pin() for w in again] == ["tinydep==1.0"]
    assert (overlay / "tinydep" / "__init__.py").is_file()
