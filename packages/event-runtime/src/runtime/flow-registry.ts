import { ErrorCode, LoomError } from '../errors.js';
import type { ExecutionState } from './execution-state.js';
import { checkFlow, type Flow } from './flow.js';

/** The flows a runtime can run and resume, by name and version. */
export class FlowRegistry {
  private readonly flows = new Map<string, Flow<never, unknown>>();

  /** Make a flow resumable by name (and version), replacing one registered before. Throws `INVALID_FLOW`. */
  register(flow: Flow<never, unknown>): void {
    checkFlow(flow);
    this.flows.set(flowKey(flow.name, flow.version ?? null), flow);
  }

  /** Registers a flow being started unless its name (and version) already is. Throws `INVALID_FLOW`. */
  registerIfAbsent(flow: Flow<never, unknown>): void {
    checkFlow(flow);
    const key = flowKey(flow.name, flow.version ?? null);
    if (!this.flows.has(key)) this.flows.set(key, flow);
  }

  /** The flow `state`'s execution runs. Throws `FLOW_NOT_REGISTERED`. */
  flowFor(state: ExecutionState): Flow<never, unknown> {
    const flow = this.flows.get(flowKey(state.flow, state.version));
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
}

function flowKey(name: string, version: string | null): string {
  return version === null ? name : `${name}@${version}`;
}
