// The dashboard's HTTP surface: the page and its assets, the read API (runs, a run, its events,
// approvals), a server-sent-events stream of changes, and the guarded mutations.
import type { Resolution } from '@loom/agent-loop';
import { ErrorCode, type JsonValue } from '@loom/event-runtime';
import { occurrences } from '@loom/workflow-runtime/cron';
import { type Context, type Handler, Hono } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { createMiddleware } from 'hono/factory';
import { streamSSE } from 'hono/streaming';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { isLoomError, LoomError, ViewErrorCode } from '../../errors.js';
import { ExitCode, exitCodeOf } from '../../exit-code.js';
import type { Operator } from '../../open-operator.js';
import type { View } from '../../open-view.js';
import type { RunSearch } from '../../run-search.js';
import { runQueryOf } from '../run-search-query.js';
import { dashboardCss, dashboardHtml, dashboardJs } from './dashboard-page.js';
import { checkHost, checkOrigin, checkToken } from './guard.js';
import { runSearchOf } from './run-search-params.js';

/** Largest mutation body: a signal payload is small; anything bigger is refused unread. */
const mutationBytesMax = 64 * 1024;
/** Longest `by`, `note`, `reason`, signal name or key accepted from the page. */
const textCharsMax = 2_000;
/** The view's names of a search's parameters that the query string spells otherwise. */
const paramOfField: Readonly<Record<string, string>> = {
  idPrefix: 'id',
  updatedFromMs: 'updatedFrom',
  updatedBeforeMs: 'updatedBefore',
};

/**
 * Runs `read` over a search, so that a view's `INVALID_ARGUMENT` names the query parameter the
 * page sent (`id`, not `idPrefix`).
 */
async function searching<T>(read: () => Promise<T>): Promise<T> {
  try {
    return await read();
  } catch (error) {
    const path = isLoomError(error) ? error.fields.path : undefined;
    if (isLoomError(error) && typeof path === 'string' && paramOfField[path] !== undefined) {
      let message = error.message;
      for (const [field, param] of Object.entries(paramOfField)) {
        message = message.replaceAll(field, param);
      }
      throw new LoomError(
        error.code,
        message,
        { ...error.fields, path: paramOfField[path] },
        error,
      );
    }
    throw error;
  }
}
/**
 * How often a stream re-reads the counts when its page did not change, in polls (10 × the default
 * 500 ms: a change off the page shows in its count within 5 s).
 */
const countsEveryPolls = 10;
/** Most runs one bulk action takes (a page of runs is at most 500; act a page at a time). */
export const bulkRunsMax = 500;
/** Open event streams at once: each polls the store; a runaway tab should not multiply that. */
export const streamsMax = 32;

/** What the app needs from its owner. */
export interface DashboardContext {
  view: View;
  /** Absent when read-only. */
  operator: Operator | undefined;
  token: string;
  readOnly: boolean;
  allowedHosts: ReadonlySet<string> | 'any';
  pollMs: number;
  /** True once the dashboard is closing: streams end. */
  closing(): boolean;
  /** Keeps each stream's loop so closing can wait for it. */
  track(loop: Promise<void>): void;
}

const securityHeaders: Readonly<Record<string, string>> = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
};

function httpStatusOf(error: unknown): ContentfulStatusCode {
  const code = isLoomError(error) ? error.code : undefined;
  if (code === ViewErrorCode.TOKEN_REQUIRED) return 401;
  if (
    code === ViewErrorCode.TOKEN_INVALID ||
    code === ViewErrorCode.ORIGIN_REFUSED ||
    code === ViewErrorCode.READ_ONLY
  ) {
    return 403;
  }
  switch (exitCodeOf(code)) {
    case ExitCode.usage:
      return 400;
    case ExitCode.notFound:
      return 404;
    case ExitCode.conflict:
      return 409;
    case ExitCode.unavailable:
      return 503;
    default:
      return 500;
  }
}

function errorBody(error: unknown) {
  return {
    error: {
      code: isLoomError(error) ? error.code : 'UNEXPECTED',
      message: error instanceof Error ? error.message : String(error),
      ...(isLoomError(error) ? { fields: error.fields } : {}),
    },
  };
}

function invalid(path: string, message: string): LoomError {
  return new LoomError(ViewErrorCode.INVALID_ARGUMENT, message, { path });
}

