import type { Approval, Question } from '@loom/agent-loop';
import type {
  Backend,
  DetailedExecutionStatus,
  ExecutionSummary,
  QueueStats,
  StoredEvent,
  StoredSignal,
  Subscription,
  VerifyResult,
} from '@loom/event-runtime';
import { Limits, type PruneReceipt, pruneReceiptLogId } from '@loom/event-runtime';
import { nextOccurrence } from '@loom/workflow-runtime/cron';
import { LoomError, ViewErrorCode } from './errors.js';
import { parseDbUrl } from './internal/db-url.js';
import { agentFlowPrefix, type FoldedRun, foldRun, signalsOf } from './internal/fold-run.js';
import { indexRow, runNotFound } from './internal/index-row.js';
import { openBackend } from './internal/open-backend.js';
import { type PageReader, storePageReader } from './internal/page-reader.js';
import { readInbox, readLog } from './internal/read-log.js';
import {
  encodeCursor,
  type IndexRowLite,
  runQueryOf,
  sortValueOf,
} from './internal/run-search-query.js';
import { waitingFor } from './internal/waiting-for.js';
import type { ProjectionDb } from './projection/projection-db.js';
import type { Projections } from './projection/projections.js';
import { projectionTables } from './projection/tables.js';
import type { RunDetail } from './run-detail.js';
import {
  type RunCounts,
  type RunSearch,
  type RunSearchPage,
  runCountStatuses,
} from './run-search.js';
import { runStatuses } from './run-statuses.js';
import type { RunSummary } from './run-summary.js';
import type { ScheduleSummary } from './schedule-summary.js';
import type { WaitingItem } from './waiting-item.js';

export { runStatuses } from './run-statuses.js';
export type { ScheduleSummary } from './schedule-summary.js';

/** Default page size of `view.runs()`: a screenful. */
export const runsPageDefault = 50;

/** Filters of `view.runs()`: every one given must match. */
export interface RunsFilter {
  status?: DetailedExecutionStatus;
  /** A flow name, or an agent run's `agent:<name>`. */
  flow?: string;
  /** 1 to `Limits.readLimitMax`. Default {@link runsPageDefault}. */
  limit?: number;
  /** The `nextCursor` of the previous page. */
  after?: string;
}

/** One page of runs, in id order. */
export interface RunsPage {
  runs: RunSummary[];
  /** Pass it as `after` for the next page; undefined when this page was the last. */
  nextCursor: string | undefined;
}

/** Progress of a paged read (`exportLog`, `headPosition`): events read so far, after each page. */
export type ReadProgress = (events: number) => void;

/** Progress of `view.verifyAll`: executions checked so far. */
export type VerifyProgress = (checked: number) => void;

/** What `view.verifyAll` found. */
export interface VerifyAllResult {
  checked: number;
  /** Every execution whose chain does not check out (empty when all do), the receipt log too. */
  broken: Extract<VerifyResult, { ok: false }>[];
  /**
   * The prune receipts (`loom.pruned`, ADR 0053), their chain checked like a run's: how many
   * there are and how many pruned runs they list with their last hashes.
   */
  receipts: { events: number; prunedRuns: number };
}

/** The flow name a schedule's executions run under (`@loom/workflow-runtime`'s cron chain). */
const scheduleFlowName = 'loom.cron.schedule';

/** What a schedule execution's input holds (see `CronScheduleInput` in `@loom/workflow-runtime`). */
interface ScheduleInput {
  name: string;
  expression: string;
  timezone: string;
  flow: string;
  version: string | null;
  lastFiredAtMs: number | null;
  lastRunId: string | null;
}

/** What `view.tail` takes besides the run and the handler. */
export interface TailOptions {
  /** The first sequence delivered (default 0). */
  fromSequence?: number;
  /** Called once if a read fails; the subscription ends. */
  onError?: (error: unknown) => void;
  /**
   * While catching up: called after each delivered batch with the events delivered so far and
   * the events the log held when the tail began (from `fromSequence` to its end), until
   * `read >= total` (the last call). Not called when there was nothing to catch up on.
   */
  onCatchUp?: (read: number, total: number) => void;
}

