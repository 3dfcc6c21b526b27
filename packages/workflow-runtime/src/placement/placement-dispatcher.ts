import type { StepEffectContext } from '@loom/event-runtime';
import { LoomError, WorkflowErrorCode } from '../errors.js';
import type { EffectDefinition } from './define-effect.js';
import { checkTags, type Placement, tagsSatisfy } from './placement.js';
import { callRemote, type RemoteWorker } from './remote-effect-client.js';

/** Options of {@link PlacementDispatcher}. */
export interface PlacementDispatcherOptions {
  /** This node's tags (pass the runtime's: `runtime.tags`). Default none. */
  tags?: readonly string[];
  /** Effects this process can run itself, when a placement fits this node. */
  effects?: ReadonlyArray<EffectDefinition<never, unknown>>;
  /** Worker processes serving effects over HTTP (`serveEffects`). */
  remotes?: readonly RemoteWorker[];
}

/** Where {@link PlacementDispatcher.place} decided an effect runs. */
export type PlacementDecision =
  | { where: 'local' }
  /** On one of these remotes: attempt n goes to `remotes[(n - 1) % remotes.length]`. */
  | { where: 'remote'; remotes: readonly RemoteWorker[] };

/**
 * Decides where an effect runs — here, or on a remote worker over HTTP — and runs it there as the
 * body of a step, so its result is journaled in the caller's log like any step's. Use it inside
 * `ctx.step`: the step's retry policy, timeout and middleware apply to the placed call, and every
 * attempt carries the step's idempotency key (`executionId/stepIndex`), so a remote worker that
 * crashed mid-call is a failed attempt that is retried, never a lost run.
 *
 * Rules: `{ remote: name }` runs on that remote. `{ tags }` runs here when this node carries every
 * tag and has the effect registered, else on the remotes that carry every tag (a retry moves to
 * the next one). No fit is `PLACEMENT_UNSATISFIED`, a failed attempt at once, not a wait for a
 * remote to appear: placement is configuration, and waiting would hide a mistake.
 *
 * Error codes: `INVALID_ARGUMENT` (bad options, two remotes with one name),
 * `PLACEMENT_UNSATISFIED`, `REMOTE_UNKNOWN`; from a call: `REMOTE_UNAVAILABLE`,
 * `REMOTE_BAD_RESPONSE`, `REMOTE_EFFECT_FAILED`, `TERMINAL`.
 *
 * @example
 * const placement = new PlacementDispatcher({
 *   tags: runtime.tags,
 *   effects: [embed],
 *   remotes: [{ name: 'gpu-1', url: 'http://127.0.0.1:7400', tags: ['gpu'] }],
 * });
 * // in a flow:
 * const vector = await ctx.step('embed', placement.effect(embed, { text: 'hi' }, { tags: ['gpu'] }), {
 *   retry: { attempts: 5 },
 * });
 */
export class PlacementDispatcher {
  /** This node's tags. */
  readonly tags: readonly string[];
  private readonly local = new Map<string, EffectDefinition<never, unknown>>();
  private readonly remotes = new Map<string, RemoteWorker>();

  /** Throws `INVALID_ARGUMENT` for bad tags, a remote without a name or http(s) URL, or a duplicate name. */
  constructor(options: PlacementDispatcherOptions = {}) {
    this.tags = checkTags(options.tags ?? [], 'tags');
    for (const effect of options.effects ?? []) this.local.set(effect.name, effect);
    for (const remote of options.remotes ?? []) {
      const where = `remotes[${this.remotes.size}]`;
      if (typeof remote.name !== 'string' || remote.name === '' || this.remotes.has(remote.name)) {
        throw new LoomError(
          WorkflowErrorCode.INVALID_ARGUMENT,
          `${where} needs a name of its own (got ${JSON.stringify(remote.name)})`,
          { path: `${where}.name` },
        );
      }
      let protocol: string;
      try {
        protocol = new URL(remote.url).protocol;
      } catch {
        protocol = '';
      }
      if (protocol !== 'http:' && protocol !== 'https:') {
        throw new LoomError(
          WorkflowErrorCode.INVALID_ARGUMENT,
          `remote '${remote.name}' needs an http:// or https:// url (got ${JSON.stringify(remote.url)})`,
          { path: `${where}.url`, remote: remote.name },
        );
      }
      if (
        remote.timeoutMs !== undefined &&
        (!Number.isSafeInteger(remote.timeoutMs) || remote.timeoutMs < 1)
      ) {
        throw new LoomError(
          WorkflowErrorCode.INVALID_ARGUMENT,
          `remote '${remote.name}' timeoutMs must be a positive integer`,
          { path: `${where}.timeoutMs`, remote: remote.name },
        );
      }
      const tags = checkTags(remote.tags ?? [], `${where}.tags`);
      this.remotes.set(remote.name, Object.freeze({ ...remote, tags }));
    }
  }

