/**
 * In-process "something was appended" fan-out, keyed by execution. Global watchers hear every
 * append; an execution's watchers hear only its own.
 */
export class AppendSignal {
  private readonly global = new Set<() => void>();
  private readonly byExecution = new Map<string, Set<() => void>>();

  /** Calls `wake` on every append (no `executionId`) or on the execution's. Returns an unwatch. */
  watch(executionId: string | undefined, wake: () => void): () => void {
    if (executionId === undefined) {
      this.global.add(wake);
      return () => this.global.delete(wake);
    }
    let set = this.byExecution.get(executionId);
    if (set === undefined) {
      set = new Set();
      this.byExecution.set(executionId, set);
    }
    set.add(wake);
    return () => {
      set.delete(wake);
      if (set.size === 0) this.byExecution.delete(executionId);
    };
  }

  /** True when anyone at all is watching (lets a backend skip work when nobody is). */
  get watched(): boolean {
    return this.global.size > 0 || this.byExecution.size > 0;
  }

  /** True when someone watches every append (a global subscription). */
  get watchedGlobally(): boolean {
    return this.global.size > 0;
  }

  /** True when someone watches this execution in particular. */
  watching(executionId: string): boolean {
    return this.byExecution.has(executionId);
  }

  /** Wakes the global watchers and the execution's: call it after an append is durable. */
  emit(executionId: string): void {
    for (const wake of this.global) wake();
    const set = this.byExecution.get(executionId);
    if (set !== undefined) for (const wake of set) wake();
  }

  /** Wakes the global watchers only (their reads may find what an earlier one could not). */
  emitGlobal(): void {
    for (const wake of this.global) wake();
  }

  /** Wakes every watcher (after appends whose executions are not known one by one). */
  emitAll(): void {
    for (const wake of this.global) wake();
    for (const set of this.byExecution.values()) for (const wake of set) wake();
  }
}
