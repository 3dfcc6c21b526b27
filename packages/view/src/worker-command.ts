import type { AgentRuntime } from '@loom/agent-loop';
import type { Backend } from '@loom/event-runtime';
import type { DrainReport, Runtime, WorkflowDefinition } from '@loom/workflow-runtime';
import type { Command } from 'commander';
import { LoomError, ViewErrorCode } from './errors.js';
import { type DbTarget, parseDbUrl } from './internal/db-url.js';
import { deployedOf } from './internal/deployed.js';
import { startHealthServer } from './internal/health-server.js';

/** `loom worker --drain-timeout`'s default: what a worker may take to finish after SIGTERM. */
export const drainTimeoutMsDefault = 30_000;

/** What `loom worker` needs from the command around it. */
export interface WorkerCommandDeps {
  db(command: Command): string;
  /** Writes a line to stdout: the value with `--json`, else the text. */
  print(value: unknown, human: () => string): void;
  stderr(text: string): void;
  /** Resolves on the signal to drain (the bin: the next SIGTERM or SIGINT). */
  untilStopped(): Promise<void>;
}

interface WorkerFlags {
  flows: string;
  queues?: string;
  tags?: string;
  drainTimeout?: string;
  leaseTtl?: string;
  concurrency?: string;
  poll?: string;
  migrate?: boolean;
  healthPort?: string;
  healthHost?: string;
}

/** A flag's value as a whole number at least `min`, else `INVALID_ARGUMENT` naming the flag. */
function whole(flag: string, value: string | undefined, min: number): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (value.trim() === '' || !Number.isSafeInteger(n) || n < min) {
    throw new LoomError(
      ViewErrorCode.INVALID_ARGUMENT,
      `--${flag} must be a whole number${min > 0 ? ` of at least ${min}` : ' (0 or more)'}, got '${value}'`,
      { path: flag, actual: value },
    );
  }
  return n;
}

/** A comma-separated flag (`--queues`, `--tags`) as its names; an empty name is refused. */
function nameList(flag: string, value: string | undefined): string[] {
  if (value === undefined) return [];
  const names = value.split(',').map((name) => name.trim());
  if (names.some((name) => name === '')) {
    throw new LoomError(
      ViewErrorCode.INVALID_ARGUMENT,
      `--${flag} takes names separated by commas, got '${value}'`,
      { path: flag, actual: value },
    );
  }
  return names;
}

/** Creates (or brings up to date) the Loom schema, for `--migrate`. */
async function migrate(target: DbTarget): Promise<void> {
  if (target.kind === 'sqlite') {
    const { openSqlite } = await import('@loom/event-runtime/sqlite');
    await openSqlite({ path: target.path, migrate: true }).close();
    return;
  }
  const { openPostgres } = await import('@loom/event-runtime/postgres');
  const backend = await openPostgres({
    connectionString: target.connectionString,
    migrate: true,
    ...(target.schema === undefined ? {} : { schema: target.schema }),
  });
  await backend.close();
}

function describeDrain(nodeId: string, report: DrainReport): string {
  return (
    `loom: worker ${nodeId} drained: ${report.inFlight} in flight, ${report.finished} finished, ` +
    `${report.handedBack} handed back, ${report.queueItemsHandedBack} queue items handed back`
  );
}

/**
 * `loom worker`: a worker process on a shared database (see `startWorker` of
 * `@loom/workflow-runtime`) running the flows a module exports. It drains on SIGTERM / SIGINT and
 * exits 0; a second signal during the drain ends it at once.
 */
