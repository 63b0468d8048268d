/**
 * Side panels (`%agent --side`, the session list's Open) follow their kernel.
 *
 * A side panel is a jupyterlab-sidecar tab in the right area holding the panel widget.
 * Sidecar adds a tab for every view of its model: a notebook reopened while its kernel
 * runs restores the model and adds a second tab beside the old one, whose view belongs to
 * the closed notebook. And a tab whose kernel restarted or stopped still looks live.
 * So, for every tab showing a codeagent panel (its element names its widget model, kernel
 * and session: `codeagent-model-…`, `codeagent-kernel-…`, `codeagent-session-…`):
 *
 * - one tab per panel: an older tab of the same model is closed, and so is a tab whose
 *   notebook was closed (ipywidgets empties it; reopening the notebook makes a new one
 *   while the kernel holds the panel);
 * - a panel whose kernel no longer holds its model is marked disconnected (its buttons
 *   dimmed, its banner says why) and gets a Reattach button: the session opens again in a
 *   new side panel from the notebook of its kernel (else the current notebook), and the
 *   dead tab closes.
 */
import { JupyterFrontEnd } from '@jupyterlab/application';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import { Widget } from '@lumino/widgets';

import { liveWidgets } from './liveness';
import { reattachBar } from './panelview';
import { kernelOf, runQuiet, sideCode, validSessionId } from './reattach';

const SIDECAR_CLASS = 'jupyterlab-sidecar';
const DISCONNECTED = 'jupyter-widgets-disconnected';
const SCAN_MS = 1000;

interface ISideTab {
  widget: Widget;
  element: HTMLElement;
  modelId: string;
  kernelId: string | null;
  sessionId: string | null;
}

function named(element: Element, prefix: string): string | null {
  const found = Array.from(element.classList).find(name => name.startsWith(prefix));
  return found ? found.slice(prefix.length) : null;
}

/** Keeps the right area's codeagent tabs in step with their kernels. */
export class SidePanels {
  constructor(
    private readonly app: JupyterFrontEnd,
    private readonly tracker: INotebookTracker
  ) {
    window.setInterval(() => this.scan(), SCAN_MS);
    tracker.widgetAdded.connect((_, panel) => {
      liveWidgets(panel.sessionContext).changed.connect(() => this.scan());
    });
  }

  private tabs(): ISideTab[] {
    const found: ISideTab[] = [];
    for (const widget of this.app.shell.widgets('right')) {
      if (!widget.hasClass(SIDECAR_CLASS) || widget.isDisposed) {
        continue;
      }
      const element = widget.node.querySelector<HTMLElement>('.codeagent-panel');
      const modelId = element ? named(element, 'codeagent-model-') : null;
      if (!element || !modelId) {
        if (this.order.has(widget)) {
          widget.dispose(); // its notebook closed and took the view: an empty tab is left
        }
        continue;
      }
      if (!this.order.has(widget)) {
        this.order.set(widget, this.counter++);
      }
      const sessionId = named(element, 'codeagent-session-');
      found.push({
        widget,
        element,
        modelId,
        kernelId: named(element, 'codeagent-kernel-'),
        sessionId: validSessionId(sessionId) ? sessionId : null
      });
    }
    return found;
  }

  /** The notebook whose kernel is `kernelId`, if one is open. */
  private notebookOf(kernelId: string | null): NotebookPanel | null {
    return (
      this.tracker.find(panel => panel.sessionContext.session?.kernel?.id === kernelId) ?? null
    );
  }

  scan(): void {
    const tabs = this.tabs();
    const newest = new Map<string, ISideTab>();
    for (const tab of tabs) {
      const other = newest.get(tab.modelId);
      if (!other || this.order.get(tab.widget)! > this.order.get(other.widget)!) {
        newest.set(tab.modelId, tab);
      }
    }
    for (const tab of tabs) {
      if (newest.get(tab.modelId) !== tab) {
        tab.widget.dispose();
        continue;
      }
      const notebook = this.notebookOf(tab.kernelId);
      const alive = notebook ? liveWidgets(notebook.sessionContext).has(tab.modelId) : false;
      if (alive === false) {
        this.markDead(tab);
      }
    }
  }

  private markDead(tab: ISideTab): void {
    tab.element.classList.add(DISCONNECTED);
    if (tab.element.querySelector('.codeagent-reattach-bar')) {
      return;
    }
    const bar = reattachBar(
      tab.sessionId,
      'Disconnected: the kernel of this panel restarted or stopped.',
      say => this.reattach(tab, say)
    );
    tab.element.insertBefore(bar, tab.element.firstChild); // inside the panel, above it
  }

  /** Open the session in a new side panel, then close the dead one. */
  private async reattach(tab: ISideTab, say: (text: string) => void): Promise<void> {
    const notebook = this.notebookOf(tab.kernelId) ?? this.tracker.currentWidget;
    if (!notebook || tab.sessionId === null) {
      say(' Open a notebook first: the session reattaches in its kernel.');
      return;
    }
    const kernel = await kernelOf(notebook.sessionContext);
    const reply = await runQuiet(kernel, sideCode(tab.sessionId)).done;
    if (reply.content.status !== 'ok') {
      const error = reply.content as { ename?: string; evalue?: string };
      throw new Error(`${error.ename ?? 'error'}: ${error.evalue ?? ''}`);
    }
    tab.widget.dispose();
  }

  private readonly order = new WeakMap<Widget, number>();
  private counter = 0;
}