/** Read models over one database's log. Reads only: it never writes, creates or migrates. */
export interface View {
  /** Which backend it reads (`sqlite`, `postgres`). */
  readonly backend: string;
  /**
   * A page of runs from the execution index (one query), completed from the listed runs' logs
   * (one query for the page) and the approval decisions of its waiting agent runs (one query):
   * three queries on SQLite and Postgres, whatever the page's size.
   *
   * Error codes: `INVALID_ARGUMENT` (a bad status or limit), store errors.
   */
  runs(filter?: RunsFilter): Promise<RunsPage>;
  /**
   * The runs page of the dashboard: a search over the execution index (id prefix, flow, version,
   * status, what a suspended run waits for, a time range), sorted by last change or start in
   * either direction, paged by keyset (`after` / `before` cursors, never an offset). One query for
   * the page, one for the listed runs' logs, and one more only when the page holds agent runs
   * waiting for a person (their approval decisions). Always the index, never the projection.
   *
   * Error codes: `INVALID_ARGUMENT` (`fields.path` names the bad parameter), store errors.
   */
  searchRuns(search?: RunSearch): Promise<RunSearchPage>;
  /**
   * How many runs match a search's filters, per status (its `status`, cursor, sort and limit are
   * ignored): one query.
   *
   * Error codes: `INVALID_ARGUMENT`, store errors.
   */
  runCounts(search?: RunSearch): Promise<RunCounts>;
  /**
   * A run's detail: summary, input and outcome, timeline, inbox, approvals.
   *
   * Error codes: `RUN_NOT_FOUND`, store errors.
   */
  show(executionId: string): Promise<RunDetail>;
  /** A run's events in sequence order. Error codes: `RUN_NOT_FOUND`, store errors. */
  events(
    executionId: string,
    options?: { fromSequence?: number; limit?: number },
  ): Promise<StoredEvent[]>;
  /**
   * Follows a run's log: `onEvents` gets the events from `fromSequence` (default 0) in order, in
   * batches, then each new batch as it is appended (SQLite polls; Postgres is notified). `onError`
   * is called once if a read fails, and the subscription ends.
   *
   * Error codes: `RUN_NOT_FOUND`, store errors.
   */
  tail(
    executionId: string,
    onEvents: (events: readonly StoredEvent[]) => void,
    options?: TailOptions,
  ): Promise<Subscription>;
  /**
   * Follows the whole log (every run) after `afterPosition` (default: the log's current end, see
   * {@link View.headPosition}), in position order. Error codes: store errors.
   */
  tailAll(
    onEvents: (events: readonly StoredEvent[]) => void,
    options?: { afterPosition?: number; onError?: (error: unknown) => void },
  ): Promise<{ subscription: Subscription; afterPosition: number }>;
  /**
   * The position of the newest event in the whole log (0 when empty): the log read in pages of
   * `Limits.readLimitMax` events (one read per 10,000 events). Error codes: store errors.
   */
  headPosition(onProgress?: ReadProgress): Promise<number>;
  /** Every approval that waits for a person, across runs, oldest request first. */
  pendingApprovals(): Promise<Approval[]>;
  /**
   * Every `ask_human` question that waits for an answer, across runs, oldest first (what
   * `loom questions` lists; answer one with `operator.answer` or `loom answer`).
   */
  pendingQuestions(): Promise<Question[]>;
  /** Recomputes one execution's hash chain (the store's `verify`). Error codes: `RUN_NOT_FOUND`. */
  verify(executionId: string): Promise<VerifyResult>;
  /** Verifies every execution in the index, reporting progress after each one. */
  verifyAll(onProgress?: VerifyProgress): Promise<VerifyAllResult>;
  /**
   * Every queue's counts (depth, claimed, completed, failed, cancelled), by name: one query per
   * page of queues. Error codes: store errors.
   */
  queues(): Promise<QueueStats[]>;
  /**
   * The queue's oldest waiting item (pending, or claimed with its claim expired): its id, flow
   * and enqueue time, in one query on SQLite and Postgres; null when nothing waits; undefined on
   * a store that cannot list a queue's items (the memory backend). Error codes: store errors.
   */
  oldestWaiting(queue: string): Promise<WaitingItem | null | undefined>;
  /**
   * The schedules that fire, by name: one index query, then one log page per schedule (its
   * generation's `execution.started`). Error codes: store errors.
   */
  schedules(): Promise<ScheduleSummary[]>;
  /**
   * A run's whole log in sequence order, read in pages (what `loom export` writes as JSON lines).
   * Error codes: `RUN_NOT_FOUND`, store errors.
   */
  exportLog(executionId: string, onProgress?: ReadProgress): Promise<StoredEvent[]>;
  close(): Promise<void>;
}

