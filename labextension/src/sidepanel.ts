/**
 * "Code Agent: side panel and sessions": an agent panel in JupyterLab's right
 * sidebar with the list of the user's sessions, opened without typing a cell.
 *
 * The panel is an ipywidget of the notebook's kernel, so the kernel makes it:
 * a silent execute request (nothing added to the notebook, no execution count)
 * calls `codeagent_jupyter.panel(side=True)`, which shows it in a sidecar. What
 * goes wrong (no agent server, the extension missing from the kernel's
 * environment) comes back as the kernel's one-line message or error, shown
 * in a dialog.
 */
import { showErrorMessage } from '@jupyterlab/apputils';
import { NotebookPanel } from '@jupyterlab/notebook';

/** What the kernel runs; the `_` name keeps the user's namespace as it was. */
export const SIDE_PANEL_CODE =
  'import codeagent_jupyter as _codeagent_jupyter\n_codeagent_jupyter.panel(side=True)\n' +
  'del _codeagent_jupyter';

/** Ask `panel`'s kernel to open a side panel; a failure becomes a dialog. */
export async function openSidePanel(panel: NotebookPanel): Promise<void> {
  const kernel = panel.sessionContext.session?.kernel;
  if (!kernel) {
    return;
  }
  let problem = '';
  const future = kernel.requestExecute({
    code: SIDE_PANEL_CODE,
    silent: true,
    store_history: false
  });
  future.onIOPub = msg => {
    const content = msg.content as { name?: string; text?: string };
    if (msg.header.msg_type === 'stream' && content.text) {
      problem += content.text;
    }
  };
  const reply = await future.done;
  const content = reply.content as { status: string; ename?: string; evalue?: string };
  if (content.status !== 'ok') {
    problem = `${content.ename}: ${content.evalue}`;
  }
  if (problem.trim()) {
    await showErrorMessage('Code Agent', problem.trim());
  }
}
