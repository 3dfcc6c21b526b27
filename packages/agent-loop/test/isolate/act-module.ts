// The isolated `act` tool of the isolated kill test, loaded in a child process. It appends
// `<idempotency key> <its pid>` to $KILL_INVOCATIONS, then, with KILL_AT=mid_tool, SIGKILLs the
// agent's process (its parent) after that side effect, and waits for its own end.
import { appendFileSync } from 'node:fs';
import type { IsolatedToolContext } from '../../src/index.js';

export async function run(_input: unknown, context: IsolatedToolContext): Promise<unknown> {
  appendFileSync(
    process.env.KILL_INVOCATIONS as string,
    `${context.idempotencyKey} ${process.pid}\n`,
  );
  if (process.env.KILL_AT === 'mid_tool') {
    process.kill(process.ppid, 'SIGKILL');
    return new Promise(() => {});
  }
  return { done: true };
}
