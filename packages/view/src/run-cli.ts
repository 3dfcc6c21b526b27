import { existsSync, readFileSync } from 'node:fs';
import { userInfo } from 'node:os';
import type { Resolution } from '@loom/agent-loop';
import type {
  DetailedExecutionStatus,
  JsonValue,
  StoredEvent,
  Subscription,
} from '@loom/event-runtime';
import { Command, CommanderError, InvalidArgumentError } from 'commander';
import { addChatCommand } from './chat-command.js';
import { dashboardPortDefault, tokenEnvVar } from './dashboard-defaults.js';
import { isLoomError, LoomError, ViewErrorCode } from './errors.js';
import { ExitCode, exitCodeOf } from './exit-code.js';
import { parseDbUrl } from './internal/db-url.js';
import { deployedOf } from './internal/deployed.js';
import {
  formatApprovals,
  formatDetail,
  formatEvents,
  formatQuestions,
  formatQueues,
  formatRuns,
  formatSchedules,
} from './internal/format.js';
import { count, type Progress, progressAfterMs, startProgress } from './internal/progress.js';
import type { Operator } from './open-operator.js';
import type { RunsPage, View } from './open-view.js';
import { addProjectionCommands } from './projection/projection-cli.js';
import { type RunWaiting, runWaitings } from './run-search.js';
import { runStatuses } from './run-statuses.js';
import { addWorkerCommand } from './worker-command.js';

/** Where `runCli` writes, and what it reads from the environment. */
export interface CliIo {
  stdout(text: string): void;
  stderr(text: string): void;
  /** `LOOM_DB` and friends. */
  env: Readonly<Record<string, string | undefined>>;
  /**
   * True when stderr is a terminal: work that runs longer than a second (`LOOM_PROGRESS_AFTER_MS`)
   * then shows a progress line there that rewrites itself (never with `--json`).
   */
  isTty: boolean;
  /**
   * Keeps the process alive while `loom tail` waits for new events (the stores' poll timers do
   * not hold the event loop); returns the release. The bin passes a ref'd timer.
   */
  keepAlive?: () => () => void;
  /**
   * Resolves when `loom serve` (or `loom tail` without an id) should stop. Default: the
   * process's next SIGINT or SIGTERM.
   */
  untilStopped?: () => Promise<void>;
  /** Colour the status column of tables (the bin: stdout is a terminal and NO_COLOR is unset). */
  color?: boolean;
  /**
   * Asks a person yes or no (`loom fork` of a run whose fork would re-run an approved call).
   * The bin passes it only when stdin and stderr are terminals; without it, such a question is
   * answered by its flag alone (`--allow-rerun`) and refused otherwise.
   */
  confirm?: (question: string) => Promise<boolean>;
}

/** The process's next SIGINT or SIGTERM (Ctrl-C stops `loom serve` cleanly, with exit code 0). */
function untilSignalled(): Promise<void> {
  return new Promise((resolve) => {
    const stop = () => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      resolve();
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
}

/** Events after which `loom tail` stops following: the run ended. */
const terminalEventTypes: ReadonlySet<string> = new Set([
  'execution.completed',
  'execution.failed',
  'execution.cancelled',
  'execution.continued_as_new',
]);

/** The environment variable `--db` falls back to. */
export const dbEnvVar = 'LOOM_DB';

interface GlobalOptions {
  db?: string;
  json?: boolean;
}

function integer(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n)) throw new InvalidArgumentError('not an integer');
  return n;
}

function waitingKind(value: string): RunWaiting {
  if (!(runWaitings as readonly string[]).includes(value)) {
    throw new InvalidArgumentError(`one of ${runWaitings.join(', ')}`);
  }
  return value as RunWaiting;
}

/**
 * `loom runs`: the id-ordered list, or with `--waiting` the runs search (the dashboard's, newest
 * change first: the execution index alone knows what a run waits for), whose cursor `--after`
 * takes back with the same `--waiting`.
 */
