/** Brands the kernel's unwind signal; private to this module, so no user value carries it. */
const flowUnwindBrand: unique symbol = Symbol('loom.flowUnwind');

/**
 * What a flow's pending operations throw after `ctx.continueAsNew` ended the execution: not an
 * error and not a code, only a way to unwind the flow's stack. The driver writes the
 * `execution.continued_as_new` terminal whatever the flow does with it, so a flow that catches
 * it changes nothing; a `catch` that logs it sees a `ContinuedAsNew` naming the successor, never
 * something that looks like a cancellation.
 */
export interface FlowUnwind {
  readonly [flowUnwindBrand]: true;
  readonly name: 'ContinuedAsNew';
  readonly message: string;
  readonly executionId: string;
  readonly successorId: string;
}

/** The unwind signal for an execution that continued as `successorId`. */
export function continuedAsNew(executionId: string, successorId: string): FlowUnwind {
  return Object.freeze({
    [flowUnwindBrand]: true as const,
    name: 'ContinuedAsNew' as const,
    message:
      `execution ${executionId} continued as ${successorId}: nothing after ctx.continueAsNew ` +
      'runs; rethrow this if you catch it',
    executionId,
    successorId,
  });
}

/** True for the kernel's own unwind signal (never for a user's error of any name or shape). */
export function isFlowUnwind(value: unknown): value is FlowUnwind {
  return typeof value === 'object' && value !== null && flowUnwindBrand in value;
}
