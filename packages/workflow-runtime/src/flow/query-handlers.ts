import type { FlowContext } from '@loom/event-runtime';

/** A flow's query handler, as registered (its argument already checked by the query's schema). */
export type QueryHandler = (arg: unknown) => unknown;

/**
 * The query handlers a flow registered with `ctx.onQuery`, by the context it ran under. Keyed
 * weakly: a context the kernel drops (its execution settled or suspended) takes its handlers
 * with it. Only a read-only replay (`replayForQuery`) ever reads them back (ADR 0061).
 */
const handlersByContext = new WeakMap<FlowContext, Map<string, QueryHandler>>();

/** Registers `handler` for query `name` on `ctx` (a later registration of the name wins). */
export function registerQueryHandler(ctx: FlowContext, name: string, handler: QueryHandler): void {
  let handlers = handlersByContext.get(ctx);
  if (handlers === undefined) {
    handlers = new Map();
    handlersByContext.set(ctx, handlers);
  }
  handlers.set(name, handler);
}

/** The handlers registered on `ctx` (none: an empty map). */
export function queryHandlersOf(ctx: FlowContext): ReadonlyMap<string, QueryHandler> {
  return handlersByContext.get(ctx) ?? new Map();
}
