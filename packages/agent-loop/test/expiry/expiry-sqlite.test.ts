// A decision at or after an approval's expiry never lets the call run, on a SQLite file.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openSqlite } from '@loom/workflow-runtime/sqlite';
import { describe, it } from 'vitest';
import {
  decisionStampedLateExpires,
  lateApproveRefused,
  lateSignalExpires,
  type OpenBackend,
} from './expiry-harness.js';

const dir = mkdtempSync(join(tmpdir(), 'loom-agent-expiry-sqlite-'));
const open: OpenBackend = async (clock) =>
  openSqlite({ path: join(dir, 'loom.db'), migrate: true, clock });

describe('an approval decided at or after its expiry, no worker alive (SQLite file)', () => {
  it('approve() and reject() at the expiry are refused with APPROVAL_EXPIRED, nothing is written, the run ends approval_expired', async () => {
    await lateApproveRefused(open, 'late-approve');
  });

  it('a decision signal sent after the expiry ends the run approval_expired; the tool never runs', async () => {
    await lateSignalExpires(open, 'late-signal');
  });

  it('a decision in the inbox before the expiry but stamped at it counts as expired', async () => {
    await decisionStampedLateExpires(open, 'stamped-late');
  });
});
