export {
  SpanAttribute,
  type TracingMiddleware,
  type TracingOptions,
  tracingMiddleware,
} from './tracing/tracing-middleware.js';
export { loadOtelApi, type OtelApi } from './tracing/load-otel-api.js';