/** What {@link openView} takes. */
export interface OpenViewOptions {
  /** `sqlite:<path>` or `postgres://…[?schema=name]`. */
  db: string;
  /**
   * Whether `runs()` and `schedules()` may answer from the projection tables when they are
   * initialised and current (their checkpoint is the log's last event). Default true; false
   * always folds the log (what the projection is compared against).
   */
  useProjections?: boolean;
}

/**
 * Opens a read-only view of the database at `db` (`sqlite:<path>` or
 * `postgres://…[?schema=name]`). Opening never creates or migrates anything: a missing SQLite file
 * is `STORE_UNAVAILABLE`, a database without a current Loom schema is `SCHEMA_NOT_MIGRATED`, and
 * neither leaves anything behind.
 *
 * Error codes: `INVALID_DB_URL`, `SCHEMA_NOT_MIGRATED`, `SCHEMA_TOO_NEW`, `STORE_UNAVAILABLE`.
 *
 * @example
 * const view = await openView({ db: 'sqlite:./loom.db' });
 * const { runs } = await view.runs({ status: 'suspended' });
 * const approvals = await view.pendingApprovals();
 * await view.close();
 */
export async function openView(options: OpenViewOptions): Promise<View> {
  const target = parseDbUrl(options.db);
  const backend = await openBackend(target, true);
  return new LogView(
    backend,
    backend.pages,
    options.useProjections === false
      ? undefined
      : async () => (await import('./projection/projection-db.js')).openProjectionDb(target, true),
  );
}

/**
 * A view over a backend opened elsewhere (tests, the memory backend). `pages` reads many runs at
 * once; without it, each run is read through the store's API. Closing the view closes `backend`.
 */
export function viewOver(backend: Backend, pages?: PageReader): View {
  return new LogView(backend, pages ?? storePageReader(backend.events));
}

/**
 * A firing schedule from its generation's log: the definition from `execution.started`, the last
 * occurrence from its newest `fire-<ms>` step (a generation fires at most 50 before it continues,
 * so the log is short), the next from its timer or the expression.
 */
function scheduleOf(
  row: ExecutionSummary,
  log: readonly StoredEvent[],
): ScheduleSummary | undefined {
  const input = (log[0]?.payload as { input?: ScheduleInput } | undefined)?.input;
  if (input === undefined || typeof input.expression !== 'string') return undefined;
  let { lastFiredAtMs, lastRunId } = input;
  for (const event of log) {
    if (event.type !== 'step.completed') continue;
    const { name, result } = event.payload as { name?: string; result?: unknown };
    const fired = /^fire-(\d+)$/.exec(name ?? '');
    if (fired === null) continue;
    lastFiredAtMs = Number(fired[1]);
    // The step returns false when the occurrence was skipped (overlap 'skip'): no run started.
    if (result === true) lastRunId = `cron:${input.name}:${lastFiredAtMs}`;
  }
  return {
    name: input.name,
    executionId: row.executionId,
    expression: input.expression,
    timezone: input.timezone,
    flow: input.flow,
    version: input.version,
    nextFireAtMs:
      row.wakeAtMs ?? nextOccurrence(input.expression, lastFiredAtMs ?? Date.now(), input.timezone),
    lastFiredAtMs,
    lastRunId,
  };
}

/**
 * The projection tables `view` reads when they are initialised and current, else undefined (a
 * view not opened by `openView`, or `useProjections: false`: always undefined). Owned by the
 * view: closing the view closes them. Internal to the package (the `loom runs` SPEND column).
 */
export function currentProjectionsOf(view: View): Promise<Projections | undefined> {
  return view instanceof LogView ? view.currentProjections() : Promise.resolve(undefined);
}

class LogView implements View {
  readonly backend: string;
  /** The projection tables, opened read-only at the first read that may use them. */
  private projectionDb: Promise<ProjectionDb> | undefined;
  /** The projection tables were found by an earlier read: the catalog read is skipped. */
  private projectionTablesKnown = false;

  constructor(
    private readonly opened: Backend,
    private readonly pages: PageReader,
    private readonly openProjections?: () => Promise<ProjectionDb>,
  ) {
    this.backend = opened.events.backend;
  }

