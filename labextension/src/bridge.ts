/**
 * The notebook end of the "codeagent" comm.
 *
 * A kernel-side ipywidget cannot edit the notebook document: it only sees its
 * own kernel. So the Python panel opens a comm to this target and asks for
 * cells to be inserted; this module does the edit on the notebook model (the
 * same model the user edits, so undo, saving and collaboration behave as for
 * any other edit) and replies with the ids of the new cells.
 */
import { ICodeCellModel } from '@jupyterlab/cells';
import { NotebookPanel } from '@jupyterlab/notebook';
import { Kernel, KernelMessage } from '@jupyterlab/services';
import { YCodeCell } from '@jupyter/ydoc';
import { JSONObject, PartialJSONValue } from '@lumino/coreutils';

import { liveCells } from './livecells';
import {
  COMM_TARGET,
  IInsertCellsRequest,
  IReplaceCellRequest,
  ProtocolError,
  VERSION,
  parseRequest
} from './protocol';
import { isRunCells, runCells } from './run';

const connected = new WeakSet<NotebookPanel>();

/**
 * Register the comm target on the kernel of `panel`, now and after every kernel change.
 *
 * Safe to call more than once for the same panel. A restart keeps the kernel
 * connection (and its comm targets), so only a kernel change needs re-registering.
 */
export function connectNotebook(panel: NotebookPanel): void {
  if (connected.has(panel)) {
    return;
  }
  connected.add(panel);
  const target = (comm: Kernel.IComm, msg: KernelMessage.ICommOpenMsg): void => {
    const originCellId = findOriginCellId(panel, msg.parent_header);
    const handle = (data: unknown): void => {
      comm.send(respond(panel, data, originCellId));
    };
    comm.onMsg = (message: KernelMessage.ICommMsgMsg) => handle(message.content.data);
    const openData = msg.content.data;
    if (openData && typeof openData === 'object' && 'action' in openData) {
      handle(openData);
    }
  };
  const register = (kernel: Kernel.IKernelConnection | null | undefined): void => {
    kernel?.registerCommTarget(COMM_TARGET, target);
  };
  register(panel.sessionContext.session?.kernel);
  panel.sessionContext.kernelChanged.connect((_, change) => {
    change.oldValue?.removeCommTarget(COMM_TARGET, target);
    register(change.newValue);
  });
}

/**
 * The id of the cell whose execution opened the comm, if it is still in the notebook.
 *
 * The comm_open message is a child of the execute_request of that cell; the
 * cell's output area still holds the future of that request.
 */
function findOriginCellId(
  panel: NotebookPanel,
  parent: KernelMessage.IHeader | Record<string, never>
): string | null {
  const parentId = 'msg_id' in parent ? parent.msg_id : undefined;
  if (!parentId) {
    return null;
  }
  for (const cell of panel.content.widgets) {
    if (cell.model.type !== 'code') {
      continue;
    }
    const future = (cell as unknown as { outputArea?: { future?: Kernel.IFuture<any, any> } })
      .outputArea?.future;
    if (future && future.msg.header.msg_id === parentId) {
      return (cell.model as ICodeCellModel).id;
    }
  }
  return null;
}

/** Answer one message; never throws, so the kernel always gets a reply. */
function respond(panel: NotebookPanel, data: unknown, originCellId: string | null): JSONObject {
  const rawId = (data as { request_id?: unknown } | null)?.request_id;
  const echo: JSONObject = typeof rawId === 'string' ? { request_id: rawId } : {};
  try {
    if (isRunCells(data)) {
      return { ...runCells(panel, data), ...echo };
    }
    const request = parseRequest(data);
    if (request.action === 'ping') {
      return { action: 'pong', version: VERSION, ...echo };
    }
    if (request.action === 'replace_cell') {
      return { action: 'replaced', cell_ids: [replaceCell(panel, request)], ...echo };
    }
    if (request.action === 'get_cells') {
      return { action: 'cells', path: panel.context.path, cells: liveCells(panel), ...echo };
    }
    const cellIds = insertCells(panel, request, originCellId);
    return { action: 'inserted', count: cellIds.length, cell_ids: cellIds, ...echo };
  } catch (error) {
    const message = error instanceof ProtocolError ? error.message : `failed: ${String(error)}`;
    return { action: 'error', message, ...echo };
  }
}

/**
 * Insert the requested cells, in order, below the anchor cell; return their ids.
 *
 * The anchor is `after_cell_id` when given (an unknown id is an error: the
 * panel's cell was probably deleted, and guessing a place would surprise the
 * user), else the cell that opened the comm, else the active cell.
 * Cells are inserted unexecuted: the user runs them in their own kernel.
 */
function insertCells(
  panel: NotebookPanel,
  request: IInsertCellsRequest,
  originCellId: string | null
): string[] {
  const notebook = panel.content;
  const model = notebook.model;
  if (!model) {
    throw new ProtocolError('the notebook is not loaded');
  }
  const shared = model.sharedModel;
  const indexOf = (id: string): number => shared.cells.findIndex(cell => cell.id === id);
  let anchor = -1;
  if (request.after_cell_id !== null) {
    anchor = indexOf(request.after_cell_id);
    if (anchor === -1) {
      throw new ProtocolError(`no cell with id ${request.after_cell_id} in ${panel.context.path}`);
    }
  } else if (originCellId !== null) {
    anchor = indexOf(originCellId);
  }
  if (anchor === -1) {
    anchor = notebook.activeCellIndex >= 0 ? notebook.activeCellIndex : shared.cells.length - 1;
  }
  const created = shared.insertCells(
    anchor + 1,
    request.cells.map(cell =>
      cell.cell_type === 'code'
        ? {
            cell_type: 'code',
            source: cell.source,
            metadata: cell.metadata as JSONObject,
            outputs: [],
            execution_count: null
          }
        : { cell_type: cell.cell_type, source: cell.source, metadata: cell.metadata as JSONObject }
    )
  );
  return created.map(cell => cell.id);
}

/**
 * Replace the source of the cell `cell_id` (an accepted edit): its outputs and
 * execution count are cleared (they belonged to the old source) and the
 * provenance is merged into its metadata. An unknown id is an error.
 */
function replaceCell(panel: NotebookPanel, request: IReplaceCellRequest): string {
  const shared = panel.content.model?.sharedModel;
  if (!shared) {
    throw new ProtocolError('the notebook is not loaded');
  }
  const cell = shared.cells.find(c => c.id === request.cell_id);
  if (!cell) {
    throw new ProtocolError(`no cell with id ${request.cell_id} in ${panel.context.path}`);
  }
  if (request.expected_source !== undefined && cell.getSource() !== request.expected_source) {
    throw new ProtocolError(`cell ${request.cell_id} changed since the agent read it`);
  }
  shared.transact(() => {
    cell.setSource(request.source);
    if (cell.cell_type === 'code') {
      const code = cell as YCodeCell;
      code.setOutputs([]);
      code.execution_count = null;
    }
    for (const [key, value] of Object.entries(request.metadata)) {
      cell.setMetadata(key, value as PartialJSONValue);
    }
  });
  return cell.id;
}
