/**
 * What a runtime tells its observers, by event name, with the payload each listener receives
 * (modelled on graphile-worker's `WorkerEventMap`). Every payload names the node it happened on.
 *
 * - `lease:acquired`: this node took the lease of an execution (a start, a resume, recovery).
 * - `lease:renewed`: this node renewed the lease of an execution it drives (once per renewal
 *   round per execution).
 * - `lease:lost`: the lease of an execution this node was driving is gone (another node took it,
 *   or it expired while the store was unreachable); the execution stops here at its next barrier.
 * - `execution:resumed`: this node resumed an execution from its log: `cause` says why
 *   (`resume()` was called, its timer or a signal came due, recovery found it undriven).
 * - `execution:recovered`: `recover()` found an execution nobody drove and resumed it here.
 * - `timer:fired`: `wakeDue` claimed a suspended execution whose timer came due (or that got a
 *   signal); it is resumed next.
 * - `append:retried`: an execution's append failed with `STORE_BUSY` (the database was locked past
 *   its timeout: nothing of it was written) and is sent again after `attempt`'s backoff, with the
 *   same events: a result an effect returned is not lost to a lock.
 * - `node:claim_lost`: this node's claim on its id ended while it lives (`NODE_CLAIM_LOST`):
 *   others read it as dead; it takes no new work (starts wait, recovery rounds, timer polls and
 *   queue claims are skipped) until it claims the id again.
 * - `node:claimed`: this node holds its id again after a `node:claim_lost` (`attempts` claims
 *   it took).
 * - `store:error`: a background store call failed (a lease renewal, a snapshot, a timer poll, a
 *   recovery round). Nothing was lost: the next round tries again. Also reported to `onError`.
 */
export interface RuntimeEventMap {
  'lease:acquired': { nodeId: string; executionId: string };
  'lease:renewed': { nodeId: string; executionId: string };
  'lease:lost': { nodeId: string; executionId: string };
  'execution:resumed': {
    nodeId: string;
    executionId: string;
    cause: 'resume' | 'timer' | 'recovery';
  };
  'execution:recovered': { nodeId: string; executionId: string };
  'timer:fired': { nodeId: string; executionId: string };
  'node:claim_lost': { nodeId: string; error: unknown };
  'node:claimed': { nodeId: string; attempts: number };
  'store:error': { nodeId: string; error: unknown };
  'append:retried': { nodeId: string; executionId: string; attempt: number; error: unknown };
}

/** The name of an event of {@link RuntimeEventMap}. */
export type RuntimeEventName = keyof RuntimeEventMap;

/** A listener of event `E`. */
export type RuntimeEventListener<E extends RuntimeEventName> = (
  payload: RuntimeEventMap[E],
) => void;

/**
 * The runtime's typed event emitter (`runtime.events`). Listeners run synchronously, in the order
 * they were added; a listener that throws never disturbs the runtime or the other listeners: its
 * error goes to the runtime's `onError`.
 *
 * @example
 * const stop = runtime.events.on('lease:lost', (event) => console.warn('lost', event.executionId));
 * // …
 * stop();
 */
export class RuntimeEvents {
  private readonly listeners = new Map<RuntimeEventName, Set<(payload: never) => void>>();

  /** @param onListenerError where a throwing listener's error goes (the runtime's `onError`). */
  constructor(private readonly onListenerError: (error: unknown) => void) {}

  /** Calls `listener` on every `event` until the returned function (or `off`) removes it. */
  on<E extends RuntimeEventName>(event: E, listener: RuntimeEventListener<E>): () => void {
    let set = this.listeners.get(event);
    if (set === undefined) {
      set = new Set();
      this.listeners.set(event, set);
    }
    set.add(listener as (payload: never) => void);
    return () => this.off(event, listener);
  }

  /** Calls `listener` on the next `event` only. */
  once<E extends RuntimeEventName>(event: E, listener: RuntimeEventListener<E>): () => void {
    const stop = this.on(event, (payload) => {
      stop();
      listener(payload);
    });
    return stop;
  }

  /** Removes a listener added with `on` (nothing happens if it was not there). */
  off<E extends RuntimeEventName>(event: E, listener: RuntimeEventListener<E>): void {
    this.listeners.get(event)?.delete(listener as (payload: never) => void);
  }

  /** True when someone listens to `event` (so a caller can skip building its payload). */
  has(event: RuntimeEventName): boolean {
    return (this.listeners.get(event)?.size ?? 0) > 0;
  }

  /** Calls every listener of `event`; a throwing listener is reported, never rethrown. */
  emit<E extends RuntimeEventName>(event: E, payload: RuntimeEventMap[E]): void {
    const set = this.listeners.get(event);
    if (set === undefined || set.size === 0) return;
    for (const listener of [...set]) {
      try {
        (listener as RuntimeEventListener<E>)(payload);
      } catch (error) {
        try {
          this.onListenerError(error);
        } catch {
          // onError itself threw: the runtime's background work must go on regardless.
        }
      }
    }
  }
}