  /**
   * The projection tables when they are initialised and current — their checkpoint is the log's
   * last event (one checkpoint query, one query for a committed event after it) — else
   * undefined, and the caller reads the log. Never creates or migrates anything; a projection
   * that cannot be read (absent, older version, unreachable) is the same as none.
   */
  async currentProjections(): Promise<Projections | undefined> {
    if (this.openProjections === undefined) return undefined;
    try {
      // Without projection tables (most databases) the answer is known before kysely is loaded.
      if (!this.projectionTablesKnown && !(await this.pages.hasTables(projectionTables))) {
        return undefined;
      }
    } catch {
      return undefined; // unreachable: read the log, as below
    }
    // Loaded here, not at the top: reads that never consult the projection (`loom show`, `events`,
    // `tail`, …) and those of a database without it do without kysely and its ~260 modules.
    const [{ readCheckpoint }, { projectionsOn }] = await Promise.all([
      import('./projection/projection-db.js'),
      import('./projection/projections.js'),
    ]);
    this.projectionDb ??= this.openProjections();
    let opened: ProjectionDb;
    let position: number;
    try {
      opened = await this.projectionDb;
      position = (await readCheckpoint(opened, this.projectionTablesKnown)).position;
      this.projectionTablesKnown = true;
    } catch {
      // Absent, of another version, dropped since, or unreachable: read the log.
      this.projectionTablesKnown = false;
      return undefined;
    }
    // Not readAll: on Postgres it holds back rows while any older transaction on the server is
    // open, and a projection judged current then would miss a committed write (a pruned run, a new
    // run) until that transaction ended.
    return (await this.pages.hasEventsAfter(position)) ? undefined : projectionsOn(opened);
  }

  async runs(filter: RunsFilter = {}): Promise<RunsPage> {
    const limit = filter.limit ?? runsPageDefault;
    if (!Number.isInteger(limit) || limit < 1 || limit > Limits.readLimitMax) {
      throw new LoomError(
        ViewErrorCode.INVALID_ARGUMENT,
        `limit must be an integer from 1 to ${Limits.readLimitMax}, got ${limit}`,
        { path: 'limit' },
      );
    }
    if (filter.status !== undefined && !runStatuses.includes(filter.status)) {
      throw new LoomError(
        ViewErrorCode.INVALID_ARGUMENT,
        `status must be one of ${runStatuses.join(', ')}, got '${filter.status}'`,
        { path: 'status' },
      );
    }
    const projected = await this.currentProjections();
    if (projected !== undefined) {
      const page = await projected.runs(filter);
      // The projection keeps no waits: the logs of the page's suspended runs say (one query).
      const suspended = page.runs.filter((run) => run.status === 'suspended').map((run) => run.id);
      const logs = suspended.length === 0 ? new Map() : await this.pages.logs(suspended);
      return {
        runs: page.runs.map(({ spend: _spend, ...run }) => {
          const events = logs.get(run.id);
          return events === undefined
            ? run
            : { ...run, ...waitsOf(run.id, run.status, foldRun(events, isAgentFlow).timeline) };
        }),
        nextCursor: page.nextCursor,
      };
    }
    const rows = await this.opened.events.findExecutions({
      limit,
      ...(filter.status === undefined ? {} : { status: filter.status }),
      ...(filter.flow === undefined ? {} : { flow: filter.flow }),
      ...(filter.after === undefined ? {} : { afterExecutionId: filter.after }),
    });
    const runs = await this.summarizePage(rows);
    const last = rows[rows.length - 1];
    return {
      runs,
      nextCursor: rows.length === limit && last !== undefined ? last.executionId : undefined,
    };
  }

  async searchRuns(search: RunSearch = {}): Promise<RunSearchPage> {
    const query = runQueryOf(search);
    const read = await this.pages.searchRows(query);
    const more = read.length > query.limit;
    const rows = read.slice(0, query.limit);
    // A page read backwards (the one before a cursor) comes in reverse: turn it round.
    const backwards = query.keyset?.direction === 'before';
    if (backwards) rows.reverse();
    const first = rows[0];
    const last = rows[rows.length - 1];
    const cursor = (row: IndexRowLite | undefined) =>
      row === undefined
        ? null
        : encodeCursor(query.sort, query.order, sortValueOf(query, row), row.executionId);
    return {
      runs: await this.summarizePage(rows),
      // Forwards, a page beyond shows in the extra row, and a cursor means one before; backwards,
      // the other way round.
      nextCursor: backwards || more ? cursor(last) : null,
      prevCursor: backwards
        ? more
          ? cursor(first)
          : null
        : query.keyset === undefined
          ? null
          : cursor(first),
    };
  }

