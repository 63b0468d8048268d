/**
 * "Fix with codeagent" on error outputs: one click runs `%agent fix` for that cell.
 *
 * Every code cell's error output gets a small button under its traceback. A
 * click inserts a cell below the failed one with `%agent fix In[9]` (the cell
 * as the user sees it) and runs it, so the panel opens right under the error
 * and its proposal (an `edit_cell` on that very cell) is accepted in place.
 * Only when that number does not name one cell (it never ran, or another cell
 * shows the same number) does the inserted cell name it by id
 * (`%agent --cell ID fix`). When the kernel has not loaded the extension yet,
 * the new cell loads it first; the kernel then reads the failed cell's source
 * and traceback from the open notebook (`get_cells`).
 */
import { CodeCell } from '@jupyterlab/cells';
import { NotebookActions, NotebookPanel } from '@jupyterlab/notebook';

/** The button's class (tests and themes find it by this). */
export const FIX_BUTTON_CLASS = 'codeagent-fix-button';
export const FIX_LABEL = 'Fix with codeagent';

const LOADED_EXPRESSION =
  "any(n.split('.')[0] == 'codeagent_jupyter' for n in get_ipython().extension_manager.loaded)" +
  " or 'AgentMagics' in get_ipython().magics_manager.registry";

/**
 * The source of the cell that a click inserts below the failed cell: the cell
 * by its number (`count`, when that number names it alone), else by its id.
 */
export function fixSource(cellId: string, loaded: boolean, count: number | null = null): string {
  const fix = count !== null ? `%agent fix In[${count}]` : `%agent --cell ${cellId} fix`;
  return loaded ? fix : `%load_ext codeagent_jupyter\n${fix}`;
}

/** The execution count of cell `index` when no other cell shows the same one. */
function uniqueCount(cells: ReadonlyArray<any>, index: number): number | null {
  const count = cells[index]?.execution_count;
  if (typeof count !== 'number') {
    return null;
  }
  const same = cells.filter(cell => cell.cell_type === 'code' && cell.execution_count === count);
  return same.length === 1 ? count : null;
}

/** Whether the notebook's kernel has loaded codeagent_jupyter (a silent user expression). */
export async function extensionLoaded(panel: NotebookPanel): Promise<boolean> {
  const kernel = panel.sessionContext.session?.kernel;
  if (!kernel) {
    return false;
  }
  try {
    const future = kernel.requestExecute({
      code: '',
      silent: true,
      store_history: false,
      user_expressions: { loaded: LOADED_EXPRESSION }
    });
    const reply = await future.done;
    const content = reply.content as { user_expressions?: Record<string, any> };
    const loaded = content.user_expressions?.loaded;
    return loaded?.status === 'ok' && loaded.data?.['text/plain'] === 'True';
  } catch {
    return false;
  }
}

/** Insert the `%agent … fix` cell below cell `cellId` and run it. */
export async function fixCell(panel: NotebookPanel, cellId: string): Promise<void> {
  const notebook = panel.content;
  const shared = notebook.model?.sharedModel;
  if (!shared) {
    return;
  }
  const loaded = await extensionLoaded(panel);
  const index = shared.cells.findIndex(cell => cell.id === cellId);
  if (index === -1) {
    return;
  }
  shared.insertCell(index + 1, {
    cell_type: 'code',
    source: fixSource(cellId, loaded, uniqueCount(shared.cells, index)),
    metadata: {},
    outputs: [],
    execution_count: null
  });
  notebook.activeCellIndex = index + 1;
  notebook.deselectAll();
  await NotebookActions.run(notebook, panel.sessionContext);
}

function fixButton(onClick: () => void): HTMLElement {
  const bar = document.createElement('div');
  bar.className = 'codeagent-fix-bar';
  bar.style.padding = '4px 0 2px 0';
  const button = document.createElement('button');
  button.className = `jp-Button jp-mod-styled jp-mod-accept ${FIX_BUTTON_CLASS}`;
  button.textContent = FIX_LABEL;
  button.title = 'Ask codeagent to propose a fix of this cell (runs %agent fix below it)';
  button.style.fontSize = 'var(--jp-ui-font-size1)';
  button.onclick = event => {
    event.stopPropagation();
    button.disabled = true;
    onClick();
  };
  bar.appendChild(button);
  return bar;
}

/** Put the button on each error output of `cell` that does not have one yet. */
function decorate(panel: NotebookPanel, cell: CodeCell): void {
  const area = cell.outputArea;
  for (let i = 0; i < area.model.length; i++) {
    if (area.model.get(i).type !== 'error') {
      continue;
    }
    const child = area.widgets[i];
    const output = child?.node.querySelector('.jp-OutputArea-output') ?? child?.node;
    if (!output || output.querySelector(`.${FIX_BUTTON_CLASS}`)) {
      continue;
    }
    output.appendChild(fixButton(() => void fixCell(panel, cell.model.id)));
  }
}

/** Watch every code cell of `panel`, now and as cells are added, for error outputs. */
export function watchErrors(panel: NotebookPanel): void {
  const watched = new WeakSet<CodeCell>();
  const scan = (): void => {
    for (const cell of panel.content.widgets) {
      if (cell.model.type !== 'code' || watched.has(cell as CodeCell)) {
        continue;
      }
      const code = cell as CodeCell;
      watched.add(code);
      code.model.outputs.changed.connect(() => requestAnimationFrame(() => decorate(panel, code)));
      decorate(panel, code);
    }
  };
  void panel.context.ready.then(() => {
    scan();
    panel.content.model?.cells.changed.connect(() => requestAnimationFrame(scan));
  });
}
