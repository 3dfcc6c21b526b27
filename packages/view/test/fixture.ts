// A store populated by real flows and a real agent run, for the view and CLI tests.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { type AgentRuntime, createAgentRuntime, defineAgent, defineTool } from '@loom/agent-loop';
import type { Backend } from '@loom/event-runtime';
import { spawnTestProcess } from '@loom/event-runtime/testing';
import { StubModel } from '@loom/reasoning';
import { createRuntime, defineFlow, type Runtime, terminalError } from '@loom/workflow-runtime';

export const mailToken = 'MAIL_SENT_OK';
/** Mails the agent's tool really sent (in this process). */
export const sentMails: unknown[] = [];

export const order = defineFlow(
  { name: 'order', version: '2' },
  async (ctx, input: { id: string }) => {
    const priced = await ctx.step('price', () => ({ id: input.id, total: 42 }));
    return ctx.step('receipt', () => ({ ...priced, paid: true }));
  },
);

export const failing = defineFlow({ name: 'charge' }, async (ctx) =>
  ctx.step('charge-card', () => {
    throw terminalError('card declined');
  }),
);

export const waiting = defineFlow({ name: 'waiter' }, async (ctx) => {
  await ctx.step('prepare', () => 'ready');
  const got = await ctx.waitForSignal<{ go: boolean }>('go');
  return got.received ? { go: got.payload.go } : { go: false };
});

const kid = defineFlow({ name: 'kid' }, async (ctx, input: number) =>
  ctx.step('double', () => input * 2),
);
export const parent = defineFlow({ name: 'parent' }, async (ctx) => {
  const doubled = await ctx.child(kid, 21);
  return { doubled };
});

const mail = defineTool({
  name: 'send_mail',
  description: 'Send a mail',
  input: { type: 'object', properties: { to: { type: 'string' } }, required: ['to'] },
  sideEffect: 'remote_mutation',
  run: async (input) => {
    sentMails.push(input);
    return mailToken;
  },
});

// Answers by what the model was shown, not by call count: a resumed run asks afresh.
const model = new StubModel({
  script: (request) =>
    JSON.stringify(request.messages).includes(mailToken)
      ? { text: 'mailed ana' }
      : { toolCalls: [{ tool: 'send_mail', input: { to: 'ana' } }] },
});
export const mailer = defineAgent({
  name: 'mailer',
  model,
  instructions: 'mail people',
  tools: [mail],
});

/** An agent whose model asks a person (ask_human) which colour, then paints with the answer. */
export const asker = defineAgent({
  name: 'asker',
  model: new StubModel({
    script: (request) =>
      JSON.stringify(request.messages).includes('teal')
        ? { text: 'painting it teal' }
        : { toolCalls: [{ tool: 'ask_human', input: { question: 'Which colour, exactly?' } }] },
  }),
  instructions: 'Ask which colour, then paint.',
  tools: [],
  askHuman: true,
});

export const allFlows = [order, failing, waiting, kid, parent];

export interface Running {
  flows: Runtime;
  agents: AgentRuntime;
}

/** A runtime that runs every fixture flow and the agent, on `backend`. */
export function runtimeOn(backend: Backend): Running {
  const flows = createRuntime({ backend, flows: allFlows, timerPollMs: 0 });
  return { flows, agents: createAgentRuntime({ flows, agents: [mailer] }) };
}

/** Polls `probe` until it returns something (bounded: real time, 10 s). */
export async function eventually<T>(probe: () => Promise<T | undefined>, what: string): Promise<T> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Settles `result` while asking `flows` to wake due executions (bounded: real time, 10 s). */
async function waking<T>(flows: Runtime, result: Promise<T>): Promise<T> {
  let settled = false;
  const tracked = result.finally(() => {
    settled = true;
  });
  const pause = () => new Promise((resolve) => setTimeout(resolve, 20));
  const deadline = Date.now() + 10_000;
  while (!settled) {
    if (Date.now() > deadline) throw new Error('timed out waiting for a woken execution to settle');
    await flows.wakeDue();
    await Promise.race([tracked.catch(() => undefined), pause()]);
  }
  return tracked;
}

