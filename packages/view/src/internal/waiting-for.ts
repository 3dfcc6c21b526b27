import type { TimelineEntry } from '../run-detail.js';

/**
 * What a suspended run waits for, from its timeline's open waits, for people: `approval
 * <approvalId>`, `answer <questionId>` (an agent run's), `signal '<name>'` (until a time, when the
 * wait has a timeout), `timer <time>`, `child <id>`; several joined by `, `. Undefined when the
 * run is not suspended or its log shows no open wait.
 */
export function waitingFor(
  runId: string,
  status: string,
  timeline: readonly TimelineEntry[],
): string | undefined {
  if (status !== 'suspended') return undefined;
  const waits: string[] = [];
  for (const entry of timeline) {
    if (entry.status !== 'open' || entry.kind === 'step') continue;
    const due = entry.dueAtMs === undefined || entry.dueAtMs === null ? undefined : entry.dueAtMs;
    const until = due === undefined ? '' : ` until ${new Date(due).toISOString()}`;
    if (entry.kind === 'sleep')
      waits.push(`timer ${due === undefined ? '' : new Date(due).toISOString()}`.trim());
    else if (entry.kind === 'child') waits.push(`child ${entry.childId ?? entry.name}`);
    else if (entry.name.startsWith('approval:'))
      waits.push(`approval ${runId}~${entry.name.slice('approval:'.length)}`);
    else if (entry.name.startsWith('answer:'))
      waits.push(`answer ${runId}~${entry.name.slice('answer:'.length)}`);
    else waits.push(`signal '${entry.name}'${until}`);
  }
  return waits.length === 0 ? undefined : waits.join(', ');
}
