import type { DetailedExecutionStatus } from '@loom/event-runtime';

/**
 * Statuses `view.runs({ status })` accepts (the execution index's). A file of its own so that
 * `loom --help` and the option parsers read it without loading the view.
 */
export const runStatuses: readonly DetailedExecutionStatus[] = [
  'running',
  'suspended',
  'settled',
  'completed',
  'failed',
  'cancelled',
  'continued',
];
