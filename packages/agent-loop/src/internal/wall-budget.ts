import type { TurnContext } from './flow-host.js';

/** The longest a step's timeout may be (the timer limit of `@loom/middleware`'s timeout). */
const stepTimeoutMsMax = 2_147_483_647;

/**
 * The wall-time budget of a run (`limits.wallTimeMsMax`). Every decision is taken on times the
 * log records (the run's start and each turn's start are `now` values, an approval's and a
 * question's time are in their records), so a replay decides what the first run decided.
 */
export class WallBudget {
  private constructor(
    readonly startedAtMs: number,
    readonly limitMs: number,
  ) {}

  /**
   * Records the run's start (`ctx.now()`, the run's first record) for an agent with the limit;
   * undefined without it, and nothing is recorded, so the logs of other agents do not change.
   */
  static start(ctx: TurnContext, limitMs: number): WallBudget | undefined {
    return limitMs === Number.POSITIVE_INFINITY ? undefined : new WallBudget(ctx.now(), limitMs);
  }

  get deadlineMs(): number {
    return this.startedAtMs + this.limitMs;
  }

  /** The time a turn starts: the run's start for the first turn, else a recorded `now`. */
  turnStart(ctx: TurnContext, turn: number): number {
    return turn === 1 ? this.startedAtMs : ctx.now();
  }

  spentAt(nowMs: number): boolean {
    return nowMs >= this.deadlineMs;
  }

  /** The timeout of a step that starts at `nowMs` (a model call): what is left, at least 1 ms. */
  stepTimeoutMs(nowMs: number): number {
    return Math.min(stepTimeoutMsMax, Math.max(1, this.deadlineMs - nowMs));
  }

  get error(): string {
    return `the run reached its wall-time limit of ${this.limitMs} ms`;
  }
}

/**
 * How long a wait that starts at `sinceMs` may last: up to `expiresAtMs` (an approval's expiry;
 * null: none) and up to the budget's deadline, whichever is first. `budgetFirst`: a timeout of
 * this wait means the budget is spent (`limit_time`), not that the approval expired.
 */
export function waitBound(
  budget: WallBudget | undefined,
  sinceMs: number,
  expiresAtMs: number | null,
): { timeoutMs: number | undefined; budgetFirst: boolean } {
  const expiry = expiresAtMs ?? Number.POSITIVE_INFINITY;
  const deadline = budget?.deadlineMs ?? Number.POSITIVE_INFINITY;
  const until = Math.min(expiry, deadline);
  return {
    timeoutMs: until === Number.POSITIVE_INFINITY ? undefined : Math.max(0, until - sinceMs),
    budgetFirst: deadline <= expiry,
  };
}
