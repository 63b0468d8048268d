/**
 * The messages exchanged over the "codeagent" comm, and their validation.
 *
 * The kernel side (the Python panel) is the only client. Everything it sends
 * is checked here so that a malformed message produces a one-line error reply
 * the panel can show, instead of a half-applied edit of the user's notebook.
 */

/** Version of this extension, reported in the reply to `ping`. */
export const VERSION = '0.1.0';

/** The comm target the Python side opens. */
export const COMM_TARGET = 'codeagent';

/** Cell types the panel may ask for; agent cells are code, notes may be markdown. */
const CELL_TYPES = ['code', 'markdown'] as const;

export type CellType = (typeof CELL_TYPES)[number];

/** One cell to insert, as sent by the kernel. */
export interface ICellSpec {
  cell_type: CellType;
  source: string;
  metadata: Record<string, unknown>;
}

/** Insert cells below an anchor cell; `after_cell_id: null` means "the panel's cell". */
export interface IInsertCellsRequest {
  action: 'insert_cells';
  cells: ICellSpec[];
  after_cell_id: string | null;
  request_id?: string;
}

/** Ask whether the labextension is present (the panel falls back when nobody answers). */
export interface IPingRequest {
  action: 'ping';
  request_id?: string;
}

/** Replace one cell's source (an accepted `edit_cell`): outputs cleared, metadata merged. */
export interface IReplaceCellRequest {
  action: 'replace_cell';
  cell_id: string;
  source: string;
  metadata: Record<string, unknown>;
  /** The source the proposal was made against: a cell changed since is not replaced. */
  expected_source?: string;
  request_id?: string;
}

/** Read the open notebook as the user sees it now (saved or not): path and cells. */
export interface IGetCellsRequest {
  action: 'get_cells';
  request_id?: string;
}

export type Request = IInsertCellsRequest | IPingRequest | IReplaceCellRequest | IGetCellsRequest;

/** Raised for a message that cannot be acted on; its text is sent back verbatim. */
export class ProtocolError extends Error {}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function parseCell(raw: unknown, index: number): ICellSpec {
  if (!isObject(raw)) {
    throw new ProtocolError(`cells[${index}] must be an object`);
  }
  const source = raw.source;
  if (typeof source !== 'string') {
    throw new ProtocolError(`cells[${index}].source must be a string`);
  }
  const metadata = raw.metadata ?? {};
  if (!isObject(metadata)) {
    throw new ProtocolError(`cells[${index}].metadata must be an object`);
  }
  const cellType = raw.cell_type ?? 'code';
  if (!CELL_TYPES.includes(cellType as CellType)) {
    throw new ProtocolError(
      `cells[${index}].cell_type must be one of ${CELL_TYPES.join(', ')}, got ${String(cellType)}`
    );
  }
  return { cell_type: cellType as CellType, source, metadata };
}

/**
 * Turn comm data into a typed request, or throw a `ProtocolError` saying what is wrong.
 */
export function parseRequest(data: unknown): Request {
  if (!isObject(data)) {
    throw new ProtocolError('message data must be a JSON object');
  }
  const requestId = data.request_id;
  if (requestId !== undefined && typeof requestId !== 'string') {
    throw new ProtocolError('request_id must be a string');
  }
  const base = requestId === undefined ? {} : { request_id: requestId };
  switch (data.action) {
    case 'ping':
      return { action: 'ping', ...base };
    case 'get_cells':
      return { action: 'get_cells', ...base };
    case 'insert_cells': {
      if (!Array.isArray(data.cells) || data.cells.length === 0) {
        throw new ProtocolError('insert_cells needs a non-empty list "cells"');
      }
      const after = data.after_cell_id ?? null;
      if (after !== null && typeof after !== 'string') {
        throw new ProtocolError('after_cell_id must be a string or null');
      }
      return {
        action: 'insert_cells',
        cells: data.cells.map(parseCell),
        after_cell_id: after,
        ...base
      };
    }
    case 'replace_cell': {
      if (typeof data.cell_id !== 'string' || typeof data.source !== 'string') {
        throw new ProtocolError('replace_cell needs a string "cell_id" and a string "source"');
      }
      const metadata = data.metadata ?? {};
      if (!isObject(metadata)) {
        throw new ProtocolError('replace_cell metadata must be an object');
      }
      const expected = data.expected_source;
      if (expected !== undefined && typeof expected !== 'string') {
        throw new ProtocolError('replace_cell expected_source must be a string');
      }
      return {
        action: 'replace_cell',
        cell_id: data.cell_id,
        source: data.source,
        metadata,
        ...(expected === undefined ? {} : { expected_source: expected }),
        ...base
      };
    }
    default:
      throw new ProtocolError(
        `unknown action ${JSON.stringify(data.action)}; expected "insert_cells", ` +
          '"replace_cell", "get_cells" or "ping"'
      );
  }
}