export function addWorkerCommand(program: Command, deps: WorkerCommandDeps): void {
  program
    .command('worker')
    .description(
      'run flows: claim queue items, fire due timers, take over executions of dead workers; SIGTERM drains and exits 0',
    )
    .requiredOption('--flows <module>', 'an ES module whose exports are the flows (defineFlow)')
    .option('--queues <names>', 'queues to work, separated by commas (default: none)')
    .option(
      '--tags <tags>',
      "this worker's tags, separated by commas: it runs flows whose placement asks for them (default: none)",
    )
    .option(
      '--drain-timeout <ms>',
      `after SIGTERM, how long executions in flight may finish before they are handed back (default ${drainTimeoutMsDefault})`,
    )
    .option(
      '--lease-ttl <ms>',
      'lease and queue-claim time to live: how soon a killed worker’s work is taken over (default 30000)',
    )
    .option('--concurrency <n>', 'queue items this worker runs at once, per queue (default 100)')
    .option(
      '--poll <ms>',
      'how often an idle worker looks for queue items and due timers (default 1000)',
    )
    .option('--migrate', 'create or update the Loom schema first (else it must exist)')
    .option(
      '--health-port <port>',
      'serve GET /healthz (alive) and GET /readyz (200 when the store answers and the node holds its claim, else 503) on this port (0: any free port)',
    )
    .option('--health-host <address>', 'the address --health-port listens on (default 0.0.0.0)')
    .action(async (flags: WorkerFlags, command: Command) => {
      const drainTimeoutMs = whole('drain-timeout', flags.drainTimeout, 0) ?? drainTimeoutMsDefault;
      const leaseTtlMs = whole('lease-ttl', flags.leaseTtl, 1);
      const concurrency = whole('concurrency', flags.concurrency, 1);
      const pollMs = whole('poll', flags.poll, 1);
      const healthPort = whole('health-port', flags.healthPort, 0);
      if (healthPort !== undefined && healthPort > 65_535) {
        throw new LoomError(
          ViewErrorCode.INVALID_ARGUMENT,
          `--health-port must be a port number (0 to 65535), got '${flags.healthPort}'`,
          { path: 'health-port', actual: flags.healthPort },
        );
      }
      const queues = nameList('queues', flags.queues);
      const tags = nameList('tags', flags.tags);
      // Listening before the boot: a SIGTERM that comes while it connects drains right after.
      const stopped = deps.untilStopped();
      const target = parseDbUrl(deps.db(command));
      // Flows, agents, or both (deployedOf refuses a module that exports neither).
      const { flows, agents } = await deployedOf(flags.flows);
      if (flags.migrate === true) await migrate(target);
      // The runtimes load here, not when the command is defined (as every `loom` call does).
      const [
        { agentFlowName, createAgentRuntime, globalTracer },
        { startWorker },
        { openBackend },
      ] = await Promise.all([
        import('@loom/agent-loop'),
        import('@loom/workflow-runtime'),
        import('./internal/open-backend.js'),
      ]);
      let agentRuntime: AgentRuntime | undefined;
      // The agents' spans go to the global OpenTelemetry provider, if the process registered one
      // (NODE_OPTIONS='--import ./instrumentation.mjs'): a worker runs no code of the user's own.
      const tracer = agents.length === 0 ? undefined : await globalTracer('loom-worker');
      const backend: Backend = await openBackend(target, false);
      const worker = await startWorker({
        backend,
        flows: flows as unknown as WorkflowDefinition<never, unknown>[],
        // The agents' flows are registered before the first recovery round, so a run a dead
        // worker left is taken over at once, like a flow's execution.
        ...(agents.length === 0
          ? {}
          : {
              setup: (runtime: Runtime) => {
                agentRuntime = createAgentRuntime({
                  flows: runtime,
                  agents,
                  ...(tracer === undefined ? {} : { tracer }),
                });
              },
            }),
        queues,
        tags,
        drainTimeoutMs,
        ...(leaseTtlMs === undefined ? {} : { leaseTtlMs }),
        ...(pollMs === undefined ? {} : { timerPollMs: pollMs }),
        work: {
          ...(leaseTtlMs === undefined ? {} : { claimTtlMs: leaseTtlMs }),
          ...(concurrency === undefined ? {} : { workerConcurrencyMax: concurrency }),
          ...(pollMs === undefined ? {} : { pollMs }),
        },
        onError: (error) =>
          deps.stderr(`loom: worker: ${error instanceof Error ? error.message : String(error)}`),
      });
      const { nodeId } = worker;
      let draining = false;
      const health =
        healthPort === undefined
          ? undefined
          : await startHealthServer(
              {
                health: (options) => worker.runtime.health(options),
                get draining() {
                  return draining;
                },
              },
              healthPort,
              flags.healthHost ?? '0.0.0.0',
            );
      const names = [...flows.map((flow) => flow.name), ...agents.map(agentFlowName)];
      const agentNames = agents.map((agent) => agent.name);
      deps.print(
        {
          event: 'ready',
          nodeId,
          flows: names,
          agents: agentNames,
          queues,
          tags,
          ...(health === undefined ? {} : { healthPort: health.port }),
        },
        () =>
          `loom: worker ${nodeId} ready: flows ${names.join(', ')}; ` +
          (agentNames.length === 0 ? '' : `agents ${agentNames.join(', ')}; `) +
          `queues ${queues.length === 0 ? '(none)' : queues.join(', ')}; ` +
          `tags ${tags.length === 0 ? '(none)' : tags.join(', ')}` +
          (health === undefined ? '' : `; health port ${health.port} (/healthz, /readyz)`),
      );
      await stopped;
      // Not ready from the first signal: the orchestrator stops sending work while it drains.
      draining = true;
      deps.print(
        { event: 'draining', nodeId, drainTimeoutMs },
        () => `loom: worker ${nodeId} draining (up to ${drainTimeoutMs} ms)`,
      );
      const report = await worker.drain();
      // The isolated tools' child processes, if the agents have any.
      await agentRuntime?.close();
      await health?.close();
      deps.print({ event: 'drained', nodeId, ...report }, () => describeDrain(nodeId, report));
    });
}