/**
 * Runs every kind of execution the view shows: a completed two-step order, a failed charge, a
 * flow waiting for a signal (twice: one to signal, one to cancel), a parent with a child, and an
 * agent run waiting for approval.
 */
export async function populate({ flows, agents }: Running, backend: Backend): Promise<void> {
  const log = (what: string) =>
    process.env.LOOM_VIEW_DEBUG && console.error(`populate ${what} ${new Date().toISOString()}`);
  log('order');
  await (await flows.start(order, { id: '7' }, { executionId: 'order-7' })).result();
  await (await flows.start(failing, null, { executionId: 'charge-1' }))
    .result()
    .catch(() => undefined);
  log('waiting');
  await flows.start(waiting, null, { executionId: 'wait-signal' });
  await flows.start(waiting, null, { executionId: 'wait-cancel' });
  log('parent');
  // Polling is off (timerPollMs 0): a parent that suspended on its child before the child ended
  // wakes only when someone asks, as the tests do with `wakeDue()`.
  await waking(flows, (await flows.start(parent, null, { executionId: 'parent-1' })).result());
  log('agent');
  await agents.start(mailer, 'mail ana', { runId: 'agent-1' });
  for (const id of ['wait-signal', 'wait-cancel', 'agent-1']) {
    await eventually(async () => {
      const suspended = await backend.events.findExecutions({ status: 'suspended' });
      return suspended.some((row) => row.executionId === id) ? true : undefined;
    }, `${id} suspended`);
  }
  log('idle');
  await flows.idle();
  log('done');
}

const bin = fileURLToPath(new URL('../dist/bin.js', import.meta.url));

/** The built `loom` binary, run as a child process. */
export async function loom(
  args: readonly string[],
  env: Record<string, string> = {},
  onStdout?: (stdoutSoFar: string) => void,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  if (!existsSync(bin)) throw new Error(`${bin} is missing: run pnpm build first`);
  const run = spawnTestProcess(bin, {
    args,
    nodeArgs: [],
    inheritEnv: false,
    env: { PATH: process.env.PATH ?? '', ...env },
    name: 'loom',
    deadlineMs: 30_000,
  });
  // The harness's own listener came first: stdout() already holds the chunk.
  if (onStdout !== undefined) run.child.stdout?.on('data', () => onStdout(run.stdout()));
  const { code } = await run.exit;
  return { code, stdout: run.stdout(), stderr: run.stderr() };
}

/** Longest one in-process `loom` call may take: the spawned binary's own deadline. */
const inProcessDeadlineMs = 30_000;

/**
 * The `loom` command run in this process: `runCli` with the bin's own output conventions (a line
 * per write, a `\r` progress line as is) and the same bare environment as {@link loom}, without
 * paying for a node process and the CLI's start-up. For tests whose subject is what a command
 * prints, its exit code or what it does to the store; a test about the process itself (its exit
 * on a signal, an open handle, `tail`'s keep-alive, start-up) spawns the bin with {@link loom}.
 */
export async function loomInProcess(
  args: readonly string[],
  env: Record<string, string> = {},
  onStdout?: (stdoutSoFar: string) => void,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const { runCli } = await import('../src/run-cli.js');
  let stdout = '';
  let stderr = '';
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new Error(
            `loom ${args.join(' ')} (in process) did not return within ${inProcessDeadlineMs} ms; stdout: ${stdout}; stderr: ${stderr}`,
          ),
        ),
      inProcessDeadlineMs,
    );
  });
  try {
    const code = await Promise.race([
      runCli(args, {
        stdout: (text) => {
          stdout += `${text}\n`;
          onStdout?.(stdout);
        },
        stderr: (text) => {
          stderr += text.startsWith('\r') ? text : `${text}\n`;
        },
        env: { PATH: process.env.PATH ?? '', ...env },
        isTty: false,
      }),
      deadline,
    ]);
    return { code, stdout, stderr };
  } finally {
    clearTimeout(timer);
  }
}
