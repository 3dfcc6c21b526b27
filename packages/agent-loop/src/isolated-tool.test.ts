// Isolated tools, with real child processes on a SQLite file: a call's result comes back from
// the child; a child that dies is a tool error the run goes on from; a timeout kills the child;
// warm children are spawned ahead and used by the first call; close() leaves no process behind.
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnTestProcess } from '@loom/event-runtime/testing';
import type { ModelRequest, StubTurn } from '@loom/reasoning';
import { createRuntime, type Runtime } from '@loom/workflow-runtime';
import { openSqlite } from '@loom/workflow-runtime/sqlite';
import { afterEach, describe, expect, it } from 'vitest';
import { eventually, shown, stubBy } from './agent.test-support.js';
import {
  type Agent,
  type AgentRuntime,
  createAgentRuntime,
  defineAgent,
  defineTool,
  isLoomError,
} from './index.js';

const moduleUrl = new URL('../test/isolate/isolate-tool-module.ts', import.meta.url);
const noRunUrl = new URL('../test/isolate/no-run-module.ts', import.meta.url);
// The modules are TypeScript: the children load them through tsx.
const execArgv = ['--import', 'tsx'];

const dir = mkdtempSync(join(tmpdir(), 'loom-agent-isolate-'));
let opened: { flows: Runtime; agents: AgentRuntime }[] = [];

afterEach(async () => {
  for (const { flows, agents } of opened) {
    await flows.shutdown();
    await agents.close();
  }
  opened = [];
});

function isolated(name: string, options: { warm?: number; timeoutMs?: number; module?: URL } = {}) {
  return defineTool({
    name,
    description: 'runs in a child process',
    input: { type: 'object' },
    sideEffect: 'read_only',
    isolate: {
      module: options.module ?? moduleUrl,
      execArgv,
      ...(options.warm === undefined ? {} : { warm: options.warm }),
    },
    ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
  });
}

/** An agent that calls `tool` once with `input`, then answers 'done'; `requests` gets what the model saw. */
function caller(
  name: string,
  tool: ReturnType<typeof isolated>,
  input: Record<string, unknown>,
  requests: ModelRequest[],
): Agent {
  return defineAgent({
    name,
    model: stubBy((n, request): StubTurn => {
      requests.push(request);
      return n === 0
        ? { toolCalls: [{ tool: tool.name, input: input as never, callId: 'c1' }] }
        : { text: 'done' };
    }),
    instructions: 'Call the tool once.',
    tools: [tool],
  });
}

function open(agents: Agent[], file: string): { flows: Runtime; agents: AgentRuntime } {
  const flows = createRuntime({
    backend: openSqlite({ path: join(dir, `${file}.db`), migrate: true }),
  });
  const runtime = { flows, agents: createAgentRuntime({ flows, agents }) };
  opened.push(runtime);
  return runtime;
}

/** Resolves once no process has this pid (SIGKILLed and reaped), within the deadline. */
function gone(pid: number): Promise<true> {
  // kill(0) would probe this process group: only a real pid is asked about.
  if (!Number.isInteger(pid) || pid <= 0) throw new Error(`not a pid: ${pid}`);
  return eventually(async () => {
    try {
      process.kill(pid, 0);
      return undefined;
    } catch (error) {
      return (error as { code?: string }).code === 'ESRCH' ? true : undefined;
    }
  }, `process ${pid} to be gone`);
}

function pidsIn(file: string): number[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8').split('\n').filter(Boolean).map(Number);
}

function observation(request: ModelRequest | undefined): string {
  return shown(request);
}

