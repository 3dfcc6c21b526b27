// `node --import ./load-recorder.mjs …`: appends the URL of every ES module the process loads to
// the file named by LOOM_LOAD_RECORD, one per line (for cli-startup.test.ts). The same file is the
// register call on the main thread and the `load` hook on the loader's thread.
import { appendFileSync } from 'node:fs';
import { register } from 'node:module';
import { isMainThread } from 'node:worker_threads';

let recordFile;

export function initialize(data) {
  recordFile = data.recordFile;
}

export async function load(url, context, nextLoad) {
  appendFileSync(recordFile, `${url}\n`);
  return nextLoad(url, context);
}

if (isMainThread) {
  const recordFile = process.env.LOOM_LOAD_RECORD;
  if (recordFile === undefined)
    throw new Error('load-recorder.mjs: set LOOM_LOAD_RECORD to a file');
  register(import.meta.url, { data: { recordFile } });
}