/** A JSON object body, or `INVALID_ARGUMENT`. */
async function objectBody(request: Request): Promise<Record<string, unknown>> {
  if (!(request.headers.get('content-type') ?? '').startsWith('application/json')) {
    throw invalid('body', 'a mutation body must be JSON (Content-Type: application/json)');
  }
  let body: unknown;
  try {
    body = await request.json();
  } catch (error) {
    throw new LoomError(
      ViewErrorCode.INVALID_ARGUMENT,
      'the body is not JSON',
      { path: 'body' },
      error,
    );
  }
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw invalid('body', 'the body must be a JSON object');
  }
  return body as Record<string, unknown>;
}

function text(body: Record<string, unknown>, key: string): string | undefined {
  const value = body[key];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string' || value.length > textCharsMax) {
    throw invalid(key, `${key} must be a string of at most ${textCharsMax} characters`);
  }
  return value;
}

/** Who decided: the page's "as" field, else `dashboard`. */
function by(body: Record<string, unknown>): string {
  const name = text(body, 'by')?.trim();
  return name === undefined || name === '' ? 'dashboard' : name;
}

/** The `:id` of a route (a run's or an approval's id). */
function idOf(c: Context): string {
  const id = c.req.param('id');
  if (id === undefined || id === '') throw invalid('id', 'the path names no id');
  return id;
}

