"""What an install costs: ``install_packages`` against a local PEP 503 index on 127.0.0.1.

Rows: a first install of a small wheel, a first install of a 10 MB wheel, the 10 MB wheel
reinstalled from the shared wheel cache in a fresh sandbox (as a resume does), the same
with the cache emptied first (fetched again from the index by name, version and sha256),
and an install call for a wheel already in the cache. Each from the call to the package
imported in the running sandbox kernel. Wall seconds and the CPU seconds of the pip
processes (what a loaded machine stretches into wall time)."""

from __future__ import annotations

import argparse
import asyncio
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from codeagent_jupyter.config import SandboxLimits  # noqa: E402
from codeagent_jupyter.packages import Installer, PackagePolicy  # noqa: E402
from codeagent_jupyter.sandbox import Sandbox  # noqa: E402
from codeagent_jupyter.tools.install import InstallTool  # noqa: E402
from tests.packages.index import PackageIndex, make_wheel  # noqa: E402

MB = 1024 * 1024


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


async def _one(tool: InstallTool, sandbox: Sandbox, name: str, restore: list | None) -> tuple:
    cpu, started = _children_cpu(), time.perf_counter()
    if restore is None:
        outcome = await tool.call("install_packages", {"packages": [name], "reason": "bench"})
        assert outcome.status == "ok", outcome.text
        packages = outcome.packages or []
    else:
        await tool.restore(restore)
        packages = restore
    result = await sandbox.execute(f"import {name}; print({name}.__version__)")
    assert "1.0" in result.text, result.text
    return time.perf_counter() - started, _children_cpu() - cpu, packages


async def main(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="codeagent-bench-packages-") as folder:
        tmp = Path(folder)
        index = PackageIndex(tmp / "index")
        index.add(make_wheel(tmp / "built", "smallpkg", "1.0"))
        index.add(make_wheel(tmp / "built", "tenmb", "1.0", pad_bytes=args.size_mb * MB))
        index.start()
        policy = PackagePolicy(index_url=index.url, cache_dir=str(tmp / "cache"), approval="auto")
        rows = []
        try:
            ws = tmp / "ws"
            ws.mkdir()
            async with Sandbox(workdir=ws, limits=SandboxLimits()) as sandbox:
                tool = InstallTool(sandbox, Installer(policy), approval="auto")
                wall, cpu, _ = await _one(tool, sandbox, "smallpkg", None)
                rows.append(("first install, 1 kB wheel", wall, cpu))
                wall, cpu, recorded = await _one(tool, sandbox, "tenmb", None)
                rows.append((f"first install, {args.size_mb} MB wheel", wall, cpu))
            async with Sandbox(workdir=ws, limits=SandboxLimits()) as sandbox:
                tool = InstallTool(sandbox, Installer(policy), approval="auto")
                wall, cpu, _ = await _one(tool, sandbox, "tenmb", recorded)
                rows.append((f"reinstall on resume, {args.size_mb} MB, cached", wall, cpu))
                tool = InstallTool(sandbox, Installer(policy), approval="auto")
                wall, cpu, _ = await _one(tool, sandbox, "smallpkg", None)
                rows.append(("cached 1 kB wheel (install call)", wall, cpu))
            shutil.rmtree(tmp / "cache")
            async with Sandbox(workdir=ws, limits=SandboxLimits()) as sandbox:
                tool = InstallTool(sandbox, Installer(policy), approval="auto")
                wall, cpu, _ = await _one(tool, sandbox, "tenmb", recorded)
                rows.append((f"reinstall on resume, {args.size_mb} MB, no cache", wall, cpu))
        finally:
            index.stop()
    print(f"{'case':<40} {'wall s':>8} {'pip cpu s':>10}")
    for case, wall, cpu in rows:
        print(f"{case:<40} {wall:>8.2f} {cpu:>10.2f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=int, default=10, help="size of the big wheel")
    asyncio.run(main(parser.parse_args()))