  async runCounts(search: RunSearch = {}): Promise<RunCounts> {
    const query = runQueryOf(search);
    const counts: RunCounts = {
      running: 0,
      suspended: 0,
      completed: 0,
      failed: 0,
      cancelled: 0,
      continued: 0,
      total: 0,
    };
    for (const { status, settledAs, n } of await this.pages.countRows(query)) {
      const key = status === 'settled' ? settledAs : status;
      if ((runCountStatuses as readonly (string | null)[]).includes(key)) {
        counts[key as (typeof runCountStatuses)[number]] += n;
      }
      counts.total += n;
    }
    return counts;
  }

  /**
   * Summaries of index rows: their logs in one read, the approval decisions of the waiting agent
   * runs among them in one more.
   */
  private async summarizePage(rows: readonly IndexRowLite[]): Promise<RunSummary[]> {
    const logs = await this.pages.logs(rows.map((row) => row.executionId));
    const folded = rows.map((row) => {
      const events = logs.get(row.executionId) ?? [];
      return { row, events, folded: foldRun(events, isAgentFlow) };
    });
    const waiting = folded.filter(
      ({ row, folded: f }) => row.status === 'suspended' && isAgentFlow(row.flow ?? f.flow),
    );
    // The agent loop (~110 modules with the runtime it brings) only for a page with agent runs.
    const agentLoop = waiting.length === 0 ? undefined : await import('@loom/agent-loop');
    const decisions =
      agentLoop === undefined
        ? new Map<string, StoredSignal[]>()
        : await this.pages.signals(
            waiting.map(({ row }) => row.executionId),
            agentLoop.approvalSignalPrefix,
          );
    const waitingIds = new Set(waiting.map(({ row }) => row.executionId));
    return folded.map(({ row, events, folded: f }) => {
      const approvals =
        agentLoop !== undefined && waitingIds.has(row.executionId)
          ? agentLoop.approvalsOf(events, decisions.get(row.executionId) ?? [])
          : [];
      return summaryOf(row, f, approvals);
    });
  }

  async show(executionId: string): Promise<RunDetail> {
    const row = await this.indexRow(executionId);
    const events = await readLog(this.opened.events, executionId);
    const folded = foldRun(events, isAgentFlow);
    const inbox = await readInbox(this.opened.events, executionId);
    // The agent loop only for an agent run: `loom show` of a flow's run does without it.
    const agentLoop = isAgentFlow(row.flow ?? folded.flow)
      ? await import('@loom/agent-loop')
      : undefined;
    const approvals = agentLoop?.approvalsOf(events, inbox) ?? [];
    const summary = summaryOf(row, folded, approvals);
    return {
      run: summary,
      input: folded.input,
      ...(folded.output === undefined ? {} : { output: folded.output }),
      ...(folded.error === undefined ? {} : { error: folded.error }),
      parentId: folded.parentId,
      timeline: folded.timeline,
      signals: signalsOf(inbox, folded.consumedSignalIds),
      approvals,
      questions: agentLoop?.questionsOf(events, inbox) ?? [],
      retries: folded.retries,
      events: events.length,
    };
  }

  async events(
    executionId: string,
    options: { fromSequence?: number; limit?: number } = {},
  ): Promise<StoredEvent[]> {
    const events = await this.opened.events.read(executionId, options);
    if (events.length === 0 && (options.fromSequence ?? 0) === 0) throw runNotFound(executionId);
    return events;
  }

  async tail(
    executionId: string,
    onEvents: (events: readonly StoredEvent[]) => void,
    options: TailOptions = {},
  ): Promise<Subscription> {
    const row = await this.indexRow(executionId);
    const total = Math.max(0, row.nextSequence - (options.fromSequence ?? 0));
    let read = 0;
    return this.opened.events.subscribe(
      {
        executionId,
        ...(options.fromSequence === undefined ? {} : { fromSequence: options.fromSequence }),
        ...(options.onError === undefined ? {} : { onError: options.onError }),
      },
      (events) => {
        onEvents(events);
        if (read >= total) return;
        read += events.length;
        options.onCatchUp?.(Math.min(read, total), total);
      },
    );
  }

