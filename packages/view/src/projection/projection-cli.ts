import type { Command } from 'commander';
import { InvalidArgumentError } from 'commander';
import { formatTable } from '../internal/format.js';
import type { SpendGroup, SpendRow } from './projections.js';
import type { ProjectorStats } from './projector.js';

/** What the projection commands need from `runCli`. */
export interface ProjectionCliContext {
  /** The `--db` (or `$LOOM_DB`) of this invocation; sets the `--json` mode as a side effect. */
  db(command: Command): string;
  print(value: unknown, human: () => string): void;
  stderr(text: string): void;
  /** Resolves when the process is asked to stop (SIGINT, SIGTERM). */
  untilStopped(): Promise<void>;
  keepAlive?: () => () => void;
}

function positive(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError('a positive integer');
  return n;
}

function group(value: string): SpendGroup {
  if (!['run', 'agent', 'day', 'model'].includes(value)) {
    throw new InvalidArgumentError('one of run, agent, day, model');
  }
  return value as SpendGroup;
}

function formatSpendRows(by: SpendGroup, rows: readonly SpendRow[]): string {
  if (rows.length === 0) return 'no model calls recorded';
  return formatTable(
    [by.toUpperCase(), 'CALLS', 'INPUT TOKENS', 'OUTPUT TOKENS', 'COST USD', 'UNKNOWN COST'],
    rows.map((r) => [
      r.key,
      String(r.modelCalls),
      String(r.inputTokens),
      String(r.outputTokens),
      r.costUsd.toFixed(4),
      r.costUnknownCalls === 0 ? '' : `${r.costUnknownCalls} calls`,
    ]),
  );
}

/**
 * `loom projections init|run|status` and `loom spend`. Each action imports the projection (kysely)
 * itself: defining the commands, as every `loom` call does, loads none of it.
 */
export function addProjectionCommands(program: Command, cli: ProjectionCliContext): void {
  const projections = program
    .command('projections')
    .description('projection tables kept by a projector: runs, approvals, model spend');

  projections
    .command('init')
    .description('create the projection tables beside a migrated Loom store (the one setup step)')
    .action(async (_options: unknown, command: Command) => {
      const db = cli.db(command);
      const { initProjections } = await import('./projections.js');
      const result = await initProjections({ db });
      cli.print(result, () =>
        result.created
          ? "created the projection tables: keep them current with 'loom projections run'"
          : 'the projection tables exist already: nothing changed',
      );
    });

  projections
    .command('run')
    .description(
      'fold the log into the projection tables from their checkpoint: follows new events until interrupted, or --once up to the current end',
    )
    .option('--once', 'catch up to the log’s current end, then exit')
    .option('--batch <n>', 'most events per transaction (default 500)', positive)
    .option('--progress', 'a line on stderr after each transaction')
    .action(
      async (options: { once?: boolean; batch?: number; progress?: boolean }, command: Command) => {
        const db = cli.db(command);
        const target = {
          db,
          ...(options.batch === undefined ? {} : { batchSize: options.batch }),
          ...(options.progress === true
            ? {
                onFlush: (stats: ProjectorStats) =>
                  cli.stderr(
                    `flushed ${stats.flushes}: ${stats.applied} events, checkpoint at position ${stats.position}`,
                  ),
              }
            : {}),
        };
        const { catchUpProjections, startProjector } = await import('./projections.js');
        if (options.once === true) {
          const stats = await catchUpProjections(target);
          cli.print(
            stats,
            () =>
              `projected ${stats.applied} events in ${stats.flushes} transactions; checkpoint at position ${stats.position}`,
          );
          return;
        }
        const projector = await startProjector(target);
        cli.stderr(`projecting from log position ${projector.stats.position}; Ctrl-C stops`);
        const release = cli.keepAlive?.() ?? (() => {});
        try {
          await Promise.race([projector.done, cli.untilStopped()]);
        } finally {
          release();
          await projector.close();
        }
        const stats = projector.stats;
        cli.print(
          stats,
          () =>
            `projected ${stats.applied} events in ${stats.flushes} transactions; checkpoint at position ${stats.position}`,
        );
      },
    );

  projections
    .command('status')
    .description(
      'where the projector stands: checkpoint position and events folded, runs per status',
    )
    .action(async (_options: unknown, command: Command) => {
      const db = cli.db(command);
      const { openProjections } = await import('./projections.js');
      const opened = await openProjections({ db });
      try {
        const checkpoint = await opened.checkpoint();
        const counts = await opened.counts();
        cli.print(
          { checkpoint, counts },
          () =>
            `checkpoint at position ${checkpoint.position}, ${checkpoint.events} events folded\n` +
            Object.entries(counts)
              .map(([status, n]) => `${status}: ${n}`)
              .join('\n'),
        );
      } finally {
        await opened.close();
      }
    });

  program
    .command('spend')
    .description(
      'model spend by run, agent, UTC day or model: from the spend projection when it is current, else folded from the logs',
    )
    .option('--by <group>', 'run, agent, day or model (default day)', group)
    .option('--agent <name>', "only this agent's runs")
    .option('--from <day>', 'from this UTC day, YYYY-MM-DD')
    .option('--to <day>', 'to this UTC day, YYYY-MM-DD')
    .action(
      async (
        options: { by?: SpendGroup; agent?: string; from?: string; to?: string },
        command: Command,
      ) => {
        const by = options.by ?? 'day';
        const query = {
          by,
          ...(options.agent === undefined ? {} : { agent: options.agent }),
          ...(options.from === undefined ? {} : { fromDay: options.from }),
          ...(options.to === undefined ? {} : { toDay: options.to }),
        };
        const db = cli.db(command);
        const [{ currentProjectionsOf, openView }, { spendFromLogs }] = await Promise.all([
          import('../open-view.js'),
          import('./run-spend.js'),
        ]);
        const view = await openView({ db });
        try {
          const projections = await currentProjectionsOf(view);
          if (projections === undefined) {
            // As `loom runs` does: a projection that is missing or behind never shows less than
            // the log; folding every agent run's log is slower on a large database.
            cli.stderr(
              'loom: the spend projection is not initialised or not current: folding the logs (loom projections init, then run, to keep it current)',
            );
          }
          const rows =
            projections === undefined
              ? await spendFromLogs(view, query)
              : await projections.spend(query);
          cli.print(rows, () => formatSpendRows(by, rows));
        } finally {
          await view.close();
        }
      },
    );
}