describe('isolated tools', () => {
  it("a call's result comes back from a child process, which is gone after it", async () => {
    const requests: ModelRequest[] = [];
    const tool = isolated('echo');
    const agent = caller('iso-echo', tool, { mode: 'echo', value: 'ping' }, requests);
    const { agents } = open([agent], 'echo');
    const result = await agents.run(agent, 'go', { runId: 'echo-1' });
    expect(result.reason).toBe('goal_completed');
    const seen = observation(requests[1]);
    const pid = Number(/pid\W{1,6}(\d+)/.exec(seen)?.[1]);
    expect(pid).toBeGreaterThan(0);
    expect(pid).not.toBe(process.pid);
    expect(seen).toContain('ping');
    expect(seen).toContain('echo-1/1.0'); // the idempotency key reached the child
    await gone(pid);
  });

  it.each([
    ['exit', 'exited with code 3'],
    ['sigkill', 'was killed by SIGKILL'],
    ['uncaught', 'exited with code 1'],
  ])(
    'a child that dies (%s) is a TOOL_ISOLATE_CRASHED tool error, and the run finishes',
    async (mode, how) => {
      const requests: ModelRequest[] = [];
      const tool = isolated(`crash_${mode}`);
      const agent = caller(`iso-crash-${mode}`, tool, { mode }, requests);
      const { agents } = open([agent], `crash-${mode}`);
      const result = await agents.run(agent, 'go', { runId: `crash-${mode}` });
      expect(result.reason).toBe('goal_completed');
      expect(result.turns).toBe(2);
      const seen = observation(requests[1]);
      expect(seen).toContain('TOOL_ISOLATE_CRASHED');
      expect(seen).toContain(how);
    },
  );

  it("a rejection of the module's run is a tool error with its code; the child is gone", async () => {
    const requests: ModelRequest[] = [];
    const pidFile = join(dir, 'reject.pid');
    const tool = isolated('rejects');
    const agent = caller('iso-reject', tool, { mode: 'reject', pidFile }, requests);
    const { agents } = open([agent], 'reject');
    const result = await agents.run(agent, 'go', { runId: 'reject-1' });
    expect(result.reason).toBe('goal_completed');
    const seen = observation(requests[1]);
    expect(seen).toContain('E_QUOTA: the quota is spent');
    expect(seen).not.toContain('TOOL_ISOLATE_CRASHED');
    await gone(Number(readFileSync(pidFile, 'utf8')));
  });

  it('a call past timeoutMs kills its child: a TIMEOUT tool error, and the pid is gone', async () => {
    const requests: ModelRequest[] = [];
    const pidFile = join(dir, 'hang.pid');
    // Warm, so the time goes to the call and not to spawning the child and loading tsx.
    const tool = isolated('hangs', { warm: 1, timeoutMs: 2_000 });
    const agent = caller('iso-hang', tool, { mode: 'hang', pidFile }, requests);
    const { agents } = open([agent], 'hang');
    await agents.warm();
    const result = await agents.run(agent, 'go', { runId: 'hang-1' });
    expect(result.reason).toBe('goal_completed');
    expect(observation(requests[1])).toContain('TIMEOUT');
    await gone(Number(readFileSync(pidFile, 'utf8')));
  });

  it('warm() spawns the children ahead; the first call runs in one of them, and one replaces it', async () => {
    const log = join(dir, 'warm-spawns.log');
    process.env.LOOM_ISOLATE_SPAWN_LOG = log;
    try {
      const requests: ModelRequest[] = [];
      const tool = isolated('warm_echo', { warm: 1 });
      const agent = caller('iso-warm', tool, { mode: 'echo' }, requests);
      const { agents } = open([agent], 'warm');
      expect(pidsIn(log)).toEqual([]);
      await agents.warm();
      const spawned = pidsIn(log);
      expect(spawned).toHaveLength(1);
      await agents.run(agent, 'go', { runId: 'warm-1' });
      const pid = Number(/pid\W{1,6}(\d+)/.exec(observation(requests[1]))?.[1]);
      expect(pid).toBe(spawned[0]);
      // The replacement spawned behind the call (a new pid), ready for the next call.
      await eventually(async () => (pidsIn(log).length === 2 ? true : undefined), 'a replacement');
      expect(pidsIn(log)[1]).not.toBe(pid);
      await agents.close();
      for (const spawnedPid of pidsIn(log)) await gone(spawnedPid);
    } finally {
      delete process.env.LOOM_ISOLATE_SPAWN_LOG;
    }
  });

  it('without warm, the call spawns its own child and nothing is kept', async () => {
    const log = join(dir, 'cold-spawns.log');
    process.env.LOOM_ISOLATE_SPAWN_LOG = log;
    try {
      const requests: ModelRequest[] = [];
      const tool = isolated('cold_echo');
      const agent = caller('iso-cold', tool, { mode: 'echo' }, requests);
      const { agents } = open([agent], 'cold');
      await agents.warm();
      expect(pidsIn(log)).toEqual([]);
      await agents.run(agent, 'go', { runId: 'cold-1' });
      const pid = Number(/pid\W{1,6}(\d+)/.exec(observation(requests[1]))?.[1]);
      expect(pidsIn(log)).toEqual([pid]);
      await gone(pid);
    } finally {
      delete process.env.LOOM_ISOLATE_SPAWN_LOG;
    }
  });

  it('close() kills the warm children and a call in flight; no pid is left', async () => {
    const log = join(dir, 'close-spawns.log');
    const pidFile = join(dir, 'close-hang.pid');
    process.env.LOOM_ISOLATE_SPAWN_LOG = log;
    try {
      const warmTool = isolated('warm_pair', { warm: 2 });
      const hang = isolated('hang_long', { timeoutMs: 600_000 });
      const agent = caller('iso-close', hang, { mode: 'hang', pidFile }, []);
      const idle = defineAgent({
        name: 'iso-idle',
        model: stubBy(() => ({ text: 'done' })),
        instructions: 'Nothing.',
        tools: [warmTool],
      });
      const { flows, agents } = open([agent, idle], 'close');
      await agents.warm();
      expect(pidsIn(log)).toHaveLength(2);
      void agents.start(agent, 'go', { runId: 'close-1' });
      const running = await eventually(
        // The file may be seen created and still empty: only a whole pid counts.
        async () => {
          const pid = existsSync(pidFile) ? Number(readFileSync(pidFile, 'utf8')) : 0;
          return pid > 0 ? pid : undefined;
        },
        'the call to start in its child',
      );
      await flows.shutdown();
      await agents.close();
      // Two warm children of warm_pair and the child of the call (its module logs its spawn too).
      const all = new Set([...pidsIn(log), running]);
      expect(all.size).toBe(3);
      for (const pid of all) await gone(pid);
    } finally {
      delete process.env.LOOM_ISOLATE_SPAWN_LOG;
    }
  });

  it('warm children exit when their parent process is SIGKILLed (no orphan)', async () => {
    const log = join(dir, 'orphan-spawns.log');
    const parent = spawnTestProcess(
      new URL('../test/isolate/isolate-parent-worker.ts', import.meta.url).pathname,
      { env: { LOOM_ISOLATE_SPAWN_LOG: log } },
    );
    try {
      // A tsx process that spawns two more: slow on a loaded box.
      const line = await parent.match(/^spares (.*)$/, 'the parent to warm its tool', 60_000);
      const spares = (line[1] as string).split(',').map(Number);
      expect(spares).toHaveLength(2);
      for (const pid of spares) process.kill(pid, 0); // alive while the parent lives
      parent.child.kill('SIGKILL');
      for (const pid of spares) await gone(pid);
    } finally {
      await parent.kill();
    }
  });

  it('a module without a run export: warm() throws TOOL_ISOLATE_MODULE_INVALID, a call is a tool error', async () => {
    const requests: ModelRequest[] = [];
    const tool = isolated('no_run', { warm: 1, module: noRunUrl });
    const agent = caller('iso-no-run', tool, {}, requests);
    const { agents } = open([agent], 'no-run');
    const warmed = await agents.warm().then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(isLoomError(warmed, 'TOOL_ISOLATE_MODULE_INVALID')).toBe(true);
    const result = await agents.run(agent, 'go', { runId: 'no-run-1' });
    expect(result.reason).toBe('goal_completed');
    expect(observation(requests[1])).toContain('TOOL_ISOLATE_MODULE_INVALID');
  });

  it('defineTool refuses a bad isolate: a relative module, run and isolate both, warm out of range', () => {
    const base = {
      name: 'bad',
      description: 'x',
      input: { type: 'object' },
      sideEffect: 'read_only',
    } as const;
    const refused = (definition: unknown) => {
      try {
        defineTool(definition as never);
      } catch (error) {
        return isLoomError(error, 'INVALID_ARGUMENT');
      }
      return false;
    };
    expect(refused({ ...base, isolate: { module: './tool.js' } })).toBe(true);
    expect(refused({ ...base, isolate: { module: moduleUrl }, run: async () => null })).toBe(true);
    expect(refused({ ...base })).toBe(true);
    expect(refused({ ...base, isolate: { module: moduleUrl, warm: 17 } })).toBe(true);
    expect(refused({ ...base, isolate: { module: moduleUrl, warm: -1 } })).toBe(true);
    expect(refused({ ...base, isolate: { module: moduleUrl.href, warm: 2 } })).toBe(false);
  });
});