  async tailAll(
    onEvents: (events: readonly StoredEvent[]) => void,
    options: { afterPosition?: number; onError?: (error: unknown) => void } = {},
  ): Promise<{ subscription: Subscription; afterPosition: number }> {
    const afterPosition = options.afterPosition ?? (await this.headPosition());
    const subscription = this.opened.events.subscribe(
      {
        afterPosition,
        ...(options.onError === undefined ? {} : { onError: options.onError }),
      },
      (events) => onEvents(events),
    );
    return { subscription, afterPosition };
  }

  async headPosition(onProgress?: ReadProgress): Promise<number> {
    // Paged in the store's global order: on Postgres a cursor must be a stored event's position
    // (the order is commit-safe, not numeric), so there is no shortcut through the numbers.
    let head = 0;
    let read = 0;
    for (;;) {
      const page = await this.opened.events.readAll({
        afterPosition: head,
        limit: Limits.readLimitMax,
      });
      const last = page[page.length - 1];
      if (last !== undefined) head = last.position;
      read += page.length;
      onProgress?.(read);
      if (page.length < Limits.readLimitMax) return head;
    }
  }

  async pendingApprovals(): Promise<Approval[]> {
    const out: Approval[] = [];
    const { approvalSignalPrefix, approvalsOf } = await import('@loom/agent-loop');
    await this.eachWaitingAgentRun(approvalSignalPrefix, (events, signals) => {
      for (const approval of approvalsOf(events, signals)) {
        if (approval.status === 'pending') out.push(approval);
      }
    });
    return out.sort((a, b) => a.requestedAtMs - b.requestedAtMs || a.id.localeCompare(b.id));
  }

  async pendingQuestions(): Promise<Question[]> {
    const out: Question[] = [];
    const { answerSignalPrefix, questionsOf } = await import('@loom/agent-loop');
    await this.eachWaitingAgentRun(answerSignalPrefix, (events, signals) => {
      for (const question of questionsOf(events, signals)) {
        if (question.status === 'pending') out.push(question);
      }
    });
    return out.sort((a, b) => a.askedAtMs - b.askedAtMs || a.id.localeCompare(b.id));
  }

  /**
   * Each suspended agent run's log and its inbox signals named `prefix…`, a page of runs at a
   * time (two queries per page of `Limits.readLimitMax` runs).
   */
  private async eachWaitingAgentRun(
    prefix: string,
    visit: (events: StoredEvent[], signals: StoredSignal[]) => void,
  ): Promise<void> {
    let after: string | undefined;
    for (;;) {
      const rows = await this.opened.events.findExecutions({
        status: 'suspended',
        limit: Limits.readLimitMax,
        ...(after === undefined ? {} : { afterExecutionId: after }),
      });
      const agentIds = rows.filter((row) => isAgentFlow(row.flow)).map((row) => row.executionId);
      const logs = await this.pages.logs(agentIds);
      const signals = await this.pages.signals(agentIds, prefix);
      for (const id of agentIds) visit(logs.get(id) ?? [], signals.get(id) ?? []);
      if (rows.length < Limits.readLimitMax) return;
      after = rows[rows.length - 1]?.executionId;
    }
  }

  async verify(executionId: string): Promise<VerifyResult> {
    // The receipt log is in no index (nothing drives it), but its chain is checked like a run's.
    if (executionId !== pruneReceiptLogId) await this.indexRow(executionId);
    return this.opened.events.verify(executionId);
  }

  async verifyAll(onProgress?: VerifyProgress): Promise<VerifyAllResult> {
    const result: VerifyAllResult = {
      checked: 0,
      broken: [],
      receipts: { events: 0, prunedRuns: 0 },
    };
    let after: string | undefined;
    for (;;) {
      const rows = await this.opened.events.findExecutions({
        limit: Limits.readLimitMax,
        ...(after === undefined ? {} : { afterExecutionId: after }),
      });
      for (const row of rows) {
        const verified = await this.opened.events.verify(row.executionId);
        result.checked += 1;
        if (!verified.ok) result.broken.push(verified);
        onProgress?.(result.checked);
      }
      if (rows.length < Limits.readLimitMax) break;
      after = rows[rows.length - 1]?.executionId;
    }
    const receipts = await this.opened.events.verify(pruneReceiptLogId);
    if (!receipts.ok) result.broken.push(receipts);
    result.receipts = { events: receipts.events, prunedRuns: await this.prunedRuns() };
    return result;
  }

