/**
 * "Accept and run": the panel asks for cells it just put in the notebook to be run
 * in the notebook's kernel, as Shift+Enter would (prompt, outputs and execution count
 * in the cell, the kernel's stop-on-error between them).
 *
 * Kept apart from the insert/replace protocol: a request of its own
 * (`{"action": "run_cells", "cell_ids": [...]}`), answered `{"action": "running"}`
 * once every execution is queued (not when they finish).
 */
import { CodeCell } from '@jupyterlab/cells';
import { NotebookPanel } from '@jupyterlab/notebook';
import { JSONObject } from '@lumino/coreutils';

import { ProtocolError } from './protocol';

/** Whether `data` is a run request (checked before the other actions). */
export function isRunCells(data: unknown): boolean {
  return (
    typeof data === 'object' && data !== null && (data as { action?: unknown }).action === 'run_cells'
  );
}

/** Queue the code cells `cell_ids` for execution, in order; their ids. */
export function runCells(panel: NotebookPanel, data: unknown): JSONObject {
  const ids = (data as { cell_ids?: unknown }).cell_ids;
  if (!Array.isArray(ids) || ids.length === 0 || !ids.every(id => typeof id === 'string')) {
    throw new ProtocolError('run_cells needs a non-empty list of string "cell_ids"');
  }
  const cells = ids.map(id => {
    const cell = panel.content.widgets.find(widget => widget.model.id === id);
    if (!cell) {
      throw new ProtocolError(`no cell with id ${id} in ${panel.context.path}`);
    }
    if (!(cell instanceof CodeCell)) {
      throw new ProtocolError(`cell ${id} is not a code cell`);
    }
    return cell;
  });
  for (const cell of cells) {
    void CodeCell.execute(cell, panel.sessionContext);
  }
  return { action: 'running', cell_ids: ids as string[] };
}
