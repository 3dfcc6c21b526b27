/** A queue item waiting to be claimed, as the queues panel shows it (`view.oldestWaiting`). */
export interface WaitingItem {
  readonly itemId: string;
  /** The flow it will run, and its version (null: unversioned). */
  readonly flow: string;
  readonly version: string | null;
  /** When it was enqueued (epoch ms, by the queue store's clock). */
  readonly enqueuedAtMs: number;
}