async function runsPage(
  view: View,
  options: {
    status?: DetailedExecutionStatus;
    flow?: string;
    waiting?: RunWaiting;
    limit?: number;
    after?: string;
  },
): Promise<RunsPage> {
  const { waiting, ...filter } = options;
  if (waiting === undefined) return view.runs(filter);
  const page = await view.searchRuns({ ...filter, waiting });
  return { runs: page.runs, nextCursor: page.nextCursor ?? undefined };
}

function status(value: string): DetailedExecutionStatus {
  if (!(runStatuses as readonly string[]).includes(value)) {
    throw new InvalidArgumentError(`one of ${runStatuses.join(', ')}`);
  }
  return value as DetailedExecutionStatus;
}

function parseJson(text: string, path: 'payload' | 'record'): JsonValue {
  try {
    return JSON.parse(text) as JsonValue;
  } catch (error) {
    const what = path === 'payload' ? 'the signal payload' : "--record's output";
    throw new LoomError(
      ViewErrorCode.INVALID_ARGUMENT,
      `${what} must be JSON, got ${text}: quote it for the shell, e.g. '{"ok":true}' or '"text"'`,
      { path },
      error,
    );
  }
}

function parsePayload(text: string | undefined): JsonValue {
  return text === undefined ? null : parseJson(text, 'payload');
}

/** `--rerun` / `--record <json>` of `loom approve`: at most one, the recorded output as JSON. */
function resolutionOf(options: { rerun?: boolean; record?: string }): Resolution | undefined {
  if (options.rerun === true && options.record !== undefined) {
    throw new LoomError(
      ViewErrorCode.INVALID_ARGUMENT,
      'give --rerun or --record <output>, not both: re-run the tool, or record what it did',
      { path: 'resolution' },
    );
  }
  if (options.rerun === true) return { kind: 'rerun' };
  if (options.record === undefined) return undefined;
  return { kind: 'record', output: parseJson(options.record, 'record') };
}

/** A log file as `loom export` writes it: one stored event per line. */
function readJsonLines(file: string): StoredEvent[] {
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line, index) => {
      try {
        return JSON.parse(line) as StoredEvent;
      } catch (error) {
        throw new LoomError(
          ViewErrorCode.INVALID_ARGUMENT,
          `${file}:${index + 1} is not JSON: a log file has one event per line, as loom export writes it`,
          { path: 'log', actual: index + 1 },
          error,
        );
      }
    });
}

function json(value: unknown): string {
  return JSON.stringify(value, null, 2);
}

/**
 * Runs the `loom` command with `argv` (without `node` and the script) and returns its exit code
 * (see {@link ExitCode}). Never throws: errors are printed to stderr (as JSON with `--json`).
 *
 * @example
 * const code = await runCli(['runs', '--db', 'sqlite:./loom.db', '--json'], {
 *   stdout: (t) => process.stdout.write(`${t}\n`),
 *   stderr: (t) => process.stderr.write(`${t}\n`),
 *   env: process.env,
 *   isTty: false,
 * });
 */
