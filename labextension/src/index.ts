/**
 * codeagent-jupyter for JupyterLab: what the kernel-side panel cannot do itself.
 *
 * - every notebook's kernel gets a "codeagent" comm target, through which the
 *   panel inserts accepted cells into the live notebook and reads the open
 *   document (see bridge.ts);
 * - the command "Code Agent: new panel" inserts a `%agent` cell to start from
 *   (loading the extension first only when the kernel has not loaded it);
 * - the command "Code Agent: side panel and sessions" opens a panel in the
 *   right sidebar with the user's sessions, without a cell (sidepanel.ts);
 * - error outputs get a "Fix with codeagent" button (see fixbutton.ts);
 * - a `%agent` output shows the run's summary and Reattach once its widget is gone
 *   (panelview.ts), and side panels follow their kernel (sidepanels.ts).
 */
import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { ICommandPalette } from '@jupyterlab/apputils';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';

import { connectNotebook } from './bridge';
import { extensionLoaded, watchErrors } from './fixbutton';
import { addPanelRenderer } from './panelview';
import { openSidePanel } from './sidepanel';
import { SidePanels } from './sidepanels';

export { VERSION, COMM_TARGET } from './protocol';

/** Command ids, stable: other extensions and shortcuts may refer to them. */
export namespace CommandIDs {
  export const newPanel = 'codeagent:new-panel';
  export const sidePanel = 'codeagent:side-panel';
}

/** What the new cell holds: the user types a request after `%agent `. */
export const AGENT_LINE = '%agent ';
/** The same, for a kernel that has not loaded the extension yet. */
export const PANEL_CELL_SOURCE = `%load_ext codeagent_jupyter\n${AGENT_LINE}`;

/**
 * Insert the `%agent` cell below the active cell, unexecuted, and put the
 * cursor at its end so the user can type the request straight away.
 */
async function insertPanelCell(tracker: INotebookTracker): Promise<void> {
  const panel = tracker.currentWidget;
  const model = panel?.content.model;
  if (!panel || !model) {
    return;
  }
  const notebook = panel.content;
  const source = (await extensionLoaded(panel)) ? AGENT_LINE : PANEL_CELL_SOURCE;
  const index = notebook.activeCellIndex + 1;
  model.sharedModel.insertCell(index, {
    cell_type: 'code',
    source,
    metadata: {},
    outputs: [],
    execution_count: null
  });
  notebook.activeCellIndex = index;
  notebook.deselectAll();
  const cell = notebook.activeCell;
  if (!cell) {
    return;
  }
  await cell.ready;
  // When run from the command palette, the palette gives focus back to the notebook
  // (which puts it in command mode) as it closes; enter edit mode after that.
  await new Promise(resolve => requestAnimationFrame(resolve));
  notebook.mode = 'edit';
  const end = cell.editor?.getPositionAt(source.length);
  if (end) {
    cell.editor?.setCursorPosition(end);
  }
  cell.editor?.focus();
}

const plugin: JupyterFrontEndPlugin<void> = {
  id: 'codeagent-jupyter:plugin',
  description: 'Insert agent cells into notebooks and start agent panels.',
  autoStart: true,
  requires: [INotebookTracker],
  optional: [ICommandPalette],
  activate: (
    app: JupyterFrontEnd,
    tracker: INotebookTracker,
    palette: ICommandPalette | null
  ): void => {
    // Before the notebook's content renders: its saved `%agent` outputs come through us.
    app.docRegistry.addWidgetExtension('Notebook', {
      createNew: panel => addPanelRenderer(panel as NotebookPanel)
    });
    tracker.forEach(addPanelRenderer);
    new SidePanels(app, tracker);
    tracker.forEach(connectNotebook);
    tracker.widgetAdded.connect((_, panel) => connectNotebook(panel));
    tracker.forEach(watchErrors);
    tracker.widgetAdded.connect((_, panel) => watchErrors(panel));

    app.commands.addCommand(CommandIDs.newPanel, {
      label: 'Code Agent: new panel',
      caption: 'Insert a %agent cell below the active cell',
      isEnabled: () => tracker.currentWidget !== null,
      execute: () => insertPanelCell(tracker)
    });
    palette?.addItem({ command: CommandIDs.newPanel, category: 'Code Agent' });

    app.commands.addCommand(CommandIDs.sidePanel, {
      label: 'Code Agent: side panel and sessions',
      caption: 'Open an agent panel in the right sidebar, with your sessions (no cell needed)',
      isEnabled: () => tracker.currentWidget?.sessionContext.session?.kernel != null,
      execute: () => {
        const panel = tracker.currentWidget;
        return panel ? openSidePanel(panel) : undefined;
      }
    });
    palette?.addItem({ command: CommandIDs.sidePanel, category: 'Code Agent' });
  }
};

export default plugin;
