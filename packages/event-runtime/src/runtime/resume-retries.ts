import { ErrorCode, isLoomError, LoomError } from '../errors.js';
import type { KernelContext } from './kernel-context.js';
import { isTransientStoreError, retryDelayMs } from './store-retry.js';

/**
 * Executions whose driver stopped on a transient store failure, handed back to a resume from the
 * log after a backoff on the injected clock. The log is the truth: an append whose answer was
 * lost may have committed, and the resume sees it; the fence makes the resume safe even if the
 * failed append is still in flight somewhere.
 */
export class ResumeRetries {
  private readonly pending = new Map<string, () => void>();
  private stopped = false;

  constructor(private readonly kernel: KernelContext) {}

  /** Executions waiting for their next resume attempt. */
  get size(): number {
    return this.pending.size;
  }

  /** Resume `executionId` after the backoff of `attempt` (one pending retry per execution). */
  schedule(executionId: string, attempt = 0): void {
    if (this.stopped || this.pending.has(executionId)) return;
    this.kernel.storeRetried.add(executionId);
    const { clock } = this.kernel;
    const settings = this.kernel.settings.storeRetry;
    if (attempt >= settings.storeRetriesMax) {
      this.kernel.report(
        new LoomError(
          ErrorCode.STORE_UNAVAILABLE,
          `gave up resuming execution ${executionId} after ${attempt} attempts while the store ` +
            'was unavailable (storeRetriesMax): it stays running in the log; recover() (or ' +
            'recoverEveryMs) resumes it once the store is back',
          { executionId, limit: 'storeRetriesMax' },
        ),
      );
      return;
    }
    const cancel = clock.setTimer(
      () => {
        this.pending.delete(executionId);
        if (this.stopped) return;
        this.kernel.executions.resume(executionId).catch((error: unknown) => {
          if (isTransientStoreError(error)) this.schedule(executionId, attempt + 1);
          // Never durable (its first append was lost): nothing to resume; start() said so.
          else if (!isLoomError(error, ErrorCode.EXECUTION_NOT_FOUND)) this.kernel.report(error);
        });
      },
      retryDelayMs(settings, attempt),
    );
    this.pending.set(executionId, cancel);
  }

  /** Cancels the pending retry of `executionId`; true if there was one (the caller resumes it). */
  take(executionId: string): boolean {
    const cancel = this.pending.get(executionId);
    if (cancel === undefined) return false;
    cancel();
    this.pending.delete(executionId);
    return true;
  }

  /** Cancels every pending retry; later schedules are ignored (the runtime is shutting down). */
  stop(): void {
    this.stopped = true;
    for (const cancel of this.pending.values()) cancel();
    this.pending.clear();
  }
}
