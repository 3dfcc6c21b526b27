/**
 * A listening process for P10 (bench-notify.ts): one connection that LISTENs to every NOTIFY
 * channel of a schema, as a Loom process with a global subscription would, and counts what it
 * hears. Prints `ready` once the LISTEN is in effect; answers each `count` line on stdin with
 * the notifications heard so far; exits when stdin closes.
 *
 * Usage: node --import tsx src/notify-listener-child.ts <url> <schema> <buckets>
 */
import { createInterface } from 'node:readline';
import { channelName } from '@loom/event-runtime/testing';
import pg from 'pg';

const [url, schema, buckets] = process.argv.slice(2);
const client = new pg.Client({ connectionString: url });
client.on('error', () => {});
let heard = 0;
client.on('notification', () => {
  heard++;
});
await client.connect();
const channels = Array.from({ length: Number(buckets) }, (_, bucket) =>
  channelName(schema as string, bucket),
);
await client.query(channels.map((channel) => `LISTEN "${channel}"`).join('; '));
process.stdout.write('ready\n');
const lines = createInterface({ input: process.stdin });
lines.on('line', (line) => {
  if (line === 'count') process.stdout.write(`${heard}\n`);
});
lines.on('close', () => {
  void client.end().finally(() => process.exit(0));
});
