"""``%agent`` / ``%%agent``: open a panel on a new or existing session.

    %agent plot monthly revenue from sales.csv
    %agent --model gpt-4o-mini --max-steps 10 summarise data.csv
    %agent --attach 3f2a9c1b7d4e          (re-attach after a kernel restart)
    %agent --side plot revenue            (the panel in JupyterLab's right sidebar)
    %agent --with df,model fit a better model   (copy df and model into the sandbox)
    %agent plot @df by month, see @data.csv and @In[3]   (@-mentions: a variable, copied
                                          as --with does; a file or folder; a cell)
    %agent accept 3 | %agent accept all   (without the JupyterLab extension)
    %agent fix | %agent --with df fix     (propose an edit of the last failed cell)
    %agent fix In[9]                      (the cell shown In [9]: the error's "Fix" button)
    %agent --cell 4f2a… fix               (the cell with that notebook cell id)
    %%agent --max-steps 20
    <a long request over several lines>

Options come first; everything after them is the request, verbatim (quotes and all).
``%config AgentMagics.side = True`` (or ``c.AgentMagics.side = True`` in an IPython kernel
config file) makes the side panel the default; ``--inline`` then keeps one in its cell.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, magics_class
from traitlets import Bool

from ..core.mentions import variable_names
from ..util.variables import summarize
from .accept_fallback import accept
from .actions import Inserter
from .bridge import NotebookBridge
from .client import AgentClient, CodeAgentError, notebook_path
from .display import Placement, sidecar_class
from .fix_magic import FixCommands
from .fixing import FailedCell, FailureWatcher, fix_target, fix_title
from .interrupt import InterruptWatcher
from .live import LiveNotebook, kernel_id
from .magic_args import parse
from .mention_completion import install as install_completion
from .panel import AgentPanel
from .transfer import Payload, serialize


@magics_class
class AgentMagics(FixCommands, Magics):
    """Keeps the panels of this kernel, so ``%agent accept N`` finds the latest one."""

    side = Bool(
        False,
        help="Show new agent panels in JupyterLab's right sidebar (jupyterlab-sidecar) "
        "instead of the cell's output; --side / --inline choose per panel.",
    ).tag(config=True)

    def __init__(self, shell: Any) -> None:
        super().__init__(shell)
        self.panels: list[AgentPanel] = []
        self.watcher = FailureWatcher()
        self.counts: dict[str, int] = {}
        """Notebook cell id -> its last execution count here (what JupyterLab shows)."""
        self.interrupts = InterruptWatcher(self.stop_runs)
        self._tasks: set[asyncio.Future[Any]] = set()
        if shell is not None:
            shell.events.register("post_run_cell", self.watcher.post_run_cell)
            shell.events.register("post_run_cell", self.count)

    def count(self, result: Any) -> None:
        """Remember ``In [n]`` of each notebook cell that ran (``post_run_cell``)."""
        cell_id = getattr(result.info, "cell_id", None)
        if cell_id and result.execution_count:
            self.counts[str(cell_id)] = int(result.execution_count)

    def cell_label(self, cell_id: str) -> str | None:
        number = self.counts.get(cell_id)
        return f"In [{number}]" if number else None

    @line_cell_magic
    def agent(self, line: str, cell: str | None = None) -> None:
        """Ask the agent (runs in the Jupyter server's sandbox, never in this kernel)."""
        args, request = parse(line)
        if cell is not None:
            request = (request + "\n" + cell).strip()
        words = request.split()
        if len(words) == 2 and words[0] == "accept" and (words[1].isdigit() or words[1] == "all"):
            self.accept(words[1])
            return
        if args.attach and request:
            raise UsageError("%agent: --attach takes no request; send follow-ups from the panel")
        fixing, number = fix_target(request)
        if args.cell and (not fixing or number is not None):
            raise UsageError("%agent: --cell goes with fix: %agent --cell ID fix")
        names = _joined(args.with_names or "", self.mentioned_names(request))
        payloads = self.serialize(names) if names else []
        brought = [p.name for p in payloads]
        failed, title = None, ""
        if fixing:
            failed = self._failed(args.cell, number)
            if failed is None and args.cell is None and number is None:
                raise UsageError("%agent fix: no cell has failed since %load_ext codeagent_jupyter")
            request = self.fix_request(failed, brought) if failed is not None else ""
            title = fix_title(failed) if failed is not None else ""
        panel = self.open_panel(
            args.model,
            args.max_steps,
            args.notebook_path,
            failed=failed,
            attach=args.attach,
            side=args.side,
        )
        if panel is None:
            return
        panel.payloads = payloads
        self.interrupts.install(getattr(self.shell, "kernel", None))
        if args.attach:
            panel.attach(args.attach)
        elif request:
            panel.run("send", panel.start(request, title=title))
        elif fixing:  # a cell this kernel did not see fail: read it from the notebook
            found = self._fix_from_notebook(panel, brought, cell_id=args.cell, number=number)
            panel.run("send", found)

    def open_panel(
        self,
        model: str | None = None,
        max_steps: int | None = None,
        path: str | None = None,
        *,
        failed: FailedCell | None = None,
        attach: str | None = None,
        side: bool | None = None,
    ) -> AgentPanel | None:
        """Display a new panel (inline, or ``side`` in JupyterLab's right sidebar; None:
        ``AgentMagics.side`` decides); None (after a one-line message) if no server is
        reachable.

        A panel already in the cell (the cell was run again) is closed, and so is its
        session (paused: its sandbox is released, a message resumes it from the session
        list), unless the cell re-attaches to that same session.
        """
        side = self.side if side is None else side
        try:
            client = AgentClient.discover()
            client.check()
        except CodeAgentError as e:
            print(str(e), file=sys.stderr)
            return None
        cell_id = _current_cell_id(self.shell)
        for old in [p for p in self.panels if cell_id and p.anchor_cell_id == cell_id]:
            self._replace(old, keep=attach)
        bridge = NotebookBridge()
        panel = AgentPanel(
            client,
            notebook_path=path or notebook_path(client.server),
            model=model,
            max_steps=max_steps,
            inserter=Inserter(bridge, cell_id),
        )
        panel.namespace_of = self.namespace
        panel.serialize_of = self.serialize
        panel.mentioned_of = self.mentioned_names
        _mark_kernel(panel)
        panel.label_of = self.cell_label
        panel.open_of = self.open_side
        if side and sidecar_class() is None:
            print("codeagent: --side needs the sidecar package (pip install sidecar)")
            side = False
        panel.placement = Placement(panel, side=side)
        live = LiveNotebook(bridge, explicit_path=path is not None, failed=failed)
        panel.start_fields = live.fields
        self.panels.append(panel)
        panel.placement.show()
        if side:
            panel.sessions.widget.selected_index = 0  # the side panel lists the sessions
        return panel

    def open_side(self, session_id: str, resume: bool = False) -> None:
        """A side panel on an existing session (the session list's Open / Resume)."""
        existing = next((p for p in self.panels if p.session_id == session_id), None)
        client = existing.client if existing is not None else AgentClient.discover()
        if sidecar_class() is None:
            print("codeagent: opening a session needs the sidecar package (pip install sidecar)")
            return
        panel = AgentPanel(client)
        _mark_kernel(panel)
        panel.label_of = self.cell_label
        panel.open_of = self.open_side
        panel.placement = Placement(panel, side=True)
        panel.placement.show_side(f"codeagent {session_id[:6]}")
        self.panels.append(panel)
        panel.attach(session_id)
        if resume:
            panel.say("Closed session: send a message to resume it from its last step.")

    def _replace(self, old: AgentPanel, keep: str | None) -> None:
        """The cell was run again: its old panel is gone from the page, and its session
        stops holding a sandbox (a re-run means a new request, or an edited one)."""
        old.close()
        self.panels.remove(old)
        if old.client is None or old.session_id is None or old.session_id == keep:
            return
        self._background(_release(old.client, old.session_id, old.state.running))

    def stop_runs(self) -> None:
        """The kernel was interrupted between cells (■): Stop every run still going."""
        for panel in self.panels:
            if panel.client is not None and panel.session_id and panel.state.running:
                panel.say("stopping… (kernel interrupted)", transient=True)
                panel.run("stop", panel.client.cancel(panel.session_id))

    def _background(self, coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def namespace(self) -> list[dict[str, Any]]:
        """This kernel's user variables described (types and shapes, never values)."""
        return summarize(self.shell.user_ns, self.shell.user_ns_hidden)

    def mentioned_names(self, text: str) -> list[str]:
        """The ``@name`` mentions of ``text`` that are this kernel's variables: copied into
        the sandbox as ``--with`` copies them (the server resolves the other mentions)."""
        ns, hidden = self.shell.user_ns, self.shell.user_ns_hidden
        return [n for n in variable_names(text) if n in ns and n not in hidden]

    def serialize(self, names: str) -> list[Payload]:
        """The ``--with`` variables as bytes, taken now (a snapshot, not a live link)."""
        payloads = []
        for name in [n.strip() for n in names.split(",") if n.strip()]:
            if name not in self.shell.user_ns:
                raise UsageError(f"%agent: --with {name}: no variable {name!r} in this kernel")
            try:
                payloads.append(serialize(name, self.shell.user_ns[name]))
            except Exception as e:
                raise UsageError(f"%agent: --with {name}: cannot serialize it ({e})") from None
        return payloads

    def accept(self, which: str) -> None:
        """The fallback for Accept (``%agent accept N|all``): ``accept_fallback.accept``."""
        accept(self.shell, self.panels, which)


async def _release(client: AgentClient, session_id: str, running: bool) -> None:
    """Stop (if running) and pause a replaced panel's session; failures are not the user's
    concern here (the session may be gone already)."""
    try:
        if running:
            await client.cancel(session_id)
        await client.pause(session_id)
    except CodeAgentError:
        pass


def _joined(names: str, more: list[str]) -> str:
    """``--with`` names and mentioned ones, each once, comma-separated."""
    listed = [n.strip() for n in names.split(",") if n.strip()]
    return ",".join(dict.fromkeys([*listed, *more]))


def _mark_kernel(panel: AgentPanel) -> None:
    """Name this kernel on the panel's element: a side panel's Reattach runs in the
    notebook whose kernel this is."""
    kid = kernel_id()
    if kid:
        panel.widget.add_class(f"codeagent-kernel-{kid}")


def _current_cell_id(shell: Any) -> str | None:
    """The id of the executing cell (JupyterLab sends it as ``metadata.cellId``)."""
    kernel = getattr(shell, "kernel", None)
    try:
        parent = kernel.get_parent("shell") if kernel is not None else shell.get_parent()
    except Exception:
        return None
    cell_id = (parent or {}).get("metadata", {}).get("cellId")
    return str(cell_id) if cell_id else None


def new_panel(shell: Any = None, *, side: bool = False) -> AgentPanel | None:
    """``codeagent_jupyter.panel()``: an empty panel with a prompt box (``side``: in the
    right sidebar, its session list open)."""
    from IPython import get_ipython

    shell = shell or get_ipython()
    if shell is None:
        raise CodeAgentError("codeagent: panel() needs an IPython kernel (run it in a notebook)")
    magics = shell.magics_manager.registry.get("AgentMagics")
    if magics is None:
        magics = AgentMagics(shell)
        shell.register_magics(magics)
    install_completion(shell)
    return magics.open_panel(side=side or None)
