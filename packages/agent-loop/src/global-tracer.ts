import { loadOtelApi } from '@loom/middleware/tracing';
import type { Tracer } from '@opentelemetry/api';

/**
 * A tracer of the global OpenTelemetry tracer provider (the one an instrumentation module
 * registers, `node --import ./instrumentation.mjs`), for `createAgentRuntime({ tracer })` in a
 * process whose code is not the user's: `loom worker` passes it, so a worker's agent runs export
 * spans wherever the provider sends them. Undefined when `@opentelemetry/api` (an optional peer)
 * is not installed. Before a provider is registered its spans are the API's no-ops.
 *
 * @example
 * const agents = createAgentRuntime({ flows, agents: [support], tracer: await globalTracer() });
 */
export async function globalTracer(name = '@loom/agent-loop'): Promise<Tracer | undefined> {
  return (await loadOtelApi())?.trace.getTracer(name);
}
