import type { AppendGuard, EventEnvelope, StoredEvent } from '../envelope.js';
import { ErrorCode, LoomError } from '../errors.js';
import { isTransactional, type TransactionalEventStore } from '../event-store.js';
import { CountingEventStore } from './counting-event-store.js';

/** Which calls a {@link FlakyEventStore} fails, and how. */
export interface FlakyPlan {
  /**
   * Appends to fail with `STORE_UNAVAILABLE`. `before`: nothing is written (the connection died
   * first); `after`: the events are written and then the acknowledgement is lost. Only appends
   * from `fromSequence` on, and only to `executionId` when it is given.
   */
  appends?: {
    count: number;
    mode: 'before' | 'after';
    fromSequence?: number;
    executionId?: string;
  };
  /** `transact` calls to fail with `STORE_UNAVAILABLE` before anything is written. */
  transactions?: number;
  /** `read` calls to fail with `STORE_UNAVAILABLE` (a store that is still down). */
  reads?: number;
  /**
   * `claimDue` calls that claim (commit) and then fail with `STORE_UNAVAILABLE`: the
   * acknowledgement is lost, as when the primary fails over after the commit.
   */
  claimsAfter?: number;
  /** The code the failures carry: a lost connection (default) or a lock timeout. */
  code?: 'STORE_UNAVAILABLE' | 'STORE_BUSY';
}

/**
 * Wraps a store and fails the calls a {@link FlakyPlan} names with `STORE_UNAVAILABLE` (or
 * `STORE_BUSY`), as a
 * store whose connection drops would: the runtime's handling of transient failures is tested
 * the same way on every backend. Counts what it failed in {@link FlakyEventStore.failed}. It
 * offers no `appendBatch`, so every append meets the plan.
 */
export class FlakyEventStore extends CountingEventStore {
  private plan: Required<Pick<FlakyPlan, 'transactions' | 'reads' | 'claimsAfter' | 'code'>> & {
    appends: Required<Omit<NonNullable<FlakyPlan['appends']>, 'executionId'>> & {
      executionId?: string;
    };
  } = {
    appends: { count: 0, mode: 'before', fromSequence: 0 },
    transactions: 0,
    reads: 0,
    claimsAfter: 0,
    code: ErrorCode.STORE_UNAVAILABLE,
  };
  /** Calls failed so far, by kind. */
  readonly failed = { appends: 0, transactions: 0, reads: 0, claims: 0 };
  declare readonly transact: TransactionalEventStore['transact'] | undefined;

  constructor(inner: ConstructorParameters<typeof CountingEventStore>[0]) {
    // No `appendBatch`: every append passes the plan (a runtime's group commit then appends one
    // execution at a time through it).
    super(inner, { appendBatch: false });
    if (isTransactional(inner)) {
      this.transact = (work, envelopes, guard) => {
        this.counts.transactions += 1;
        if (this.plan.transactions > 0) {
          this.plan.transactions -= 1;
          this.failed.transactions += 1;
          return Promise.reject(this.failure('transact'));
        }
        return inner.transact(work, envelopes, guard);
      };
    }
  }

  /** Arms the next failures (replacing what was left of the previous plan). */
  failNext(plan: FlakyPlan): void {
    this.plan = {
      appends: { fromSequence: 0, ...(plan.appends ?? { count: 0, mode: 'before' }) },
      transactions: plan.transactions ?? 0,
      reads: plan.reads ?? 0,
      claimsAfter: plan.claimsAfter ?? 0,
      code: plan.code ?? ErrorCode.STORE_UNAVAILABLE,
    };
  }

  override async append(
    envelopes: readonly EventEnvelope[],
    guard?: AppendGuard,
  ): Promise<StoredEvent[]> {
    const { appends } = this.plan;
    const first = envelopes[0];
    const armed =
      appends.count > 0 &&
      (first?.sequence ?? 0) >= appends.fromSequence &&
      (appends.executionId === undefined || first?.executionId === appends.executionId);
    if (!armed) return super.append(envelopes, guard);
    appends.count -= 1;
    this.failed.appends += 1;
    if (appends.mode === 'after') await super.append(envelopes, guard);
    throw this.failure('append');
  }

  override async claimDue(...args: Parameters<CountingEventStore['claimDue']>) {
    const claimed = await super.claimDue(...args);
    if (this.plan.claimsAfter === 0) return claimed;
    this.plan.claimsAfter -= 1;
    this.failed.claims += 1;
    throw this.failure('claimDue');
  }

  override read(...args: Parameters<CountingEventStore['read']>) {
    if (this.plan.reads > 0) {
      this.plan.reads -= 1;
      this.failed.reads += 1;
      return Promise.reject(this.failure('read'));
    }
    return super.read(...args);
  }

  private failure(operation: string): LoomError {
    const what =
      this.plan.code === ErrorCode.STORE_BUSY
        ? 'the database stayed locked past its timeout'
        : 'the connection was lost';
    return new LoomError(
      this.plan.code,
      `${operation} failed: ${what} (injected by FlakyEventStore)`,
      { operation },
    );
  }
}