/** Builds the dashboard's Hono app over `context`. */
export function dashboardApp(context: DashboardContext): Hono {
  const app = new Hono();
  let streams = 0;

  app.onError((error, c) => c.json(errorBody(error), httpStatusOf(error)));
  app.use('*', async (c, next) => {
    checkHost(c.req.header('host'), context.allowedHosts);
    await next();
    for (const [name, value] of Object.entries(securityHeaders)) c.header(name, value);
  });

  app.get('/', (c) => c.html(dashboardHtml({ readOnly: context.readOnly })));
  app.get('/app.js', (c) => c.body(dashboardJs, 200, { 'content-type': 'text/javascript' }));
  app.get('/app.css', (c) => c.body(dashboardCss, 200, { 'content-type': 'text/css' }));

  app.get('/api/config', (c) => c.json({ readOnly: context.readOnly }));
  // The runs page: a search over the execution index, one page by keyset (`after`/`before`),
  // and the counts per status under the same filters.
  app.get('/api/runs', async (c) => {
    const search = runSearchOf(c.req.query());
    return c.json(await searching(() => context.view.searchRuns(search)));
  });
  app.get('/api/counts', async (c) => {
    const search = runSearchOf(c.req.query());
    return c.json(await searching(() => context.view.runCounts(search)));
  });
  // Schedules (their next fires and their latest runs) and queues (their depth and outcomes).
  app.get('/api/operations', async (c) => c.json(await operationsOf(context.view)));
  app.get('/api/runs/:id', async (c) => c.json(await context.view.show(idOf(c))));
  app.get('/api/runs/:id/events', async (c) => {
    const from = c.req.query('from');
    const fromSequence = from === undefined ? 0 : Number(from);
    if (!Number.isInteger(fromSequence) || fromSequence < 0) {
      throw invalid('from', `from must be a sequence (an integer from 0), got '${from}'`);
    }
    return c.json(await context.view.events(idOf(c), { fromSequence }));
  });
  app.get('/api/approvals', async (c) => c.json(await context.view.pendingApprovals()));
  app.get('/api/questions', async (c) => c.json(await context.view.pendingQuestions()));

  // Live updates: the server polls the view and sends `runs` (the page the search names, from its
  // cursor), `counts` (per status under its filters) and `run` (the open run's detail) only when
  // they changed. Polling keeps it the same on SQLite and Postgres.
  app.get('/api/stream', async (c) => {
    const { run: runId, ...params } = c.req.query();
    const search: RunSearch = runSearchOf(params);
    // A bad search is a 400 now, not a stream of failures.
    await searching(async () => runQueryOf(search));
    if (streams >= streamsMax) {
      const tooMany = new LoomError(
        ErrorCode.LIMIT_EXCEEDED,
        `at most ${streamsMax} event streams at once: close a dashboard tab`,
        { limit: 'streamsMax', expected: streamsMax },
      );
      return c.json(errorBody(tooMany), 503);
    }
    streams += 1;
    return streamSSE(c, async (stream) => {
      let done: () => void = () => {};
      context.track(
        new Promise<void>((resolve) => {
          done = resolve;
        }),
      );
      const sent = new Map<string, string>();
      /** Sends `value` as `event` unless it is what was sent last; says whether it sent. */
      const send = async (event: string, value: unknown) => {
        const data = JSON.stringify(value);
        if (sent.get(event) === data) return false;
        sent.set(event, data);
        await stream.writeSSE({ event, data });
        return true;
      };
      // The counts scan every matching index row (tens of ms over 100,000 runs): they are read
      // again when the page changed, else every `countsEveryPolls` polls.
      let pollsSinceCounts = Number.POSITIVE_INFINITY;
      try {
        while (!stream.aborted && !stream.closed && !context.closing()) {
          try {
            const pageChanged = await send('runs', await context.view.searchRuns(search));
            pollsSinceCounts += 1;
            if (pageChanged || pollsSinceCounts >= countsEveryPolls) {
              pollsSinceCounts = 0;
              await send('counts', await context.view.runCounts(search));
            }
            if (runId !== undefined && runId !== '') {
              await send('run', await context.view.show(runId));
            }
          } catch (error) {
            if (context.closing()) break;
            await send('failure', errorBody(error));
          }
          await stream.sleep(context.pollMs);
        }
      } finally {
        streams -= 1;
        done();
      }
    });
  });

  // Every mutation: a bounded body, then read-only, Origin and token checks, before it is read.
  const limited = bodyLimit({
    maxSize: mutationBytesMax,
    onError: (c) =>
      c.json(
        errorBody(invalid('body', `a mutation body is at most ${mutationBytesMax} bytes`)),
        413,
      ),
  });
  const guarded = createMiddleware(async (c, next) => {
    if (context.readOnly || context.operator === undefined) {
      throw new LoomError(
        ViewErrorCode.READ_ONLY,
        'this dashboard was started read-only (--read-only): use loom signal/cancel/approve/reject/answer, or restart it without --read-only',
        {},
      );
    }
    checkOrigin({
      origin: c.req.header('origin'),
      host: c.req.header('host'),
      fetchSite: c.req.header('sec-fetch-site'),
    });
    checkToken(c.req.header('authorization'), context.token);
    await next();
  });
  const mutation = (path: string, handler: Handler) => app.post(path, limited, guarded, handler);
  const operator = (): Operator => context.operator as Operator;

  mutation('/api/runs/:id/cancel', async (c) => {
    const body = await objectBody(c.req.raw);
    const executionId = idOf(c);
    const reason = text(body, 'reason');
    const cancelled = await operator().cancel(executionId, {
      by: by(body),
      ...(reason === undefined ? {} : { reason }),
    });
    return c.json({ executionId, cancelled });
  });
  // One action on many runs (the runs selected, on one page or several): each run's outcome, the
  // others going on after a refusal. Cancel and retry record who and why in each run's log;
  // resume records who.
  mutation('/api/runs/bulk', async (c) => {
    const body = await objectBody(c.req.raw);
    const { action, runIds } = body;
    if (action !== 'cancel' && action !== 'resume' && action !== 'retry') {
      throw invalid('action', 'action is cancel, resume or retry');
    }
    if (
      !Array.isArray(runIds) ||
      runIds.length === 0 ||
      runIds.length > bulkRunsMax ||
      !runIds.every((id) => typeof id === 'string' && id !== '')
    ) {
      throw invalid('runIds', `runIds is a list of 1 to ${bulkRunsMax} run ids`);
    }
    const who = by(body);
    const reason = text(body, 'reason');
    const ops = operator();
    const results = [];
    for (const executionId of runIds as string[]) {
      try {
        if (action === 'cancel') {
          const cancelled = await ops.cancel(executionId, {
            by: who,
            ...(reason === undefined ? {} : { reason }),
          });
          results.push({ executionId, ok: true, cancelled });
        } else if (action === 'resume') {
          results.push({ ok: true, ...(await ops.resume(executionId, { by: who })) });
        } else {
          results.push({
            ok: true,
            ...(await ops.retry(executionId, {
              by: who,
              ...(reason === undefined ? {} : { reason }),
            })),
          });
        }
      } catch (error) {
        if (!isLoomError(error)) throw error;
        results.push({
          executionId,
          ok: false,
          error: { code: error.code, message: error.message },
        });
      }
    }
    return c.json({ action, by: who, results });
  });
  mutation('/api/runs/:id/retry', async (c) => {
    const body = await objectBody(c.req.raw);
    const reason = text(body, 'reason');
    const who = by(body);
    const retried = await operator().retry(idOf(c), {
      by: who,
      ...(reason === undefined ? {} : { reason }),
    });
    return c.json({ ...retried, by: who });
  });
  mutation('/api/runs/:id/resume', async (c) => {
    const body = await objectBody(c.req.raw);
    return c.json(await operator().resume(idOf(c), { by: by(body) }));
  });
  mutation('/api/runs/:id/fork', async (c) => {
    const body = await objectBody(c.req.raw);
    const executionId = idOf(c);
    const { atSequence, allowRerun } = body;
    if (typeof atSequence !== 'number' || !Number.isSafeInteger(atSequence) || atSequence < 0) {
      throw invalid(
        'atSequence',
        'a fork needs atSequence: the sequence of the last event it keeps',
      );
    }
    if (allowRerun !== undefined && typeof allowRerun !== 'boolean') {
      throw invalid('allowRerun', 'allowRerun is true or false');
    }
    const newId = text(body, 'newId');
    const forked = await operator().fork(executionId, {
      atSequence,
      by: by(body),
      ...(newId === undefined || newId === '' ? {} : { newId }),
      ...(allowRerun === true ? { allowRerun } : {}),
    });
    return c.json({ executionId, forked, atSequence });
  });
  mutation('/api/runs/:id/signal', async (c) => {
    const body = await objectBody(c.req.raw);
    const executionId = idOf(c);
    const name = text(body, 'name');
    if (name === undefined || name === '') throw invalid('name', 'a signal needs a name');
    const key = text(body, 'idempotencyKey');
    const sent = await operator().signal(
      executionId,
      name,
      (body.payload ?? null) as JsonValue,
      key === undefined ? {} : { idempotencyKey: key },
    );
    return c.json({ executionId, name, ...sent });
  });
  for (const decision of ['approve', 'reject'] as const) {
    mutation(`/api/approvals/:id/${decision}`, async (c) => {
      const body = await objectBody(c.req.raw);
      const approvalId = idOf(c);
      const note = text(body, 'note');
      const decided = { by: by(body), ...(note === undefined ? {} : { note }) };
      if (decision === 'approve') {
        // An interrupted side effect's resolution ({ kind: 'rerun' } | { kind: 'record', output })
        // is checked by agent-loop: required there (RESOLUTION_REQUIRED), refused elsewhere
        // (INVALID_RESOLUTION).
        const resolution = body.resolution as Resolution | undefined;
        await operator().approve(approvalId, {
          ...decided,
          ...(resolution === undefined || resolution === null ? {} : { resolution }),
        });
      } else {
        await operator().reject(approvalId, {
          ...decided,
          ...(body.endRun === true ? { endRun: true } : {}),
        });
      }
      return c.json({
        approvalId,
        decision: decision === 'approve' ? 'approved' : 'rejected',
        by: decided.by,
      });
    });
  }
  mutation('/api/questions/:id/answer', async (c) => {
    const body = await objectBody(c.req.raw);
    const questionId = idOf(c);
    const answer = text(body, 'text');
    if (answer === undefined || answer.trim() === '') throw invalid('text', 'an answer needs text');
    const answeredBy = by(body);
    await operator().answer(questionId, { by: answeredBy, text: answer });
    return c.json({ questionId, answered: true, by: answeredBy });
  });
  return app;
}

