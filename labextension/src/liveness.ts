/**
 * Which ipywidgets a notebook's kernel holds right now.
 *
 * A saved notebook keeps a reference to each widget, not the widget: once the kernel that
 * made it is gone (restarted, shut down, the notebook reopened with a new kernel) the
 * reference points at nothing. The project's outputs and side panels ask this tracker
 * whether their widget is still alive, to show the static summary and a Reattach button
 * instead of a dead view. The kernel is the truth: a widget is a `jupyter.widget` comm,
 * so the set is the kernel's `comm_info` answer, kept current from the comm_open and
 * comm_close messages it broadcasts; a restart or a new kernel empties it.
 */
import { ISessionContext } from '@jupyterlab/apputils';
import { Kernel, KernelMessage } from '@jupyterlab/services';
import { ISignal, Signal } from '@lumino/signaling';

/** The comm target of ipywidgets models. */
export const WIDGET_TARGET = 'jupyter.widget';

/** How long to wait for the kernel's comm list before calling unknown widgets gone (ms). */
const ANSWER_WAIT_MS = 10_000;

/** The live widget models (comm ids) of one notebook's kernel. */
export class LiveWidgets {
  constructor(context: ISessionContext) {
    context.kernelChanged.connect((_, change) => this.watch(change.newValue ?? null), this);
    context.statusChanged.connect((_, status) => {
      if (status === 'restarting' || status === 'dead' || status === 'autorestarting') {
        this.reset(new Set());
      }
    }, this);
    void context.ready.then(() => this.watch(context.session?.kernel ?? null));
  }

  /** Emitted whenever the set may have changed (a widget came or went, a restart). */
  get changed(): ISignal<this, void> {
    return this._changed;
  }

  /** Whether the kernel holds widget `modelId` now; undefined while that is not known. */
  has(modelId: string): boolean | undefined {
    return this._ids === null ? undefined : this._ids.has(modelId);
  }

  /** Resolves once the set is known (or the kernel did not answer in time: then empty). */
  async known(): Promise<void> {
    if (this._ids !== null) {
      return;
    }
    await new Promise<void>(resolve => {
      const timer = window.setTimeout(() => {
        if (this._ids === null) {
          this.reset(new Set());
        }
      }, ANSWER_WAIT_MS);
      const done = (): void => {
        if (this._ids !== null) {
          window.clearTimeout(timer);
          this._changed.disconnect(done);
          resolve();
        }
      };
      this._changed.connect(done);
    });
  }

  private reset(ids: Set<string> | null): void {
    this._ids = ids;
    this._changed.emit();
  }

  private watch(kernel: Kernel.IKernelConnection | null): void {
    if (this._kernel === kernel && kernel !== null) {
      return;
    }
    this._kernel?.iopubMessage.disconnect(this.onIOPub, this);
    this._kernel = kernel;
    if (kernel === null) {
      this.reset(new Set());
      return;
    }
    this._seen = new Set();
    this._closed = new Set();
    this._ids = null;
    kernel.iopubMessage.connect(this.onIOPub, this);
    void kernel
      .requestCommInfo({ target_name: WIDGET_TARGET })
      .then(reply => {
        if (this._kernel !== kernel || reply.content.status !== 'ok') {
          return;
        }
        const ids = new Set([...Object.keys(reply.content.comms), ...this._seen]);
        this._closed.forEach(id => ids.delete(id));
        this.reset(ids);
      })
      .catch(() => {
        if (this._kernel === kernel) {
          this.reset(new Set());
        }
      });
  }

  private onIOPub(_: Kernel.IKernelConnection, msg: KernelMessage.IIOPubMessage): void {
    if (KernelMessage.isCommOpenMsg(msg) && msg.content.target_name === WIDGET_TARGET) {
      this._seen.add(msg.content.comm_id);
      this._closed.delete(msg.content.comm_id);
      if (this._ids !== null) {
        this._ids.add(msg.content.comm_id);
        this._changed.emit();
      }
    } else if (KernelMessage.isCommCloseMsg(msg)) {
      this._closed.add(msg.content.comm_id);
      if (this._ids?.delete(msg.content.comm_id)) {
        this._changed.emit();
      }
    }
  }

  private _ids: Set<string> | null = null;
  private _seen = new Set<string>();
  private _closed = new Set<string>();
  private _kernel: Kernel.IKernelConnection | null = null;
  private _changed = new Signal<this, void>(this);
}

const trackers = new WeakMap<ISessionContext, LiveWidgets>();

/** The one tracker of `context` (made on first use). */
export function liveWidgets(context: ISessionContext): LiveWidgets {
  let tracker = trackers.get(context);
  if (!tracker) {
    tracker = new LiveWidgets(context);
    trackers.set(context, tracker);
  }
  return tracker;
}
