/**
 * Reattach: open a session again in a notebook's kernel, from its snapshots on the server.
 *
 * The session id comes from a saved output or a dead panel's element, so it is treated as
 * data: it must look like a session id, and the server must know it for this user, before
 * a button offers it; it reaches the kernel only as a JSON (so Python) string literal.
 */
import { ISessionContext } from '@jupyterlab/apputils';
import { URLExt } from '@jupyterlab/coreutils';
import { Kernel, KernelMessage, ServerConnection } from '@jupyterlab/services';

/** What a session id looks like (the server makes 12 hex digits). */
const SESSION_ID = /^[A-Za-z0-9_-]{1,64}$/;

export function validSessionId(value: unknown): value is string {
  return typeof value === 'string' && SESSION_ID.test(value);
}

/** Whether the server still has session `id` for this user: 'yes', 'no' or 'unreachable'. */
export async function serverHas(id: string): Promise<'yes' | 'no' | 'unreachable'> {
  if (!validSessionId(id)) {
    return 'no';
  }
  const settings = ServerConnection.makeSettings();
  const url = URLExt.join(settings.baseUrl, 'codeagent/api/sessions', id);
  try {
    const response = await ServerConnection.makeRequest(url, { method: 'GET' }, settings);
    return response.ok ? 'yes' : response.status === 404 ? 'no' : 'unreachable';
  } catch {
    return 'unreachable';
  }
}

const LOAD =
  "_ip = get_ipython()\nif not any(n.split('.')[0] == 'codeagent_jupyter' for n in " +
  "_ip.extension_manager.loaded):\n    _ip.extension_manager.load_extension('codeagent_jupyter')\n";

/** Kernel code that shows session `id` in a new inline panel (in the running cell's output). */
export function inlineCode(id: string): string {
  return `${LOAD}_ip.run_line_magic('agent', '--attach ' + ${JSON.stringify(id)})\ndel _ip`;
}

/** Kernel code that opens session `id` in a new side panel. */
export function sideCode(id: string): string {
  return (
    `${LOAD}_ip.magics_manager.registry['AgentMagics'].open_side(${JSON.stringify(id)})\n` +
    'del _ip'
  );
}

/** The kernel of `context`, started (the notebook's own kernel) when there is none. */
export async function kernelOf(context: ISessionContext): Promise<Kernel.IKernelConnection> {
  await context.ready;
  if (!context.session?.kernel) {
    await context.startKernel();
    await context.ready;
  }
  const kernel = context.session?.kernel;
  if (!kernel) {
    throw new Error('the notebook has no kernel: choose one, then Reattach');
  }
  return kernel;
}

/** Run `code` quietly: no history, no prompt number; its outputs go to the future's owner. */
export function runQuiet(
  kernel: Kernel.IKernelConnection,
  code: string,
  metadata: Record<string, string> = {}
): Kernel.IShellFuture<KernelMessage.IExecuteRequestMsg, KernelMessage.IExecuteReplyMsg> {
  return kernel.requestExecute(
    { code, silent: false, store_history: false, stop_on_error: true },
    false, // kept after the reply: the panel updates its output when the replay ends
    metadata
  );
}
