export { loadOtelApi, type OtelApi } from './tracing/load-otel-api.js';
export {
  SpanAttribute,
  type TracingMiddleware,
  type TracingOptions,
  tracingMiddleware,
} from './tracing/tracing-middleware.js';
