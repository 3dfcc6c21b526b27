import { createRuntime, openMemory } from '@loom/workflow-runtime';

const runtime = createRuntime({ backend: openMemory() });
runtime.events.on('lease:lost', (event) => console.warn(`${event.executionId} moved to another node`));
runtime.events.on('store:error', (event) => console.error('background store call failed', event.error));
await runtime.shutdown();

export {};
