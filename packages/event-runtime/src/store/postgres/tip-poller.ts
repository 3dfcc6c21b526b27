import type { CancelTimer, Clock } from '../../clock.js';

/** Most executions one tip statement names; more watched executions take more statements. */
export const tipPollIdsMax = 1_000;

/** What a {@link TipPoller} needs from its store. */
export interface TipPollerOptions {
  /**
   * One statement: the tip (newest sequence or position, as text) of each named execution that
   * has one. Executions without a row are simply absent.
   */
  readTips: (executionIds: string[]) => Promise<Map<string, string>>;
  /** How often the tips are read while anyone watches. */
  intervalMs: number;
  /** Arms the poll timer. */
  clock: Clock;
}

interface Watched {
  readonly wakes: Set<() => void>;
  /** The tip last read; undefined until the first read after the watch began. */
  tip: string | null | undefined;
}

/**
 * Wake-ups without LISTEN/NOTIFY (ADR 0057): while anyone watches, every `intervalMs` one
 * statement reads the tip of every watched execution, and the watchers of each execution whose
 * tip moved are woken; global watchers are woken on every tick (their own read, `readAll`, is
 * the poll: a per-execution tip cannot tell when a commit-ordered feed moved). A watch's first
 * read always wakes it, so a write that landed between the watcher's own read and the first
 * tip read is never missed. Writes of this process wake at once through {@link emit}.
 *
 * One poll at a time: a tick that comes while the previous statement is still out is skipped,
 * so a slow server is not sent a pile of polls. A failed poll is counted and retried on the
 * next tick (the watchers' own reads report the outage).
 */
export class TipPoller {
  private readonly global = new Set<() => void>();
  private readonly byExecution = new Map<string, Watched>();
  private stopTimer: CancelTimer | undefined;
  private polling = false;
  private closed = false;
  /** Tip statements sent. */
  statements = 0;
  /** Tip statements that failed. */
  failures = 0;

  constructor(private readonly options: TipPollerOptions) {}

  /** Calls `wake` when the execution's (or, when undefined, any) writes may have moved. */
  watch(executionId: string | undefined, wake: () => void): () => void {
    if (executionId === undefined) this.global.add(wake);
    else {
      let watched = this.byExecution.get(executionId);
      if (watched === undefined) {
        watched = { wakes: new Set(), tip: undefined };
        this.byExecution.set(executionId, watched);
      }
      watched.wakes.add(wake);
    }
    if (!this.closed)
      this.stopTimer ??= this.options.clock.setRepeating(
        () => this.tick(),
        this.options.intervalMs,
      );
    let unwatched = false;
    return () => {
      if (unwatched) return;
      unwatched = true;
      if (executionId === undefined) this.global.delete(wake);
      else {
        const watched = this.byExecution.get(executionId);
        watched?.wakes.delete(wake);
        if (watched?.wakes.size === 0) this.byExecution.delete(executionId);
      }
      if (this.global.size === 0 && this.byExecution.size === 0) this.stop();
    };
  }

  /** True when anyone watches. */
  get watched(): boolean {
    return this.global.size > 0 || this.byExecution.size > 0;
  }

  /** This process wrote to `executionId`: wake its watchers and the global ones now. */
  emit(executionId: string): void {
    for (const wake of [...this.global]) wake();
    const watched = this.byExecution.get(executionId);
    if (watched !== undefined) for (const wake of [...watched.wakes]) wake();
  }

  /** Stops polling; watchers are no longer woken. */
  close(): void {
    this.closed = true;
    this.stop();
  }

  private stop(): void {
    this.stopTimer?.();
    this.stopTimer = undefined;
  }

  private tick(): void {
    if (this.closed || this.polling) return;
    for (const wake of [...this.global]) wake();
    if (this.byExecution.size === 0) return;
    this.polling = true;
    void this.poll().finally(() => {
      this.polling = false;
    });
  }

  private async poll(): Promise<void> {
    const executionIds = [...this.byExecution.keys()];
    for (let start = 0; start < executionIds.length; start += tipPollIdsMax) {
      const chunk = executionIds.slice(start, start + tipPollIdsMax);
      let tips: Map<string, string>;
      try {
        this.statements++;
        tips = await this.options.readTips(chunk);
      } catch {
        this.failures++;
        return;
      }
      if (this.closed) return;
      for (const executionId of chunk) {
        const watched = this.byExecution.get(executionId);
        if (watched === undefined) continue;
        const tip = tips.get(executionId) ?? null;
        if (watched.tip === tip) continue;
        watched.tip = tip;
        for (const wake of [...watched.wakes]) wake();
      }
    }
  }
}
