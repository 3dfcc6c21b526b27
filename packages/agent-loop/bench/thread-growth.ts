// What a message costs as a thread grows: a thread of THREAD_MESSAGES messages (default 1 000,
// threadMessagesMax) on a fresh SQLite file with the stub model, each message sent and its reply
// awaited. The table gives, per stretch of messages, the median time from send to reply, and the
// thread's own log (events per message) at the end. A turn reads the earlier exchanges newest
// first until THREAD_BUDGET tokens (its budgetTokens, default 8 000) or threadHistoryExchangesMax
// (200) of them: one log read each. The thread execution replays its own log on each wake-up.
// Nothing is asserted. Needs the built package (`pnpm build`): it imports dist/, as an app would.
//
//   pnpm --filter @loom/agent-loop exec tsx bench/thread-growth.ts
import { mkdtempSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { StubModel } from '@loom/reasoning';
import { createRuntime } from '@loom/workflow-runtime';
import { openSqlite } from '@loom/workflow-runtime/sqlite';
import { createAgentRuntime, defineAgent } from '../dist/index.js';

const messages = Number(process.env.THREAD_MESSAGES ?? 1_000);
const chat = defineAgent({
  name: 'chat',
  model: new StubModel({ script: (request) => ({ text: `reply ${request.messages.length}` }) }),
  instructions: 'Chat.',
  tools: [],
  budgetTokens: Number(process.env.THREAD_BUDGET ?? 8_000),
});
const path = join(mkdtempSync(join(tmpdir(), 'loom-thread-growth-')), 'thread.db');
const flows = createRuntime({ backend: openSqlite({ path, migrate: true }) });
const agents = createAgentRuntime({ flows, agents: [chat] });
const thread = agents.thread(chat, 'bench');
const latencies: number[] = [];
for (let i = 1; i <= messages; i++) {
  const started = process.hrtime.bigint();
  const turn = await thread.send(`message ${i} about the weather and the order`);
  await turn.result();
  latencies.push(Number(process.hrtime.bigint() - started) / 1e6);
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
const stretch = Math.max(1, Math.floor(messages / 5));
console.log(
  `${cpus().length} cores, load ${loadavg()[0]?.toFixed(2)}, SQLite file, ${messages} messages, budgetTokens ${chat.budgetTokens}`,
);
console.log('| messages | median send → reply (ms) |');
console.log('|---|---|');
for (let from = 0; from < messages; from += stretch) {
  const part = latencies.slice(from, from + stretch);
  console.log(`| ${from + 1}–${from + part.length} | ${median(part).toFixed(1)} |`);
}
const log = await flows.store.read('bench');
console.log(`thread log: ${log.length} events, ${(log.length / messages).toFixed(1)} per message`);
await flows.shutdown();
