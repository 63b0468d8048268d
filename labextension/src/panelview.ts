/**
 * The `%agent` output in JupyterLab and Notebook 7: the live panel while its kernel holds
 * it, else the run's static summary with the session id and a Reattach button.
 *
 * The output carries three views of the panel: the widget, the summary (`text/html`) and
 * `application/vnd.codeagent.panel+json` (the session id). JupyterLab would show the widget
 * even when its model is gone ("Error displaying widget: model not found" in a reopened
 * notebook); this renderer, preferred for the third type, asks the kernel (`liveness`)
 * and shows the widget through ipywidgets' own renderer, or the summary through the
 * notebook's HTML renderer (sanitized as any output of its trust). Like the widget, it is
 * used only for trusted outputs; elsewhere the summary shows as plain HTML.
 */
import { CodeCell } from '@jupyterlab/cells';
import { NotebookPanel } from '@jupyterlab/notebook';
import { IRenderMime } from '@jupyterlab/rendermime';
import { PanelLayout, Widget } from '@lumino/widgets';

import { LiveWidgets, liveWidgets } from './liveness';
import { inlineCode, kernelOf, runQuiet, serverHas, validSessionId } from './reattach';

export const PANEL_MIME = 'application/vnd.codeagent.panel+json';
const WIDGET_MIME = 'application/vnd.jupyter.widget-view+json';
/** Before ipywidgets' renderer (-10): the output is ours to route. */
const RANK = -20;
/** Tries at rendering the widget while ipywidgets restores its models from the kernel. */
const WIDGET_TRIES = 30;

function widgetModelId(model: IRenderMime.IMimeModel): string | null {
  const view = model.data[WIDGET_MIME] as { model_id?: unknown } | undefined;
  return typeof view?.model_id === 'string' && view.model_id ? view.model_id : null;
}

function sessionIdOf(model: IRenderMime.IMimeModel): string | null {
  const data = model.data[PANEL_MIME] as { session_id?: unknown } | undefined;
  return validSessionId(data?.session_id) ? data.session_id : null;
}

/** The bar above a summary (or a dead panel): the session id, Reattach or why not. */
export function reattachBar(
  id: string | null,
  lead: string,
  onReattach: (say: (text: string) => void) => Promise<void>
): HTMLElement {
  const bar = document.createElement('div');
  bar.className = 'codeagent-reattach-bar';
  bar.setAttribute('role', 'status');
  Object.assign(bar.style, {
    fontSize: 'var(--jp-ui-font-size1)',
    color: 'var(--jp-ui-font-color1)',
    background: 'var(--jp-layout-color2)',
    border: '1px solid var(--jp-border-color2)',
    padding: '4px 8px',
    margin: '2px 0',
    overflowWrap: 'anywhere'
  });
  const text = document.createElement('span');
  text.className = 'codeagent-reattach-text';
  text.textContent = lead;
  bar.appendChild(text);
  const said = document.createElement('span');
  said.className = 'codeagent-reattach-said';
  const say = (message: string): void => {
    said.textContent = message;
  };
  if (id === null) {
    say(' This output names no session to reattach.');
    bar.appendChild(said);
    return bar;
  }
  const code = document.createElement('code');
  code.textContent = id;
  bar.append(' Session ', code, ' ');
  const button = document.createElement('button');
  button.className = 'jp-Button jp-mod-styled jp-mod-accept codeagent-reattach';
  button.textContent = 'Reattach';
  button.title = 'Open this session again in a live panel, from its snapshots on the server';
  button.disabled = true;
  button.style.marginLeft = '4px';
  bar.append(button, said);
  void serverHas(id).then(answer => {
    if (answer === 'yes') {
      button.disabled = false;
    } else {
      button.remove();
      say(
        answer === 'no'
          ? ' This server no longer has the session: the summary is all that is left.'
          : ' The codeagent server does not answer: Reattach needs it.'
      );
    }
  });
  button.onclick = () => {
    button.disabled = true;
    say(' reattaching…');
    onReattach(say).catch(error => {
      button.disabled = false;
      say(` Reattach failed: ${error instanceof Error ? error.message : String(error)}`);
    });
  };
  return bar;
}

