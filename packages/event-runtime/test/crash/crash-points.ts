// The crash points of the enumeration: around every durable write of one flow (a plain step, a
// transaction, a child, a signal send, a suspension, the end), where a worker SIGKILLs itself.
// A write point hooks the store the worker drives (before or after the first append, `transact`
// or `sendSignal` that carries `type` for `execution`); "after" means the write committed and
// the process died before the kernel saw its answer. A body point kills inside a step's effect
// (after the effect, before its record) or inside a transaction (after its write, before its
// commit).

export interface CrashPoint {
  name: string;
  write?: {
    phase: 'before' | 'after';
    call: 'append' | 'transact' | 'sendSignal';
    type: string;
    execution: 'parent' | 'child' | 'receiver';
  };
  body?: 'effect' | 'transaction';
}

const append = (
  phase: 'before' | 'after',
  type: string,
  execution: 'parent' | 'child' | 'receiver' = 'parent',
): CrashPoint => ({
  name: `${phase} ${type}${execution === 'parent' ? '' : ` (${execution})`}`,
  write: { phase, call: 'append', type, execution },
});

export const crashPoints: readonly CrashPoint[] = [
  append('before', 'execution.started'),
  append('after', 'execution.started'),
  append('before', 'step.started'),
  append('after', 'step.started'),
  { name: "in step a's effect, before its record", body: 'effect' },
  append('before', 'step.completed'),
  append('after', 'step.completed'),
  { name: 'inside the transaction, before its commit', body: 'transaction' },
  {
    name: 'after the transaction commits',
    write: { phase: 'after', call: 'transact', type: 'step.completed', execution: 'parent' },
  },
  append('before', 'child.started'),
  append('after', 'child.started'),
  append('before', 'execution.started', 'child'),
  append('after', 'execution.started', 'child'),
  append('before', 'child.completed'),
  {
    name: 'before the signal send',
    write: { phase: 'before', call: 'sendSignal', type: 'signal', execution: 'receiver' },
  },
  {
    name: 'after the signal send',
    write: { phase: 'after', call: 'sendSignal', type: 'signal', execution: 'receiver' },
  },
  append('after', 'execution.suspended', 'receiver'),
  append('before', 'execution.suspended'),
  append('after', 'execution.suspended'),
  append('before', 'execution.completed'),
  append('after', 'execution.completed'),
];
