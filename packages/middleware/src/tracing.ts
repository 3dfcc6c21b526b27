export {
  SpanAttribute,
  type TracingMiddleware,
  type TracingOptions,
  tracingMiddleware,
} from './tracing/tracing-middleware.js';
