import type {
  DetailedExecutionStatus,
  EventStore,
  ExecutionSummary,
  FindExecutionsOptions,
} from '@loom/event-runtime';

/** What `runtime.findExecutions` looks for: every filter given must match. */
export interface FindFlowExecutionsOptions {
  /**
   * A flow definition or a flow name. A definition matches every version of its name; add
   * `version` to pin one.
   */
  flow?: string | { readonly name: string };
  /** Only this version; `null` for executions of an unversioned flow. Default: any version. */
  version?: string | null;
  /**
   * `running`, `suspended`, `completed`, `failed`, `cancelled`, `continued` (continued as new), or
   * `settled` for any of the last four. Default: any status.
   */
  status?: DetailedExecutionStatus;
  /** Created at or after this instant (epoch ms, inclusive). */
  createdFromMs?: number;
  /** Created before this instant (epoch ms, exclusive). */
  createdBeforeMs?: number;
  /** Status last changed at or after this instant (epoch ms, inclusive). */
  updatedFromMs?: number;
  /** Status last changed before this instant (epoch ms, exclusive). */
  updatedBeforeMs?: number;
  /** The `nextCursor` of the previous page. */
  cursor?: string;
  /** Most executions per page, 1 to `Limits.readLimitMax`. Default 100. */
  limit?: number;
}

/** One execution as `runtime.findExecutions` lists it. */
export interface FlowExecutionSummary {
  id: string;
  /** The flow's name (null for an execution the kernel started without a flow name). */
  flow: string | null;
  version: string | null;
  /** `running`, `suspended`, or how it ended (`settled` only when no terminal event says how). */
  status: DetailedExecutionStatus;
  /** When it started (epoch ms, by the store's clock). */
  createdAtMs: number;
  /** When its status last changed (epoch ms). */
  updatedAtMs: number;
  /** For a suspended execution with a timer: when it is due (epoch ms); else null. */
  wakeAtMs: number | null;
}

/** One page of executions, ordered by id. */
export interface FlowExecutionPage {
  executions: FlowExecutionSummary[];
  /** Pass it as `cursor` for the next page; undefined when this page was the last. */
  nextCursor: string | undefined;
}

/** Default page size of `findExecutions`: a screenful, not the kernel's 10,000. */
export const findExecutionsPageDefault = 100;

/**
 * Runs `store.findExecutions` for a flow-level query (one store call) and shapes the page.
 * Error codes: `INVALID_ARGUMENT` (a bad filter), store errors.
 */
export async function findFlowExecutions(
  store: EventStore,
  options: FindFlowExecutionsOptions,
): Promise<FlowExecutionPage> {
  const { flow, cursor, limit = findExecutionsPageDefault, ...filters } = options;
  const query: FindExecutionsOptions = { ...filters, limit };
  if (flow !== undefined) query.flow = typeof flow === 'string' ? flow : flow.name;
  if (cursor !== undefined) query.afterExecutionId = cursor;
  const rows = await store.findExecutions(query);
  const last = rows[rows.length - 1];
  return {
    executions: rows.map(summaryOf),
    nextCursor: rows.length === limit && last !== undefined ? last.executionId : undefined,
  };
}

function summaryOf(row: ExecutionSummary): FlowExecutionSummary {
  return {
    id: row.executionId,
    flow: row.flow,
    version: row.version,
    status: row.settledAs ?? row.status,
    createdAtMs: row.createdAtMs,
    updatedAtMs: row.updatedAtMs,
    wakeAtMs: row.wakeAtMs,
  };
}