/** One `%agent` output of notebook `panel`. */
export class PanelOutput extends Widget implements IRenderMime.IRenderer {
  constructor(private readonly panel: NotebookPanel) {
    super();
    this.layout = new PanelLayout();
    this.addClass('codeagent-panel-output');
    this.live = liveWidgets(panel.sessionContext);
    this.live.changed.connect(this.onChanged, this);
  }

  async renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    this.model = model;
    await this.live.known();
    await this.display();
  }

  dispose(): void {
    this.live.changed.disconnect(this.onChanged, this);
    super.dispose();
  }

  private onChanged(): void {
    const id = this.model ? widgetModelId(this.model) : null;
    const alive = id !== null && this.live.has(id) === true;
    if (this.mode === 'live' && !alive) {
      this.addBar('The kernel of this panel is gone (restarted or shut down).');
    } else if (this.mode === 'summary' && alive) {
      void this.display();
    }
  }

  private async display(): Promise<void> {
    const model = this.model;
    if (!model || this.isDisposed) {
      return;
    }
    const id = widgetModelId(model);
    const alive = id !== null && this.live.has(id) === true;
    const layout = this.layout as PanelLayout;
    while (layout.widgets.length) {
      layout.widgets[0].dispose();
    }
    const rendermime = this.panel.content.rendermime;
    if (alive && rendermime.mimeTypes.includes(WIDGET_MIME)) {
      this.mode = 'live';
      const view = rendermime.createRenderer(WIDGET_MIME);
      layout.addWidget(view);
      for (let i = 0; i < WIDGET_TRIES && !view.isDisposed; i++) {
        await view.renderModel(model);
        if (view.node.querySelector('.jupyter-widgets')) {
          break;
        }
        await new Promise(resolve => setTimeout(resolve, 1000));
      }
      return;
    }
    this.mode = 'summary';
    this.addBar('The live panel of this run is gone (its kernel restarted or stopped).');
    const html = rendermime.createRenderer('text/html');
    layout.addWidget(html);
    await html.renderModel(model);
  }

  private addBar(lead: string): void {
    if (!this.model || this.node.querySelector('.codeagent-reattach-bar')) {
      return;
    }
    const id = sessionIdOf(this.model);
    const bar = new Widget({ node: reattachBar(id, lead, say => this.reattach(say)) });
    (this.layout as PanelLayout).insertWidget(0, bar);
  }

  /** Run `%agent --attach ID` for this output's cell; the new panel replaces the output. */
  private async reattach(say: (text: string) => void): Promise<void> {
    const id = this.model ? sessionIdOf(this.model) : null;
    const cellNode = this.node.closest('.jp-Cell');
    const cell = this.panel.content.widgets.find(w => w.node === cellNode);
    if (id === null || !(cell instanceof CodeCell)) {
      say(' This output is no longer in a code cell of the notebook.');
      return;
    }
    const kernel = await kernelOf(this.panel.sessionContext);
    const future = runQuiet(kernel, inlineCode(id), { cellId: cell.model.id });
    cell.outputArea.future = future;
    const reply = await future.done;
    if (reply.content.status !== 'ok') {
      throw new Error('the kernel could not open the session (see the output)');
    }
  }

  private readonly live: LiveWidgets;
  private model: IRenderMime.IMimeModel | null = null;
  private mode: 'live' | 'summary' | null = null;
}

/** Route the notebook's `%agent` outputs through `PanelOutput` (once per notebook). */
export function addPanelRenderer(panel: NotebookPanel): void {
  const rendermime = panel.content.rendermime;
  if (rendermime.mimeTypes.includes(PANEL_MIME)) {
    return;
  }
  rendermime.addFactory(
    { safe: false, mimeTypes: [PANEL_MIME], createRenderer: () => new PanelOutput(panel) },
    RANK
  );
}