  /** How many pruned runs the receipt log lists (read page by page). */
  private async prunedRuns(): Promise<number> {
    let listed = 0;
    for (let fromSequence = 0; ; ) {
      const page = await this.opened.events.read(pruneReceiptLogId, {
        fromSequence,
        limit: Limits.readLimitMax,
      });
      for (const event of page) {
        const executions = (event.payload as Partial<PruneReceipt> | null)?.executions;
        if (Array.isArray(executions)) listed += executions.length;
      }
      if (page.length < Limits.readLimitMax) return listed;
      fromSequence += page.length;
    }
  }

  async queues(): Promise<QueueStats[]> {
    const out: QueueStats[] = [];
    for (;;) {
      const last = out[out.length - 1]?.queue;
      const page = await this.opened.queues.listQueues(
        last === undefined ? {} : { afterQueue: last },
      );
      out.push(...page);
      if (page.length === 0 || page.length < Limits.queueListMax) return out;
    }
  }

  oldestWaiting(queue: string): Promise<WaitingItem | null | undefined> {
    return this.pages.oldestWaiting(queue, Date.now());
  }

  async schedules(): Promise<ScheduleSummary[]> {
    const projected = await this.currentProjections();
    if (projected !== undefined) return projected.schedules();
    const out: ScheduleSummary[] = [];
    let after: string | undefined;
    for (;;) {
      const rows = await this.opened.events.findExecutions({
        flow: scheduleFlowName,
        limit: Limits.readLimitMax,
        ...(after === undefined ? {} : { afterExecutionId: after }),
      });
      for (const row of rows) {
        if (row.status === 'settled') continue;
        const summary = scheduleOf(row, await readLog(this.opened.events, row.executionId));
        if (summary !== undefined) out.push(summary);
      }
      if (rows.length < Limits.readLimitMax) break;
      after = rows[rows.length - 1]?.executionId;
    }
    return out.sort((a, b) => a.name.localeCompare(b.name));
  }

  async exportLog(executionId: string, onProgress?: ReadProgress): Promise<StoredEvent[]> {
    const events = await readLog(this.opened.events, executionId, onProgress);
    if (events.length === 0) throw runNotFound(executionId);
    return events;
  }

  async close(): Promise<void> {
    const projections = this.projectionDb;
    this.projectionDb = undefined;
    try {
      await this.opened.close();
    } finally {
      await projections?.then(
        (db) => db.close(),
        () => undefined,
      );
    }
  }

  private indexRow(executionId: string): Promise<ExecutionSummary> {
    return indexRow(this.opened.events, executionId);
  }
}

/** A run's summary from its index row, its folded log and (a waiting agent run's) approvals. */
function summaryOf(
  row: IndexRowLite,
  folded: ReturnType<typeof foldRun>,
  approvals: readonly Approval[],
): RunSummary {
  const flow = row.flow ?? folded.flow;
  const agent = isAgentFlow(flow);
  return {
    id: row.executionId,
    kind: agent ? 'agent' : 'flow',
    flow,
    agent: agent && flow !== null ? flow.slice(agentFlowPrefix.length) : null,
    version: row.version ?? folded.version,
    status: row.status === 'settled' && row.settledAs !== null ? row.settledAs : row.status,
    terminalReason: row.status === 'settled' ? folded.terminalReason : null,
    steps: folded.steps,
    pendingApprovals: approvals.filter((a) => a.status === 'pending').length,
    createdAtMs: row.createdAtMs,
    updatedAtMs: row.updatedAtMs,
    wakeAtMs: row.wakeAtMs,
    ...waitsOf(row.executionId, row.status, folded.timeline),
  };
}

/** `{ waitingFor }` when the run is suspended and its log shows what it waits for, else `{}`. */
function waitsOf(
  runId: string,
  status: string,
  timeline: FoldedRun['timeline'],
): { waitingFor?: string } {
  const waits = waitingFor(runId, status, timeline);
  return waits === undefined ? {} : { waitingFor: waits };
}

function isAgentFlow(flow: string | null): boolean {
  return flow?.startsWith(agentFlowPrefix) === true;
}

/** The greatest string below `id` in code-unit order that the index can page after. */
