import type { HasKernelRuntime, KernelRuntime } from '../runtime/runtime.js';
import { kernelOf } from '../runtime/runtime.js';

/** Store calls a runtime's lease manager made so far. */
export interface LeaseCallCounts {
  acquireMany: number;
  renewMany: number;
  releaseMany: number;
}

/**
 * The lease store calls a runtime made so far (acquireMany, renewMany, releaseMany), for tests
 * and benchmarks that count them. All zero for a runtime that takes no leases. Accepts the flow
 * runtime of `@loom/workflow-runtime` or a kernel runtime. Throws `INVALID_ARGUMENT` for
 * anything else.
 *
 * @example
 * await tickLeases(runtime);
 * expect(leaseCalls(runtime).renewMany).toBe(1);
 */
export function leaseCalls(runtime: KernelRuntime | HasKernelRuntime): Readonly<LeaseCallCounts> {
  const calls = kernelOf(runtime).leases?.calls;
  return calls === undefined ? { acquireMany: 0, renewMany: 0, releaseMany: 0 } : { ...calls };
}

/**
 * Runs one lease round of a runtime now (what its timer does every `renewEveryMs`): flush
 * releases, renew held leases, lease lazy starts past their grace. Resolves when it is done.
 */
export function tickLeases(runtime: KernelRuntime | HasKernelRuntime): Promise<void> {
  return kernelOf(runtime).leases?.tick() ?? Promise.resolve();
}
