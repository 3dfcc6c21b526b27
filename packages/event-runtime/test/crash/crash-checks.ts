// The crash test's verdict, read from the log and the effects file.
import { readFileSync } from 'node:fs';
import type { EventStore } from '../../src/index.js';

export interface CrashVerdict {
  terminalEvents: Map<string, number>;
  duplicateCompletions: string[];
  missingEffects: string[];
  reruns: number;
  outputs: Map<string, unknown>;
}

export async function checkCrashRun(
  store: EventStore,
  effectsPath: string,
  execs: number,
  steps: number,
): Promise<CrashVerdict> {
  const runs = new Map<string, number>();
  for (const line of readFileSync(effectsPath, 'utf8').split('\n')) {
    if (line.length > 0) runs.set(line, (runs.get(line) ?? 0) + 1);
  }
  const terminalEvents = new Map<string, number>();
  const duplicateCompletions: string[] = [];
  const missingEffects: string[] = [];
  const outputs = new Map<string, unknown>();
  let reruns = 0;
  for (let index = 0; index < execs; index++) {
    const id = `crash-${index}`;
    const events = await store.read(id);
    const terminal = events.filter(
      (event) => event.type.startsWith('execution.') && event.type !== 'execution.started',
    );
    terminalEvents.set(id, terminal.length);
    if (terminal[0]?.type === 'execution.completed')
      outputs.set(id, (terminal[0].payload as { output: unknown }).output);
    const completed = new Set<number>();
    for (const event of events.filter((candidate) => candidate.type === 'step.completed')) {
      const stepIndex = (event.payload as { index: number }).index;
      if (completed.has(stepIndex)) duplicateCompletions.push(`${id}/${stepIndex}`);
      completed.add(stepIndex);
    }
    for (let step = 0; step < steps; step++) {
      const count = runs.get(`${id}/${step}`) ?? 0;
      if (count === 0) missingEffects.push(`${id}/${step}`);
      else reruns += count - 1;
    }
  }
  return { terminalEvents, duplicateCompletions, missingEffects, reruns, outputs };
}
