import { describe } from 'vitest';
import { ErrorCode, LoomError } from '../errors.js';

/** The sections of `eventStoreConformance`, in the order the suite declares them. */
export const eventStoreSections = [
  'append and read',
  'sequence rules',
  'fences',
  'readAll',
  'execution index',
  'finding executions',
  'signals and due executions',
  'claimDue kept to the flows a node runs (options.flows)',
  'a suspension guarded by the signals its writer saw (wakeOnSignalsAfter)',
  'a settling append that wakes another execution (notify)',
  'subscribe',
  'prune',
  'hash chain',
  'round-trip fidelity',
  'bad input',
  'ill-formed text in ids, types and names',
] as const;

/** One section of `eventStoreConformance`. */
export type EventStoreSection = (typeof eventStoreSections)[number];

/** The sections of `runtimeConformance`, in the order the suite declares them. */
export const runtimeSections = [
  'transient store failures',
  'durable step retries',
  'an attempt after the first, interrupted (ADR 0031)',
  'retry(id)',
  'folding checks what it reads',
  'runtime events',
  'steps and barriers',
  'replay and resume',
  'idempotent start',
  'bad input',
  'cancel',
  'leases',
  'recovery',
  'recovery of dead nodes',
  'durable time, signals, values, versions, children, continue-as-new',
  'snapshots',
  'ill-formed text at the runtime edges',
  'flow registry keys',
  'cancel without a reason',
  'lease batches',
  'durations judged by the runtime clock',
  'recorded values: limits, first run equals replay, closed contexts, hostile throws',
  'records (ctx.record)',
] as const;

/** One section of `runtimeConformance`. */
export type RuntimeSection = (typeof runtimeSections)[number];

/**
 * Which sections of a conformance suite to run. Omitted: all of them, as every backend must.
 * A decorator names the sections that exercise the operations it changes; the operations it only
 * forwards are proven by `forwardingConformance` instead of a second run of the whole suite.
 */
export interface ConformanceSections<S extends string> {
  sections?: readonly S[];
}

/** Declares one section: a `describe` when chosen, nothing at all when not. */
export type SectionDescribe<S extends string> = (title: S, body: () => void) => void;

/**
 * The `describe` a suite declares its sections with, and the suffix its title gets when only some
 * sections run (so a report never passes a partial run off as the whole suite). A name outside
 * `all` is INVALID_ARGUMENT, both in `chosen` and in the suite's own declarations, so the list
 * cannot drift from the suite.
 *
 * @example
 * const { section, suffix } = conformanceSections('EventStore', eventStoreSections, options.sections);
 * describe(`EventStore conformance: ${name}${suffix}`, () => { section('fences', () => { … }) });
 */
export function conformanceSections<S extends string>(
  suite: string,
  all: readonly S[],
  chosen: readonly S[] | undefined,
): { section: SectionDescribe<S>; suffix: string } {
  const known = new Set<string>(all);
  const unknown = (chosen ?? []).filter((title) => !known.has(title));
  if (unknown.length > 0 || (chosen !== undefined && chosen.length === 0)) {
    throw new LoomError(
      ErrorCode.INVALID_ARGUMENT,
      chosen?.length === 0
        ? `${suite} conformance: sections is empty; omit it to run the whole suite`
        : `${suite} conformance has no section ${unknown.map((title) => `'${title}'`).join(', ')}; its sections are: ${all.join('; ')}`,
      { actual: unknown, expected: all },
    );
  }
  const wanted = chosen === undefined ? undefined : new Set<string>(chosen);
  const section: SectionDescribe<S> = (title, body) => {
    if (!known.has(title)) {
      throw new LoomError(
        ErrorCode.INVALID_ARGUMENT,
        `${suite} conformance declares a section '${title}' that conformance-sections.ts does not list`,
        { actual: title },
      );
    }
    if (wanted === undefined || wanted.has(title)) describe(title, body);
  };
  const suffix =
    chosen === undefined
      ? ''
      : ` (${chosen.length} of ${all.length} sections: ${chosen.join('; ')})`;
  return { section, suffix };
}
