/**
 * The open notebook as the user sees it, for the kernel side (`get_cells`).
 *
 * The server reads a notebook from disk, which lags behind the open document:
 * a cell typed and run but not yet saved is not there. The panel asks for the
 * live cells when a session starts, so `%agent fix` and `edit_cell` name cells
 * that exist now. Outputs are reduced to the short text the agent's context
 * shows (an image is named by its MIME type), so the reply stays small.
 */
import { NotebookPanel } from '@jupyterlab/notebook';
import { JSONObject } from '@lumino/coreutils';

/** Characters of one output's text sent at most (a traceback is cut in the middle). */
const OUTPUT_CHARS = 8000;

function text(value: unknown): string {
  if (Array.isArray(value)) {
    return value.map(String).join('');
  }
  return typeof value === 'string' ? value : '';
}

function bounded(value: string): string {
  if (value.length <= OUTPUT_CHARS) {
    return value;
  }
  const half = OUTPUT_CHARS / 2;
  return `${value.slice(0, half)}\n… (${value.length - OUTPUT_CHARS} characters left out) …\n${value.slice(-half)}`;
}

/** One nbformat output as `{output_type, text}`. */
function outputText(output: Record<string, unknown>): JSONObject {
  const kind = String(output.output_type ?? '');
  let shown = '';
  if (kind === 'stream') {
    shown = text(output.text);
  } else if (kind === 'error') {
    const trace = Array.isArray(output.traceback) ? output.traceback.map(String).join('\n') : '';
    shown = `${String(output.ename ?? '')}: ${String(output.evalue ?? '')}\n${trace}`;
  } else if (kind === 'execute_result' || kind === 'display_data') {
    const data = (output.data ?? {}) as Record<string, unknown>;
    shown = 'text/plain' in data ? text(data['text/plain']) : `[${Object.keys(data).sort().join(', ')}]`;
  }
  return { output_type: kind, text: bounded(shown) };
}

/** The notebook's cells, in order: id, type, source, execution count and outputs. */
export function liveCells(panel: NotebookPanel): JSONObject[] {
  const shared = panel.content.model?.sharedModel;
  if (!shared) {
    return [];
  }
  return shared.cells.map(cell => {
    const entry: JSONObject = {
      id: cell.id,
      cell_type: cell.cell_type,
      source: cell.getSource()
    };
    if (cell.cell_type === 'code') {
      const json = cell.toJSON() as Record<string, unknown>;
      entry.execution_count = (json.execution_count as number | null) ?? null;
      const outputs = (json.outputs ?? []) as Record<string, unknown>[];
      entry.outputs = outputs.map(outputText);
    }
    return entry;
  });
}
