// The trial's OpenTelemetry setup, loaded before the worker (`node --import ./instrumentation.mjs`,
// or NODE_OPTIONS): a global tracer provider whose spans go to an in-memory exporter, each one also
// written as a JSON line to TRIAL_SPANS at once, so a test in another process reads them even from
// a worker it SIGKILLed. In production this is your OTel SDK setup (an OTLP exporter, say).
import { appendFileSync } from 'node:fs';
import { trace } from '@opentelemetry/api';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';

const memory = new InMemorySpanExporter();
const file = process.env.TRIAL_SPANS;
const exporter = {
  export(spans, done) {
    if (file !== undefined) {
      for (const span of spans) {
        appendFileSync(
          file,
          `${JSON.stringify({ name: span.name, attributes: span.attributes })}\n`,
        );
      }
    }
    memory.export(spans, done);
  },
  shutdown: () => memory.shutdown(),
};
trace.setGlobalTracerProvider(
  new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }),
);