/** Upcoming fires a schedule shows, and its latest runs. */
const scheduleFiresShown = 3;
const scheduleRunsShown = 5;

/**
 * What the operations panel shows: each schedule with its next fires (from its next one, by
 * its expression) and its latest runs (their ids are `cron:<name>:<fire time>`), and each queue's
 * counts and oldest waiting item. One index query per schedule for its runs, one query per queue
 * for its oldest item.
 */
async function operationsOf(view: View) {
  const [schedules, queues] = await Promise.all([view.schedules(), view.queues()]);
  return {
    schedules: await Promise.all(
      schedules.map(async (schedule) => ({
        ...schedule,
        nextFiresAtMs: [
          schedule.nextFireAtMs,
          ...occurrences(
            schedule.expression,
            schedule.nextFireAtMs,
            schedule.timezone,
            scheduleFiresShown - 1,
          ),
        ],
        recentRuns: (
          await view.searchRuns({ idPrefix: `cron:${schedule.name}:`, limit: scheduleRunsShown })
        ).runs.map((run) => ({
          id: run.id,
          status: run.status,
          updatedAtMs: run.updatedAtMs,
        })),
      })),
    ),
    // One query per queue for its oldest waiting item (a page lists at most a few dozen queues).
    queues: await Promise.all(
      queues.map(async (queue) => ({
        ...queue,
        oldestWaiting: await view.oldestWaiting(queue.queue),
      })),
    ),
  };
}
