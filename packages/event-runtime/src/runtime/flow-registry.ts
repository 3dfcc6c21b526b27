import type { FlowKey } from '../envelope.js';
import { ErrorCode, LoomError } from '../errors.js';
import type { ExecutionState } from './core/execution-state.js';
import { checkFlow, type Flow } from './flow.js';

/**
 * The flows a runtime can run and resume, by name and version. Keyed by name, then by version
 * (null for an unversioned flow), never by a joined string: a flow named 'reg@1' and flow 'reg'
 * version '1' are two flows, and an execution of one must never resume with the other's code.
 */
export class FlowRegistry {
  private readonly flows = new Map<string, Map<string | null, Flow<never, unknown>>>();
  /** Flows (name, then versions) whose executions other nodes run: recovery here skips them. */
  private readonly declined = new Map<string, Set<string | null>>();
  /** What `runnable()` returned, until the next registration changes it. */
  private keys: readonly FlowKey[] | undefined;

  /** Make a flow resumable by name (and version), replacing one registered before. Throws `INVALID_FLOW`. */
  register(flow: Flow<never, unknown>): void {
    checkFlow(flow);
    this.versionsOf(flow.name).set(flow.version ?? null, flow);
    this.declined.get(flow.name)?.delete(flow.version ?? null);
    this.keys = undefined;
  }

  /** True when an execution of this flow (name and version) can run here. */
  runs(name: string, version: string | null): boolean {
    return this.flows.get(name)?.has(version) === true;
  }

  /**
   * The flows (name and version) this runtime can run: what its timer claims are kept to, so an
   * execution of a flow it lacks stays due for a node that has it (a rolling upgrade).
   */
  runnable(): readonly FlowKey[] {
    this.keys ??= [...this.flows].flatMap(([name, versions]) =>
      [...versions.keys()].map((version) => ({ name, version })),
    );
    return this.keys;
  }

  /**
   * Marks a flow (name and version) as run by other nodes on purpose (a placement this node does
   * not fit): recovery here leaves its executions alone instead of leasing them and reporting
   * `FLOW_NOT_REGISTERED` every round. A later `register` of it undoes this.
   */
  decline(name: string, version: string | null): void {
    if (this.flows.get(name)?.has(version) === true) return;
    let versions = this.declined.get(name);
    if (versions === undefined) {
      versions = new Set();
      this.declined.set(name, versions);
    }
    versions.add(version);
  }

  /** True when `decline` marked this flow and version. */
  isDeclined(name: string, version: string | null): boolean {
    return this.declined.get(name)?.has(version) === true;
  }

  /**
   * Registers a flow being started unless its name (and version) already is, and returns the flow
   * registered under them: the code a resume of the execution would run, so its start runs it too.
   * Throws `INVALID_FLOW`.
   */
  registerIfAbsent(flow: Flow<never, unknown>): Flow<never, unknown> {
    checkFlow(flow);
    const versions = this.versionsOf(flow.name);
    const version = flow.version ?? null;
    const registered = versions.get(version);
    if (registered !== undefined) return registered;
    versions.set(version, flow);
    this.keys = undefined;
    return flow;
  }

  /** The flow `state`'s execution runs. Throws `FLOW_NOT_REGISTERED`. */
  flowFor(state: ExecutionState): Flow<never, unknown> {
    const flow = this.flows.get(state.flow)?.get(state.version);
    if (flow === undefined) {
      throw new LoomError(
        ErrorCode.FLOW_NOT_REGISTERED,
        `execution ${state.executionId} runs flow '${state.flow}'${state.version === null ? '' : ` version ${state.version}`}, ` +
          'which this runtime has not registered: register that flow (and version) before resuming',
        { executionId: state.executionId, flow: state.flow, version: state.version },
      );
    }
    return flow;
  }

  private versionsOf(name: string): Map<string | null, Flow<never, unknown>> {
    let versions = this.flows.get(name);
    if (versions === undefined) {
      versions = new Map();
      this.flows.set(name, versions);
    }
    return versions;
  }
}
