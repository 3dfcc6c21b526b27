/**
 * `@loom/event-runtime/kernel`: the kernel runtime, an advanced export. It runs hand-written
 * `Flow` objects over the stores you hand it, with no schemas, cron or queues; the packages built
 * on the kernel (and its own tests) use it. A flow author uses `createRuntime` of
 * `@loom/workflow-runtime`, which is built on it and carries everything a flow needs.
 */

export { groupCommitBatchDefault, groupCommitBatchMax } from './runtime/group-commit.js';
export {
  createKernelRuntime,
  defaultCancelReason,
  type HasKernelRuntime,
  KernelRuntime,
  type KernelRuntimeOptions,
  kernelRuntimeSlot,
} from './runtime/runtime.js';
export { runtimeDefaults } from './runtime/runtime-options.js';
export { isTransientStoreError, retryDelayMs } from './runtime/store-retry.js';
