"""Tab after ``@`` in an ``%agent`` cell, asked of a real IPython kernel as JupyterLab asks
(``complete_request``): the kernel's variables, the files below its folder, the cells run.

And what it must not offer: a symlink (``@path`` refuses them: offering one leads nowhere,
and following it would list a folder outside the notebook's), a path with ``..``, and
anything at all outside an agent cell or for an e-mail address (ordinary completion goes on).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from jupyter_client.manager import AsyncKernelManager

from codeagent_jupyter.widget.mention_completion import candidates
from tests.widget.test_magic import EXTENSION, Kernel


@pytest.fixture
async def kernel(tmp_path: Path) -> AsyncIterator[Kernel]:
    folder = tmp_path / "notebooks"
    (folder / "data").mkdir(parents=True)
    (folder / "data" / "sales.csv").write_text("a\n1\n")
    (folder / "data.csv").write_text("a\n1\n")
    (folder / ".hidden.csv").write_text("a\n1\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret-listing.txt").write_text("x")
    (folder / "data" / "elsewhere").symlink_to(outside)
    (folder / "dlink.csv").symlink_to(folder / "data.csv")
    manager = AsyncKernelManager(kernel_name="python3")
    await manager.start_kernel(cwd=str(folder))
    client = manager.client()
    client.start_channels()
    try:
        await client.wait_for_ready(timeout=60)
        yield Kernel(client, manager)
    finally:
        client.stop_channels()
        await manager.shutdown_kernel(now=True)


def test_no_path_through_a_symlink_or_above_the_folder(tmp_path: Path) -> None:
    """What the server would refuse is never offered (there IPython's own completion of
    the user's kernel answers, as in any cell)."""
    folder, outside = tmp_path / "notebooks", tmp_path / "outside"
    (folder / "data").mkdir(parents=True)
    outside.mkdir()
    (outside / "secret-listing.txt").write_text("x")
    (folder / "data" / "elsewhere").symlink_to(outside)
    (folder / "data" / "ok.csv").write_text("a")
    assert candidates("data/", [], folder, []) == ["data/ok.csv"]
    assert candidates("data/elsewhere/", [], folder, []) == []
    assert candidates("../", [], folder, []) == []
    assert candidates("data/../../", [], folder, []) == []
    assert candidates(str(outside) + "/", [], folder, []) == []
    assert candidates("I", ["Id"], folder, [3, 1]) == ["Id", "In[3]", "In[1]"]


async def _complete(kernel: Kernel, code: str) -> dict[str, Any]:
    msg_id = kernel.kc.complete(code, len(code))
    while True:
        reply = await kernel.kc.get_shell_msg(timeout=60)
        if reply["parent_header"].get("msg_id") == msg_id:
            return dict(reply["content"])


async def test_tab_after_at_offers_variables_files_and_cells(kernel: Kernel) -> None:
    reply, _ = await kernel.run(f"%load_ext {EXTENSION}\ndf = 1\ndelta = 2")
    assert reply["status"] == "ok"

    typed = "%agent compare @d"
    offered = await _complete(kernel, typed)
    assert set(offered["matches"]) == {"df", "delta", "data.csv", "data/"}  # no "dlink.csv"
    assert offered["cursor_start"] == len(typed) - 1 and offered["cursor_end"] == len(typed)

    assert (await _complete(kernel, "%%agent\nplot @data/"))["matches"] == ["data/sales.csv"]
    assert (await _complete(kernel, "%agent @In"))["matches"] == ["In[1]"]
    assert (await _complete(kernel, "%agent @.h"))["matches"] == [".hidden.csv"]  # when asked

    # Outside a mention or an agent cell, IPython's own completion as before.
    mail = (await _complete(kernel, "%agent write to ana@d"))["matches"]
    assert "dict" in mail  # a builtin: the ordinary matchers answered
    assert "dict" in (await _complete(kernel, "x = @d"))["matches"]  # not an agent cell

    # %unload_ext takes it away again.
    reply, _ = await kernel.run(f"%unload_ext {EXTENSION}")
    assert reply["status"] == "ok"
    assert "dict" in (await _complete(kernel, "%agent compare @d"))["matches"]
