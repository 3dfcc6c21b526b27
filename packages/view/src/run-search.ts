import type { DetailedExecutionStatus } from '@loom/event-runtime';
import type { RunSummary } from './run-summary.js';

/** What a runs page is sorted by: the time of the run's last status change, or its start. */
export type RunSort = 'updated' | 'created';

/** The direction of a runs page: `desc` (newest first, the default) or `asc`. */
export type RunOrder = 'asc' | 'desc';

/**
 * What a suspended run waits for, as the execution index records it in the write that suspends
 * it (ADR 0062): `timer` (a sleep, or a wait's timeout or expiry), `signal` (a plain signal),
 * `approval` and `question` (an agent run's, or a flow's wait labelled so), `child` (a child
 * run's end). A run waiting for several matches each: a signal with a timeout is found by
 * `signal` and by `timer`. `input` is any of signal, approval, question or child (deprecated:
 * say which). A run suspended by a writer older than schema version 14 (SQLite 13) has only its
 * wake time: `timer` finds it when it has one, `input` when it has none.
 */
export type RunWaiting = 'timer' | 'signal' | 'approval' | 'question' | 'child' | 'input';

/** Every {@link RunWaiting} a search takes, in the order the dashboard offers them. */
export const runWaitings = [
  'timer',
  'signal',
  'approval',
  'question',
  'child',
  'input',
] as const satisfies readonly RunWaiting[];

/** Ways of a run that `view.runCounts` counts (the statuses the runs page shows). */
export const runCountStatuses = [
  'running',
  'suspended',
  'completed',
  'failed',
  'cancelled',
  'continued',
] as const;

/** Most runs on one page of `view.searchRuns` (the dashboard asks for 50). */
export const runSearchLimitMax = 500;

/** Default page size of `view.searchRuns`. */
export const runSearchLimitDefault = 50;

/** Longest id prefix, flow or version a search takes (an execution id is at most this long). */
export const runSearchTextMax = 512;

/**
 * A search over the execution index: every filter given must match. Paged by keyset (`after` or
 * `before`, never an offset), so every page reads only its own rows.
 */
export interface RunSearch {
  /** Runs whose id starts with this (case-sensitive). */
  idPrefix?: string;
  /** One flow (an agent run's flow is `agent:<name>`). */
  flow?: string;
  /** One flow version. */
  version?: string;
  /** `running`, `suspended`, `settled`, or one way of ending (`completed`, `failed`, …). */
  status?: DetailedExecutionStatus;
  /** Only suspended runs that wait for this (see {@link RunWaiting}). */
  waiting?: RunWaiting;
  /** Runs whose status last changed at or after this instant (epoch ms, inclusive). */
  updatedFromMs?: number;
  /** Runs whose status last changed before this instant (epoch ms, exclusive). */
  updatedBeforeMs?: number;
  /** Default `updated`. */
  sort?: RunSort;
  /** Default `desc`: the newest first. */
  order?: RunOrder;
  /** 1 to {@link runSearchLimitMax}; default {@link runSearchLimitDefault}. */
  limit?: number;
  /** A page's `nextCursor`: the page after it. */
  after?: string;
  /** A page's `prevCursor`: the page before it. */
  before?: string;
}

/** One page of `view.searchRuns`, in the order asked for. */
export interface RunSearchPage {
  runs: RunSummary[];
  /** Pass as `after` for the next page; null when this page is the last. */
  nextCursor: string | null;
  /** Pass as `before` for the previous page; null when this page is the first. */
  prevCursor: string | null;
}

/** How many runs match a search's filters (its status and cursor aside), per status. */
export type RunCounts = Record<(typeof runCountStatuses)[number], number> & { total: number };