export async function runCli(argv: readonly string[], io: CliIo): Promise<ExitCode> {
  let exit: ExitCode = ExitCode.ok;
  let asJson = argv.includes('--json');
  const program = new Command('loom')
    .description("Loom's operator command: list, inspect, signal, cancel, approve and verify runs.")
    .option(
      '--db <url>',
      `the database: sqlite:<path> or postgres://…[?schema=name] (default: $${dbEnvVar})`,
    )
    .option('--json', 'machine-readable output on stdout (stable fields)')
    .exitOverride()
    .configureOutput({
      writeOut: (text) => io.stdout(text.trimEnd()),
      writeErr: (text) => io.stderr(text.trimEnd()),
    })
    .showHelpAfterError('(loom --help lists the commands)');

  const globals = (command: Command): { db: string | undefined } => {
    const options = command.optsWithGlobals() as GlobalOptions;
    asJson = options.json === true;
    return { db: options.db ?? io.env[dbEnvVar] };
  };
  const print = (value: unknown, human: () => string) => io.stdout(asJson ? json(value) : human());
  // What a command needs beyond the parsing is imported in its action (the view, the operator, the
  // projection through kysely, the dashboard's hono): `loom --help` and `loom show` load none of
  // what they do not use, where every `loom` call used to load all of it (~550 modules).
  const withView = async <T>(command: Command, work: (view: View) => Promise<T>): Promise<T> => {
    const db = globals(command).db ?? '';
    const { openView } = await import('./open-view.js');
    const view = await openView({ db });
    try {
      return await work(view);
    } finally {
      await view.close();
    }
  };
  const operatorOf = async (command: Command): Promise<Operator> => {
    const db = globals(command).db ?? '';
    const { openOperator } = await import('./open-operator.js');
    return openOperator({ db });
  };
  const by = (given: string | undefined) => given ?? userInfo().username;
  /** Runs `work` under a progress line (a terminal, no --json, after the threshold). */
  const withProgress = async <T>(label: string, work: (progress: Progress) => Promise<T>) => {
    const progress = startProgress(label, {
      stderr: io.stderr,
      enabled: io.isTty && !asJson,
      afterMs: progressAfterMs(io.env),
    });
    try {
      return await work(progress);
    } finally {
      progress.end();
    }
  };
  const eventsRead = (progress: Progress) => (n: number) => progress.update(`${count(n)} events`);

  program
    .command('runs')
    .description('list runs (flows and agent runs), newest status from the execution index')
    .option('--status <status>', `one of ${runStatuses.join(', ')}`, status)
    .option('--flow <name>', 'only runs of this flow (agent runs: agent:<name>)')
    .option(
      '--waiting <kind>',
      `only suspended runs waiting for ${runWaitings.join(', ')} (newest change first)`,
      waitingKind,
    )
    .option('--limit <n>', 'most runs to list (default 50)', integer)
    .option('--after <id>', 'the cursor printed after a full page')
    .action(
      async (
        options: {
          status?: DetailedExecutionStatus;
          flow?: string;
          waiting?: RunWaiting;
          limit?: number;
          after?: string;
        },
        command: Command,
      ) => {
        const { page, spend } = await withView(command, async (view) => {
          const page = await withProgress('reading runs', () => runsPage(view, options));
          const { spendOfRuns } = await import('./projection/run-spend.js');
          return { page, spend: await spendOfRuns(view, page.runs) };
        });
        print(
          {
            runs: page.runs.map((run) => ({ ...run, spend: spend.get(run.id) })),
            nextCursor: page.nextCursor,
          },
          () =>
            formatRuns(
              page.runs,
              page.nextCursor,
              io.color === true,
              spend,
              options.waiting === undefined ? '' : `--waiting ${options.waiting}`,
            ),
        );
      },
    );

  program
    .command('show <id>')
    .description(
      "a run's summary, timeline (steps, waits, signals, children; agent decisions, policy, tools), inbox and approvals",
    )
    .action(async (id: string, _options: unknown, command: Command) => {
      const detail = await withView(command, (view) => view.show(id));
      print(detail, () => formatDetail(detail));
    });

  program
    .command('events <id>')
    .description("a run's events in sequence order")
    .option('--from <sequence>', 'first sequence (default 0)', integer)
    .option('--limit <n>', 'most events', integer)
    .action(async (id: string, options: { from?: number; limit?: number }, command: Command) => {
      const events = await withView(command, (view) =>
        view.events(id, {
          ...(options.from === undefined ? {} : { fromSequence: options.from }),
          ...(options.limit === undefined ? {} : { limit: options.limit }),
        }),
      );
      print(events, () => formatEvents(events));
    });

  program
    .command('tail [id]')
    .description(
      "follow a run's log live, ending when the run ends; without an id, every run's new events until interrupted (with --json: one JSON event per line)",
    )
    .option('--from <sequence>', 'with an id: first sequence (default 0)', integer)
    .option(
      '--after <position>',
      'without an id: start after this log position (default: the current end; 0: everything)',
      integer,
    )
    .action(
      async (
        id: string | undefined,
        options: { from?: number; after?: number },
        command: Command,
      ) => {
        await withView(command, async (view) => {
          let ended: () => void = () => {};
          let failed: (error: unknown) => void = () => {};
          const done = new Promise<void>((resolve, reject) => {
            ended = resolve;
            failed = reject;
          });
          const show = (event: StoredEvent) =>
            io.stdout(
              asJson
                ? JSON.stringify(event)
                : id === undefined
                  ? `${event.executionId}  ${formatEvents([event])}`
                  : formatEvents([event]),
            );
          let subscription: Subscription;
          let catchingUp: Progress | undefined;
          if (id === undefined) {
            const afterPosition =
              options.after ??
              (await withProgress("finding the log's end", (progress) =>
                view.headPosition(eventsRead(progress)),
              ));
            const followed = await view.tailAll(
              (events) => {
                for (const event of events) show(event);
              },
              {
                afterPosition,
                onError: (error) => failed(error),
              },
            );
            subscription = followed.subscription;
            io.stderr(`following every run after log position ${followed.afterPosition}`);
            void (io.untilStopped ?? untilSignalled)().then(ended);
          } else {
            // A long log is caught up on in batches: a progress line after the threshold.
            catchingUp = startProgress(`catching up on ${id}`, {
              stderr: io.stderr,
              enabled: io.isTty && !asJson,
              afterMs: progressAfterMs(io.env),
            });
            const progress = catchingUp;
            subscription = await view.tail(
              id,
              (events) => {
                progress.clear();
                for (const event of events) {
                  show(event);
                  if (terminalEventTypes.has(event.type)) ended();
                }
              },
              {
                ...(options.from === undefined ? {} : { fromSequence: options.from }),
                onError: (error) => failed(error),
                onCatchUp: (read, total) => {
                  progress.update(`${count(read)} of ${count(total)} events`);
                  if (read >= total) progress.end();
                },
              },
            );
          }
          const release = io.keepAlive?.() ?? (() => {});
          try {
            await done;
          } finally {
            catchingUp?.end();
            release();
            await subscription.close();
          }
        });
      },
    );

  program
    .command('export <id>')
    .description(
      "a run's whole log as JSON lines (one stored event per line, hashes included), for a bug report",
    )
    .action(async (id: string, _options: unknown, command: Command) => {
      const events = await withView(command, (view) =>
        withProgress(`exporting ${id}`, (progress) => view.exportLog(id, eventsRead(progress))),
      );
      for (const event of events) io.stdout(JSON.stringify(event));
      io.stderr(`exported ${events.length} events of ${id}`);
    });

  program
    .command('fork <id>')
    .description(
      "a new run from this run's log up to --at <sequence> (steps after it run again); a runtime running its flow picks it up",
    )
    .requiredOption(
      '--at <sequence>',
      'the last event kept (loom events <id> shows sequences)',
      integer,
    )
    .option('--id <newId>', 'the new run id (default fork-<sequence>-of-<id>)')
    .option('--by <name>', 'who forks (default: the OS user), recorded in the fork')
    .option(
      '--allow-rerun',
      'fork even if the fork would run an approved non-rerunnable call again (new idempotency key) without asking; on a terminal you are asked instead',
    )
    .action(
      async (
        id: string,
        options: { at: number; id?: string; by?: string; allowRerun?: boolean },
        command: Command,
      ) => {
        const operator = await operatorOf(command);
        try {
          const fork = (allowRerun: boolean) =>
            operator.fork(id, {
              atSequence: options.at,
              by: by(options.by),
              allowRerun,
              ...(options.id === undefined ? {} : { newId: options.id }),
            });
          let forked: string;
          try {
            forked = await fork(options.allowRerun === true);
          } catch (error) {
            // Say what would run again before forking; a terminal asks, a script needs the flag.
            if (!isLoomError(error, ViewErrorCode.FORK_WOULD_RERUN) || io.confirm === undefined)
              throw error;
            io.stderr(`loom: ${error.message}`);
            if (!(await io.confirm('Fork anyway and let it run those calls again? [y/N] '))) {
              throw new LoomError(
                ViewErrorCode.FORK_WOULD_RERUN,
                `not forked: ${id} at ${options.at} would re-run approved calls`,
                error.fields,
              );
            }
            forked = await fork(true);
          }
          print(
            { executionId: forked, forkedFrom: id, atSequence: options.at },
            () => `forked ${id} at sequence ${options.at} as ${forked}`,
          );
        } finally {
          await operator.close();
        }
      },
    );

  program
    .command('replay <log>')
    .description(
      "re-fold a recorded log (a file from `loom export`, or a run id read from --db) with today's flows; exit 1 if they no longer fit it",
    )
    .requiredOption(
      '--flows <module>',
      'an ES module whose exports are the flows (defineFlow) and agents (defineAgent)',
    )
    .action(async (log: string, options: { flows: string }, command: Command) => {
      const { flows, agents } = await deployedOf(options.flows);
      const events = existsSync(log)
        ? readJsonLines(log)
        : await withView(command, (view) =>
            withProgress(`reading ${log}`, (progress) => view.exportLog(log, eventsRead(progress))),
          );
      const { replayLog } = await import('./replay-log.js');
      const report = await withProgress(`replaying ${count(events.length)} events`, () =>
        replayLog(events, flows, { agents }),
      );
      print(report, () =>
        report.ok
          ? `ok: ${report.executionId} (${report.flow}), ${report.recordedEvents} events replayed with today's code` +
            (report.next === undefined
              ? ''
              : `; it would write ${report.next.map((e) => e.type).join(', ')} next`)
          : `DIVERGED: ${report.executionId} (${report.flow}) at sequence ${report.divergence?.sequence}: ${report.divergence?.message}`,
      );
      if (!report.ok) exit = ExitCode.failed;
    });

  addWorkerCommand(program, {
    db: (command) => globals(command).db ?? '',
    print,
    stderr: io.stderr,
    untilStopped: io.untilStopped ?? untilSignalled,
  });
  addChatCommand(program, {
    db: (command) => globals(command).db ?? '',
    print,
    untilStopped: io.untilStopped ?? untilSignalled,
  });

  program
    .command('queues')
    .description('every queue: depth (waiting), claimed (running), completed, failed, cancelled')
    .action(async (_options: unknown, command: Command) => {
      const queues = await withView(command, (view) => view.queues());
      print(queues, () => formatQueues(queues));
    });

  program
    .command('schedules')
    .description('schedules that fire: expression, flow, next and last firing')
    .action(async (_options: unknown, command: Command) => {
      const schedules = await withView(command, (view) => view.schedules());
      print(schedules, () => formatSchedules(schedules));
    });

  program
    .command('resume <id>')
    .description(
      'resume a run now on a process running its flow: takes its fence (a stuck owner stops) and makes it due',
    )
    .option('--by <name>', 'who resumes (default: the OS user), recorded in the log')
    .action(async (id: string, options: { by?: string }, command: Command) => {
      const operator = await operatorOf(command);
      try {
        const resumed = await operator.resume(id, { by: by(options.by) });
        print(
          resumed,
          () =>
            `resumed ${id} (it was ${resumed.was}): the next timer poll of a runtime running its flow replays it`,
        );
      } finally {
        await operator.close();
      }
    });

  program
    .command('retry <id>')
    .description(
      'retry a failed run from its failed step on a process running its flow (deploy the fix first)',
    )
    .option('--by <name>', 'who retries (default: the OS user), recorded in the log')
    .option('--reason <text>', 'why, recorded in the log')
    .action(async (id: string, options: { by?: string; reason?: string }, command: Command) => {
      const operator = await operatorOf(command);
      try {
        const retried = await operator.retry(id, {
          by: by(options.by),
          ...(options.reason === undefined ? {} : { reason: options.reason }),
        });
        print(
          retried,
          () =>
            `retried ${id}: the next timer poll of a runtime running its flow replays it and runs its failed step again`,
        );
      } finally {
        await operator.close();
      }
    });

  program
    .command('approvals')
    .description('approvals waiting for a person, across runs')
    .action(async (_options: unknown, command: Command) => {
      const approvals = await withView(command, (view) => view.pendingApprovals());
      print(approvals, () => formatApprovals(approvals));
    });

  program
    .command('questions')
    .description('ask_human questions waiting for an answer, across runs')
    .action(async (_options: unknown, command: Command) => {
      const questions = await withView(command, (view) => view.pendingQuestions());
      print(questions, () => formatQuestions(questions));
    });

  program
    .command('answer <questionId> <text>')
    .description(
      'answer a pending ask_human question (ids: loom questions); the run continues where its agent runs, and the model gets the answer',
    )
    .option('--by <name>', 'who answers (default: the OS user)')
    .action(async (questionId: string, text: string, options: { by?: string }, self: Command) => {
      const operator = await operatorOf(self);
      try {
        const answeredBy = by(options.by);
        await operator.answer(questionId, { by: answeredBy, text });
        print(
          { questionId, answered: true, by: answeredBy },
          () => `answered ${questionId} (by ${answeredBy})`,
        );
      } finally {
        await operator.close();
      }
    });

  program
    .command('signal <id> <name> [payload]')
    .description('send a signal (payload: JSON, default null) to a run')
    .option('--key <idempotencyKey>', 'a repeated key is delivered once')
    .action(
      async (
        id: string,
        name: string,
        payloadText: string | undefined,
        options: { key?: string },
        command: Command,
      ) => {
        const payload = parsePayload(payloadText);
        const operator = await operatorOf(command);
        try {
          const sent = await operator.signal(
            id,
            name,
            payload,
            options.key === undefined ? {} : { idempotencyKey: options.key },
          );
          print({ executionId: id, name, ...sent }, () =>
            sent.duplicate
              ? `signal '${name}' was already sent with this key (signal ${sent.signalId})`
              : `signal '${name}' sent to ${id} (signal ${sent.signalId})`,
          );
        } finally {
          await operator.close();
        }
      },
    );

  program
    .command('cancel <id>')
    .description('cancel a run (it ends with execution.cancelled)')
    .option('--by <name>', 'who cancels (default: the OS user)')
    .option('--reason <text>', 'why, recorded in the log')
    .action(async (id: string, options: { by?: string; reason?: string }, command: Command) => {
      const operator = await operatorOf(command);
      try {
        const cancelled = await operator.cancel(id, {
          by: by(options.by),
          ...(options.reason === undefined ? {} : { reason: options.reason }),
        });
        print({ executionId: id, cancelled }, () =>
          cancelled ? `cancelled ${id}` : `${id} had already ended: nothing to cancel`,
        );
      } finally {
        await operator.close();
      }
    });

  program
    .command('forget <subject>')
    .description(
      "erase a subject (@loom/plugin-crypto): destroy its data keys in this database's keyring, so its encrypted fields read as Erased everywhere; appends an erasure receipt",
    )
    .action(async (subject: string, _options: unknown, command: Command) => {
      const target = parseDbUrl(globals(command).db);
      const { forgetSubject } = await import('./internal/forget-subject.js');
      const receipt = await forgetSubject(target, subject);
      print(receipt, () =>
        receipt.alreadyForgotten
          ? `${subject} was already forgotten (receipt in ${receipt.receiptExecutionId})`
          : `forgot ${subject}: ${receipt.keysDestroyed} data key(s) destroyed, receipt in ${receipt.receiptExecutionId}`,
      );
    });

  program
    .command('prune')
    .description(
      'remove runs that ended before a time from the log (events, index rows, inboxes, snapshots), each batch behind a receipt in loom.pruned that verify --all checks; running and suspended runs are never touched (exit 1 if a broken chain was kept)',
    )
    .requiredOption(
      '--ended-before <time>',
      'an ISO time (2026-11-01T00:00:00Z) or a duration before now (30d, 12h)',
    )
    .option('--dry-run', 'list what would be removed, remove nothing')
    .option('--batch <n>', 'runs per receipt, 1 to 1000 (default 1000)', integer)
    .action(
      async (
        options: { endedBefore: string; dryRun?: boolean; batch?: number },
        command: Command,
      ) => {
        const target = parseDbUrl(globals(command).db);
        const { parseEndedBefore, pruneRuns } = await import('./internal/prune-runs.js');
        const endedBeforeMs = parseEndedBefore(options.endedBefore, Date.now());
        const outcome = await pruneRuns(target, {
          endedBeforeMs,
          dryRun: options.dryRun === true,
          ...(options.batch === undefined ? {} : { batch: options.batch }),
        });
        const before = new Date(endedBeforeMs).toISOString();
        print(outcome, () =>
          [
            outcome.dryRun
              ? `would prune ${count(outcome.pruned.length)} runs that ended before ${before}`
              : `pruned ${count(outcome.pruned.length)} runs that ended before ${before}` +
                (outcome.receipts.length === 0
                  ? ''
                  : `, receipts ${outcome.receipts.join(', ')} in ${outcome.receiptLog}`),
            ...outcome.skipped.map((s) => `kept ${s.executionId}: ${s.reason}`),
          ].join('\n'),
        );
        if (outcome.skipped.some((s) => s.reason === 'chain_broken')) exit = ExitCode.failed;
      },
    );

  for (const decision of ['approve', 'reject'] as const) {
    const command = program
      .command(`${decision} <approvalId>`)
      .description(
        `${decision} a pending approval (ids: loom approvals); the run continues where its agent runs`,
      )
      .option('--by <name>', 'who decides (default: the OS user)')
      .option('--note <text>', 'recorded with the decision');
    if (decision === 'reject')
      command.option('--end-run', 'end the run (approval_rejected) instead of telling the model');
    else
      command
        .option(
          '--rerun',
          'interrupted_side_effect approvals: call the tool again (same idempotency key)',
        )
        .option(
          '--record <output>',
          'interrupted_side_effect approvals: do not call the tool; record this JSON as its output',
        );
    command.action(
      async (
        approvalId: string,
        options: { by?: string; note?: string; endRun?: boolean; rerun?: boolean; record?: string },
        self: Command,
      ) => {
        const resolution = resolutionOf(options);
        const operator = await operatorOf(self);
        try {
          const decided = {
            by: by(options.by),
            ...(options.note === undefined ? {} : { note: options.note }),
          };
          if (decision === 'approve')
            await operator.approve(approvalId, {
              ...decided,
              ...(resolution === undefined ? {} : { resolution }),
            });
          else
            await operator.reject(approvalId, {
              ...decided,
              ...(options.endRun === true ? { endRun: true } : {}),
            });
          const word = decision === 'approve' ? 'approved' : 'rejected';
          print(
            { approvalId, decision: word, by: decided.by },
            () => `${word} ${approvalId} (by ${decided.by})`,
          );
        } finally {
          await operator.close();
        }
      },
    );
  }

  program
    .command('serve')
    .description(
      'the dashboard: a local web page with runs, timelines, events, and approve/reject/cancel/signal buttons',
    )
    .option(
      '--port <n>',
      `port to listen on; 0 picks a free one (default ${dashboardPortDefault})`,
      integer,
    )
    .option('--host <host>', 'address to listen on (default 127.0.0.1; others need --allow-remote)')
    .option('--allow-remote', 'allow a --host that other machines can reach')
    .option('--token <token>', `the mutation token (default $${tokenEnvVar}, else a random one)`)
    .option('--read-only', 'no mutations: no buttons, and the endpoints answer 403')
    .action(
      async (
        options: {
          port?: number;
          host?: string;
          allowRemote?: boolean;
          token?: string;
          readOnly?: boolean;
        },
        command: Command,
      ) => {
        const token = options.token ?? io.env[tokenEnvVar];
        const db = globals(command).db ?? '';
        const { startDashboard } = await import('./start-dashboard.js');
        const dashboard = await startDashboard({
          db,
          ...(options.port === undefined ? {} : { port: options.port }),
          ...(options.host === undefined ? {} : { host: options.host }),
          ...(options.allowRemote === true ? { allowRemote: true } : {}),
          ...(token === undefined || token === '' ? {} : { token }),
          ...(options.readOnly === true ? { readOnly: true } : {}),
        });
        try {
          const { url, urlWithToken, readOnly } = dashboard;
          print({ url, urlWithToken, token: dashboard.token, readOnly }, () =>
            [
              `loom: dashboard on ${url}${readOnly ? ' (read-only)' : ''}`,
              ...(readOnly
                ? []
                : [
                    `loom: token ${dashboard.token}`,
                    `loom: open ${urlWithToken} to act (the token stays in the page, not the server's logs)`,
                  ]),
              'loom: Ctrl-C stops it',
            ].join('\n'),
          );
          await (io.untilStopped ?? untilSignalled)();
        } finally {
          await dashboard.close();
        }
      },
    );

  addProjectionCommands(program, {
    db: (command) => globals(command).db ?? '',
    print,
    stderr: io.stderr,
    untilStopped: io.untilStopped ?? untilSignalled,
    ...(io.keepAlive === undefined ? {} : { keepAlive: io.keepAlive }),
  });

  program
    .command('verify [id]')
    .description(
      "recompute hash chains: one run's, or every run's with --all (exit 1 if one is broken)",
    )
    .option('--all', 'every execution in the index')
    .action(async (id: string | undefined, options: { all?: boolean }, command: Command) => {
      if ((id === undefined) === (options.all !== true)) {
        throw new LoomError(ViewErrorCode.INVALID_ARGUMENT, 'give one execution id or --all', {
          path: 'id',
        });
      }
      if (id !== undefined) {
        const result = await withView(command, (view) => view.verify(id));
        print(result, () =>
          result.ok
            ? `ok: ${id}, ${result.events} events chained`
            : `BROKEN: ${id} at sequence ${result.brokenAtSequence}: ${result.reason}`,
        );
        if (!result.ok) exit = ExitCode.failed;
        return;
      }
      const result = await withView(command, (view) =>
        withProgress('verifying', (progress) =>
          view.verifyAll((checked) => progress.update(`${count(checked)} executions checked`)),
        ),
      );
      io.stderr(`verified ${result.checked} executions, ${result.broken.length} broken`);
      print(result, () =>
        result.broken.length === 0
          ? `ok: ${result.checked} executions` +
            (result.receipts.events === 0
              ? ''
              : `; ${result.receipts.prunedRuns} pruned runs listed in ${result.receipts.events} chained receipts`)
          : result.broken
              .map((b) => `BROKEN: ${b.executionId} at sequence ${b.brokenAtSequence}: ${b.reason}`)
              .join('\n'),
      );
      if (result.broken.length > 0) exit = ExitCode.failed;
    });

  try {
    await program.parseAsync([...argv], { from: 'user' });
    return exit;
  } catch (error) {
    if (error instanceof CommanderError) {
      // Help and version are successful exits; any other parse error is a usage error.
      return error.exitCode === 0 ? ExitCode.ok : ExitCode.usage;
    }
    const code = isLoomError(error) ? error.code : undefined;
    const message = error instanceof Error ? error.message : String(error);
    if (asJson) {
      io.stderr(
        json({
          error: {
            code: code ?? 'UNEXPECTED',
            message,
            ...(isLoomError(error) ? { fields: error.fields } : {}),
          },
        }),
      );
    } else {
      io.stderr(`loom: ${message}${code === undefined ? '' : ` [${code}]`}`);
    }
    return exitCodeOf(code);
  }
}