  /**
   * Where `effect` would run under `placement` (no placement: here if registered, else
   * `PLACEMENT_UNSATISFIED`). Error codes: `PLACEMENT_UNSATISFIED`, `REMOTE_UNKNOWN`,
   * `INVALID_ARGUMENT` (bad tags).
   */
  place(effect: EffectDefinition<never, unknown>, placement?: Placement): PlacementDecision {
    if (placement?.remote !== undefined) {
      const remote = this.remotes.get(placement.remote);
      if (remote === undefined) {
        throw new LoomError(
          WorkflowErrorCode.REMOTE_UNKNOWN,
          `effect '${effect.name}' is placed on remote '${placement.remote}', which this dispatcher ` +
            `does not know (it knows ${[...this.remotes.keys()].join(', ') || 'none'})`,
          { remote: placement.remote, effect: effect.name },
        );
      }
      return { where: 'remote', remotes: [remote] };
    }
    const need = checkTags(placement?.tags ?? [], 'placement.tags');
    if (this.local.has(effect.name) && tagsSatisfy(this.tags, need)) return { where: 'local' };
    const fits = [...this.remotes.values()].filter((remote) =>
      tagsSatisfy(remote.tags ?? [], need),
    );
    if (fits.length === 0) {
      throw new LoomError(
        WorkflowErrorCode.PLACEMENT_UNSATISFIED,
        `effect '${effect.name}' needs tags [${need.join(', ')}]: this node ` +
          `${this.local.has(effect.name) ? `has [${this.tags.join(', ')}]` : 'has no handler for it'} ` +
          'and no remote carries them all: add a remote worker with those tags, or tag this node',
        { effect: effect.name, tags: [...need] },
      );
    }
    return { where: 'remote', remotes: fits };
  }

  /**
   * The body of a step that runs `effect` with `input` where `placement` says: pass it to
   * `ctx.step`. Placement is decided here; when nothing fits, the attempt fails with
   * `PLACEMENT_UNSATISFIED` or `REMOTE_UNKNOWN` without calling anything (a replayed step never
   * calls its body, so a completed step does not depend on today's remotes).
   */
  effect<I, O>(
    effect: EffectDefinition<I, O>,
    input: I,
    placement?: Placement,
  ): (context: StepEffectContext) => Promise<O> {
    let decision: PlacementDecision;
    try {
      decision = this.place(effect as EffectDefinition<never, unknown>, placement);
    } catch (error) {
      // Thrown by the attempt, not here: a replay of a step that already completed must not
      // depend on today's remotes, and a retry after a redeploy asks the new dispatcher.
      return async () => {
        throw error;
      };
    }
    if (decision.where === 'local') {
      return async (context) =>
        effect.handler(input, {
          idempotencyKey: context.idempotencyKey,
          attempt: context.attempt,
          // A getter: the execution's AbortSignal is made only for a handler that reads it.
          get signal() {
            return context.signal;
          },
        });
    }
    const { remotes } = decision;
    return async (context) => {
      const remote = remotes[(context.attempt - 1) % remotes.length] as RemoteWorker;
      return (await callRemote(remote, {
        effect: effect.name,
        input,
        idempotencyKey: context.idempotencyKey,
        attempt: context.attempt,
        signal: context.signal,
        clock: context.clock,
      })) as O;
    };
  }
}
