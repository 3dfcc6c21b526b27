import type { JsonValue } from '../envelope.js';
import { ErrorCode, isLoomError, LoomError } from '../errors.js';
import { mintId } from '../internal/mint-id.js';
import { checkExecutionId } from '../internal/prepare-append.js';
import { type ExecutionOutcome, failureFields } from './core/execution-outcome.js';
import {
  type ExecutionState,
  foldEvent,
  initialState,
  isSettled,
  reopen,
} from './core/execution-state.js';
import {
  EventType,
  type ExecutionRetriedPayload,
  type ExecutionStartedPayload,
  type RetryOptions,
} from './core/kernel-events.js';
import { encodeRecorded, recordedValue } from './core/recorded-values.js';
import { ExecutionDriver } from './execution-driver.js';
import { ExecutionJournal } from './execution-journal.js';
import type { Flow } from './flow.js';
import type { ExecutionsPort, KernelContext, StartLinks } from './kernel-context.js';
import { loadState } from './load-state.js';
import { notFound } from './not-found.js';
import { cancelRemotely } from './remote-cancel.js';
import { ResumeRetries } from './resume-retries.js';
import { isTransientStoreError } from './store-retry.js';

/** Attempts of a retry while the execution's log keeps moving (another node retrying it too). */
const retryRacesMax = 5;
/**
 * Looks at the lease of a failed execution that another node holds before a retry gives up. The
 * holder is retrying it too (it needs a lease take, a fence read, a log read and an append before
 * its `execution.retried` is visible, several round trips on a loaded box) or died holding it. A
 * look costs one log read, so this bounds the wait in round trips, never in time.
 */
const retryLeaseLooksMax = 50;

interface Running {
  driver: ExecutionDriver;
  lastSnapshotSequence: number;
  savingSnapshot: boolean;
  /** Resolves once the driver ended and what follows (lease release, retry) was arranged. */
  ended?: Promise<void>;
}

/**
 * The executions this node drives: taking one on (a new start, or a takeover from the log behind
 * its lease and fence), one driver each, checkpoints of their state, and what follows when one
 * settles (lease release, waking a parent, cancelling children), with the background work that
 * starts.
 */
export class LocalExecutions implements ExecutionsPort {
  private readonly running = new Map<string, Running>();
  private readonly resuming = new Map<string, Promise<void>>();
  /** Starts in flight by execution id, until their sequence 0 is durable (or they failed). */
  private readonly starting = new Map<string, Promise<boolean>>();
  private readonly background = new Set<Promise<unknown>>();
  private readonly retries: ResumeRetries;
  private stopping = false;

  constructor(private readonly kernel: KernelContext) {
    this.retries = new ResumeRetries(kernel);
  }

  /** Ids of the executions this node is driving right now. */
  get ids(): string[] {
    return [...this.running.keys()];
  }

  /** True while this node drives `executionId`. */
  has(executionId: string): boolean {
    return this.running.has(executionId);
  }

  /** The driver of `executionId` if this node drives it. */
  driver(executionId: string): ExecutionDriver | undefined {
    return this.running.get(executionId)?.driver;
  }

  /**
   * Starts an execution of `flow` (registering it unless its name and version are), under
   * `requestedId` or a minted id, linked as `links` says; resolves once sequence 0 is durable.
   * `existing` is true (nothing started) when the execution already exists or runs here. A start
   * of an id another start here is still writing waits for that one: `existing` once it
   * succeeded, a start of its own once it failed.
   *
   * Error codes: `RUNTIME_SHUT_DOWN`, `INVALID_FLOW`, `INVALID_ENVELOPE` (id),
   * `PAYLOAD_NOT_JSON` / `LIMIT_EXCEEDED` (input), store errors.
   */
  async launch(
    flow: Flow<never, unknown>,
    input: unknown,
    requestedId: string | undefined,
    links: StartLinks,
  ): Promise<{ executionId: string; existing: boolean }> {
    this.kernel.assertRunning();
    const executionId = requestedId === undefined ? mintId() : checkExecutionId(requestedId);
    // A start of an id this node is still starting waits for that start, so it never answers
    // `existing` before the execution is in the log (a signal sent right after would find no
    // execution). When that start failed, this one tries on its own: a start again after a
    // failure finds the failed start's pending resume (see `start`) or writes sequence 0 itself.
    let pending = this.starting.get(executionId);
    while (pending !== undefined) {
      const startedThere = await pending.then(
        () => true,
        () => false,
      );
      if (startedThere) return { executionId, existing: true };
      pending = this.starting.get(executionId);
    }
    const work = this.launchOnce(flow, input, executionId, links);
    this.starting.set(executionId, work);
    try {
      return { executionId, existing: await work };
    } finally {
      if (this.starting.get(executionId) === work) this.starting.delete(executionId);
    }
  }

  /** `launch` once no other start of `executionId` is in flight here: true when it existed. */
  private async launchOnce(
    flow: Flow<never, unknown>,
    input: unknown,
    executionId: string,
    links: StartLinks,
  ): Promise<boolean> {
    // Claim the node id before the first write: an execution of a node others cannot see as
    // alive could be taken over at once.
    const claimed = this.kernel.presence?.ready();
    if (claimed !== undefined) {
      await claimed;
      // A start that waited for a lost claim to come back may outlive the runtime.
      this.kernel.assertRunning();
    }
    // The flow registered under its name and version runs it, here as on a resume: a flow object
    // handed to start (or to ctx.child) names the code, the runtime's registration supplies it.
    const driven = this.kernel.flows.registerIfAbsent(flow);
    // The started event is encoded once, here, and the append stores that text. The flow runs
    // on the input decoded from it, as a replay will. (Errors name the input: the kernel's own
    // fields around it are plain strings and numbers.)
    const started: ExecutionStartedPayload = {
      flow: flow.name,
      version: flow.version ?? null,
      input: (input ?? null) as JsonValue,
      ...links,
    };
    const handOff =
      this.kernel.settings.handOffStarts &&
      links.parent === undefined &&
      links.continuedFrom === undefined;
    // A lazy start goes unleased for up to lazyGraceMs: the index keeps who started it, so
    // recovery can take it at once when this node dies instead of waiting for a quiet log. (Not
    // while another process holds this node id's claim: its recovery would read ours as its own.)
    if (!handOff && this.startsLazily(links) && this.kernel.presence?.claimed === true) {
      started.node = this.kernel.nodeId;
    }
    const text = encodeRecorded(started, `the input of execution ${executionId}`, { executionId });
    if (handOff) return this.handOff(executionId, started, text);
    started.input = recordedValue(started.input, text, 'input');
    return this.start(driven, executionId, started, text);
  }

  /**
   * What this journal records next is written with the execution suspended and due now, for the
   * first node's timer poll to run (`handOffStarts`), and nothing more follows it from here.
   */
  private dueElsewhere(journal: ExecutionJournal): void {
    journal.setStatus('suspended', this.kernel.clock.now());
    journal.seal();
  }

  /**
   * `handOffStarts`: appends `execution.started` with the execution suspended and due at once,
   * for the first node's timer poll to run; nothing runs here. True when it already existed.
   */
  private async handOff(
    executionId: string,
    started: ExecutionStartedPayload,
    startedText: string,
  ): Promise<boolean> {
    if (this.running.has(executionId)) return true;
    const journal = this.journalFor(executionId, 0, 0);
    journal.record(EventType.executionStarted, started as unknown as JsonValue, startedText);
    this.dueElsewhere(journal);
    try {
      await journal.flush();
    } catch (error) {
      if (
        isLoomError(error, ErrorCode.EXECUTION_ALREADY_STARTED) ||
        isLoomError(error, ErrorCode.FENCE_STALE)
      ) {
        return true;
      }
      throw error;
    }
    return false;
  }

  /**
   * Cancels an execution. Here: it ends at its next barrier. Elsewhere: this node takes the fence
   * and appends `execution.cancelled`. Returns false if it had already settled.
   *
   * Error codes: `EXECUTION_NOT_FOUND`, `STORE_BUSY`, store errors.
   */
  async cancel(executionId: string, reason: string): Promise<boolean> {
    const local = this.driver(executionId);
    if (local !== undefined) {
      local.cancel(reason);
      const outcome = await local.done;
      // Stopped, or suspending when the cancel came: the log is idle now, cancel it there.
      if (outcome.status !== 'stopped' && outcome.status !== 'suspended') {
        return outcome.status === 'cancelled';
      }
    }
    return cancelRemotely(this.kernel, executionId, reason);
  }

  /** A journal for `executionId` from `nextSequence` under fence `epoch`, on the node's group commit. */
  private journalFor(executionId: string, nextSequence: number, epoch: number): ExecutionJournal {
    const { kernel } = this;
    return new ExecutionJournal(kernel.commits, executionId, nextSequence, epoch, kernel.clock, {
      settings: kernel.settings.storeRetry,
      retrying: (attempt, error) =>
        kernel.events.emit('append:retried', {
          nodeId: kernel.nodeId,
          executionId,
          attempt,
          error,
        }),
    });
  }

  /** Stops driving executions whose lease this node lost (`OWNERSHIP_LOST`). */
  leasesLost(executionIds: readonly string[]): void {
    for (const executionId of executionIds) {
      this.driver(executionId)?.stop(
        new LoomError(
          ErrorCode.OWNERSHIP_LOST,
          `node ${this.kernel.nodeId} lost the lease on execution ${executionId}; it stops driving it`,
          { executionId },
        ),
      );
    }
  }

  /**
   * Appends `execution.started` and drives the new execution; resolves once sequence 0 is
   * durable. True (nothing started) when the execution already exists or runs here.
   */
  private async start(
    flow: Flow<never, unknown>,
    executionId: string,
    started: ExecutionStartedPayload,
    startedText: string,
  ): Promise<boolean> {
    const { leases } = this.kernel;
    if (this.running.has(executionId)) return true;
    // (Checked here first: most starts have nothing pending, and need not wait a turn for it.)
    if (
      (this.retries.take(executionId) || this.resuming.has(executionId)) &&
      (await this.resumePending(executionId))
    )
      return true;
    const eager = !this.startsLazily(started);
    if (
      eager &&
      leases !== undefined &&
      !(await leases.acquire(executionId)) &&
      !(await this.takeDeadStartLease(executionId))
    ) {
      return true;
    }
    const journal = this.journalFor(executionId, 0, 0);
    journal.record(EventType.executionStarted, started as unknown as JsonValue, startedText);
    journal.setStatus('running');
    const durable = journal.flush();
    const running = this.drive(flow, initialState(executionId, started), journal, -1);
    try {
      await durable;
    } catch (error) {
      if (
        isLoomError(error, ErrorCode.EXECUTION_ALREADY_STARTED) ||
        isLoomError(error, ErrorCode.FENCE_STALE)
      ) {
        // Stop the speculative driver now: left alone it would run the flow to its first barrier,
        // and an in-memory sleep before it would hold this start() for the sleep's length.
        running.driver.stop(error as LoomError);
        await running.driver.done;
        return true;
      }
      // Let the driver end (and its resume from the log be arranged) before the caller hears of
      // it, so a start again finds the pending resume instead of racing it.
      if (isTransientStoreError(error)) {
        running.driver.stop(error as LoomError);
        await running.ended;
      }
      throw error;
    }
    if (!eager && this.running.has(executionId)) leases?.acquireLater(executionId);
    return false;
  }

  /**
   * Whether a start leases only after `lazyGraceMs` (`leaseMode: 'lazy'`), not before its first
   * write: never a continue-as-new successor, whose predecessor's driver hands it over.
   */
  private startsLazily(links: { continuedFrom?: string }): boolean {
    return (
      this.kernel.settings.leaseMode === 'lazy' &&
      this.kernel.leases !== undefined &&
      links.continuedFrom === undefined
    );
  }

  /**
   * An eager start whose lease another node holds: when that node is dead (no live process holds
   * its claim), it died between its lease and its `execution.started` — recovery, which reads
   * the executions in the log, will never start it — or after it (then recovery takes it over
   * too, and this start's append finds it started). Its lease is given up for it and taken here.
   * True when this node holds the lease now. A live holder is starting it: false.
   */
  private async takeDeadStartLease(executionId: string): Promise<boolean> {
    const { leaseStore, leases, presence } = this.kernel;
    if (leaseStore === undefined || leases === undefined || presence?.claimed !== true)
      return false;
    const lease = await leaseStore.get(executionId);
    if (lease === undefined) return leases.acquire(executionId);
    if (lease.owner === this.kernel.nodeId) return false;
    if ((await leaseStore.liveNodes([lease.owner])).has(lease.owner)) return false;
    await leaseStore.releaseMany(lease.owner, [executionId]);
    return leases.acquire(executionId);
  }

  /**
   * A start again of an execution whose driver stopped here on a store failure (the caller saw
   * `STORE_UNAVAILABLE` from `start()`, whose append may have committed anyway), or that is being
   * resumed here (the caller took its pending retry, or saw it resuming): resume it from the log
   * now rather than race a second driver against the pending resume. True when it exists
   * (driven here now, or settled); false when its first append never committed.
   */
  private async resumePending(executionId: string): Promise<boolean> {
    try {
      await this.resume(executionId);
      return true;
    } catch (error) {
      if (isLoomError(error, ErrorCode.EXECUTION_NOT_FOUND)) return false;
      if (isTransientStoreError(error)) this.retries.schedule(executionId);
      throw error;
    }
  }

  /**
   * Takes an execution over from its log and drives it here, unless it settled or runs here:
   * takes the lease first (eagerly), then advances the fence, then replays.
   *
   * Error codes: `EXECUTION_NOT_FOUND`, `FLOW_NOT_REGISTERED`, store errors.
   */
  resume(executionId: string): Promise<void> {
    // One resume per execution at a time on this node: two racing resumes would both move the
    // fence, and the one that backs out would leave the other fenced out with nobody driving.
    const pending = this.resuming.get(executionId);
    if (pending !== undefined) return pending;
    const work = this.resumeOnce(executionId).finally(() => this.resuming.delete(executionId));
    this.resuming.set(executionId, work);
    return work;
  }

  private async resumeOnce(executionId: string): Promise<void> {
    const { store, leases } = this.kernel;
    const local = this.running.get(executionId);
    if (local !== undefined) {
      if (!local.driver.suspending) {
        // Driven here under the current fence: it drives. A driver whose fence another writer
        // moved (an operator's resume, a takeover) can append nothing more, and may sit in a
        // call that never returns: stop it and drive the execution again from its log here,
        // rather than answer that it runs while nobody can make it progress.
        if (!(await this.fencedOut(local.driver))) return;
        local.driver.stop(
          new LoomError(
            ErrorCode.OWNERSHIP_LOST,
            `the fence of execution ${executionId} moved past this node's driver (epoch ` +
              `${local.driver.journal.epoch}): it stops, and the execution is driven again from its log`,
            { executionId },
          ),
        );
      }
      // Suspending while a signal (or a child's end) claimed it, or stopped just now: let the
      // suspension become durable and this driver go (its lease released), then wake it here.
      await local.ended;
    }
    const loaded = await loadState(store, this.kernel.snapshots, executionId);
    const state = loaded.state;
    if (state === undefined) throw notFound(executionId);
    if (isSettled(state)) return;
    const flow = this.kernel.flows.flowFor(state);
    const claimed = this.kernel.presence?.ready();
    if (claimed !== undefined) await claimed;
    if (leases !== undefined && !(await leases.acquire(executionId))) return;
    const epoch = await store.fences.advance(executionId);
    // Read what a previous owner appended before the fence moved: after it, nobody else can.
    for (const event of await store.read(executionId, { fromSequence: state.nextSequence }))
      foldEvent(state, event);
    // Another driver started here meanwhile (not the suspended one we waited for): it drives.
    const current = this.running.get(executionId);
    if (isSettled(state) || (current !== undefined && current !== local) || this.stopping) {
      leases?.release(executionId);
      return;
    }
    const journal = this.journalFor(executionId, state.nextSequence, epoch);
    // A suspended execution woken by hand (not claimed) is running again from its next append.
    journal.setStatus('running');
    this.drive(flow, state, journal, loaded.snapshotSequence ?? -1);
  }

  /** True when the execution's fence moved past `driver`'s epoch: it can never append again. */
  private async fencedOut(driver: ExecutionDriver): Promise<boolean> {
    const current = await this.kernel.store.fences.current(driver.executionId);
    return current > driver.journal.epoch;
  }

  /**
   * Reopens a failed execution and drives it here: takes the lease (eagerly), appends
   * `execution.retried` after its `execution.failed` under the current fence epoch (so it loses
   * to any writer that moved the log or the fence meanwhile), then replays. The step whose
   * failure failed it runs again with a fresh attempt budget; completed steps replay. Resolves
   * once `execution.retried` is durable; it records `options.by` and `options.reason` when given.
   *
   * Error codes: `EXECUTION_NOT_FOUND`, `EXECUTION_NOT_FAILED` (`fields.status`),
   * `FLOW_NOT_REGISTERED`, `RUNTIME_SHUT_DOWN`, `STORE_BUSY` (the log kept moving, or another node
   * held the lease through `retryLeaseLooksMax` looks), store errors.
   */
  retry(executionId: string, options: RetryOptions = {}): Promise<void> {
    this.kernel.assertRunning();
    const pending = this.resuming.get(executionId);
    const work = (pending ?? Promise.resolve())
      .catch(() => undefined)
      .then(() => this.retryOnce(executionId, options))
      .finally(() => {
        if (this.resuming.get(executionId) === work) this.resuming.delete(executionId);
      });
    this.resuming.set(executionId, work);
    return work;
  }

  private async retryOnce(executionId: string, options: RetryOptions): Promise<void> {
    const { store, leases } = this.kernel;
    let leaseLooks = 0;
    for (let race = 0; race < retryRacesMax; ) {
      const loaded = await loadState(store, this.kernel.snapshots, executionId);
      const state = loaded.state;
      if (state === undefined) throw notFound(executionId);
      if (state.status !== 'failed' || this.running.has(executionId)) throw notFailed(state);
      // handOffStarts: the retry is written due, for a node that runs its flow (none need be
      // registered here), and nothing runs here: no lease either.
      const handOff = this.kernel.settings.handOffStarts;
      const flow = handOff ? undefined : this.kernel.flows.flowFor(state);
      if (!handOff && leases !== undefined && !(await leases.acquire(executionId))) {
        leaseLooks += 1;
        if (leaseLooks >= retryLeaseLooksMax) throw leaseHeldElsewhere(executionId, leaseLooks);
        continue;
      }
      race += 1;
      // The current epoch, not a new one: a settled execution has no writer to fence out, and two
      // retries racing then clash on the sequence, where one wins, instead of fencing each other
      // out in turn.
      const epoch = await store.fences.current(executionId);
      for (const event of await store.read(executionId, { fromSequence: state.nextSequence }))
        foldEvent(state, event);
      if (state.status !== 'failed') {
        if (!handOff) leases?.release(executionId);
        throw notFailed(state);
      }
      const stepIndex = failureFields(
        executionId,
        state.error ?? { name: '', message: '' },
      ).stepIndex;
      const retried: ExecutionRetriedPayload = {
        stepIndex:
          stepIndex !== null && state.steps[stepIndex]?.status === 'failed' ? stepIndex : null,
        failedSequence: state.nextSequence - 1,
        ...(options.by === undefined ? {} : { by: options.by }),
        ...(options.reason === undefined ? {} : { reason: options.reason }),
      };
      const journal = this.journalFor(executionId, state.nextSequence, epoch);
      journal.record(EventType.executionRetried, retried as unknown as JsonValue);
      if (handOff) this.dueElsewhere(journal);
      else journal.setStatus('running');
      try {
        await journal.flush();
      } catch (error) {
        if (!handOff) leases?.release(executionId);
        if (
          isLoomError(error, ErrorCode.SEQUENCE_CONFLICT) ||
          isLoomError(error, ErrorCode.FENCE_STALE)
        )
          continue;
        throw error;
      }
      if (flow === undefined) return;
      reopen(state, retried);
      state.nextSequence = journal.sequence;
      if (this.stopping) {
        leases?.release(executionId);
        return;
      }
      this.drive(flow, state, journal, loaded.snapshotSequence ?? -1);
      return;
    }
    throw new LoomError(
      ErrorCode.STORE_BUSY,
      `could not retry ${executionId}: its log kept moving (another node is retrying or resuming it)`,
      { executionId },
    );
  }

  /** Drives `flow` from `state` with `journal` until it settles, suspends or is stopped. */
  private drive(
    flow: Flow<never, unknown>,
    state: ExecutionState,
    journal: ExecutionJournal,
    snapshotSequence: number,
  ): Running {
    const driver = new ExecutionDriver(state, journal, this.kernel);
    const running: Running = {
      driver,
      lastSnapshotSequence: snapshotSequence,
      savingSnapshot: false,
    };
    this.running.set(state.executionId, running);
    journal.onAppended = () => this.maybeSnapshot(running);
    running.ended = driver.run(flow).then((outcome) => this.settled(running, outcome));
    return running;
  }

  /**
   * Stops every driver with `reason`, makes what each recorded durable, and waits for them and
   * for the background work in flight.
   */
  async stopAll(reason: (executionId: string) => LoomError): Promise<void> {
    this.stopping = true;
    this.retries.stop();
    const stopping = [...this.running.values()].map(async ({ driver }) => {
      driver.stop(reason(driver.executionId));
      await driver.journal.flush().catch(() => undefined);
      await driver.done;
    });
    await Promise.all(stopping);
    await Promise.all([...this.background]);
  }

  /** Waits until no background work (snapshots, lease releases, links) is left. */
  async idle(): Promise<void> {
    while (this.background.size > 0) await Promise.all([...this.background]);
  }

  private settled(running: Running, outcome: ExecutionOutcome): void {
    const { leases, links } = this.kernel;
    const { executionId, state } = running.driver;
    if (this.running.get(executionId) === running) this.running.delete(executionId);
    if (outcome.status !== 'stopped') this.maybeSnapshot(running);
    leases?.release(executionId);
    const ended =
      outcome.status === 'completed' ||
      outcome.status === 'failed' ||
      outcome.status === 'cancelled';
    if (ended && state.parent !== undefined) this.track(links.claimWokenParent());
    if (outcome.status === 'cancelled') this.track(links.cancelChildren(state, outcome.reason));
    if (outcome.status === 'suspended') {
      this.track(
        links.wakeIfSignalled(state).catch((error: unknown) => {
          // The look failed, so a signal that came meanwhile may be unseen: resume from the log
          // later (the replay looks at the inbox again) rather than leave it suspended for good.
          if (isTransientStoreError(error)) this.retries.schedule(executionId);
          else this.kernel.report(error);
        }),
      );
    }
    // The store failed under the driver but may come back: resume from the log after a backoff,
    // rather than leave the execution to a recover() that may never be called.
    if (outcome.status === 'stopped' && isTransientStoreError(outcome.error)) {
      this.retries.schedule(executionId);
    }
  }

  private maybeSnapshot(running: Running): void {
    const every = this.kernel.settings.snapshotEvery;
    const snapshots = this.kernel.snapshots;
    if (every === undefined || snapshots === undefined || running.savingSnapshot) return;
    const { driver } = running;
    if (!driver.journal.idle) return;
    const sequence = driver.journal.sequence - 1;
    // Every N events while running, and at settle when the tail since the last one reached N.
    if (sequence - running.lastSnapshotSequence < every) return;
    const state = structuredClone(driver.state);
    state.nextSequence = sequence + 1;
    running.savingSnapshot = true;
    running.lastSnapshotSequence = sequence;
    this.track(
      snapshots
        .save({
          executionId: driver.executionId,
          sequence,
          state: state as unknown as JsonValue,
          at: this.kernel.clock.now(),
        })
        .catch((error) => this.kernel.report(error))
        .finally(() => {
          running.savingSnapshot = false;
        }),
    );
  }

  private track(work: Promise<unknown>): void {
    this.background.add(work);
    void work.finally(() => this.background.delete(work));
  }
}

function notFailed(state: ExecutionState): LoomError {
  const status = state.status;
  return new LoomError(
    ErrorCode.EXECUTION_NOT_FAILED,
    `execution ${state.executionId} is ${status === 'running' ? 'running' : status}, not failed: ` +
      'only a failed execution can be retried (a running one is resumed, a settled one is final)',
    { executionId: state.executionId, status },
  );
}

function leaseHeldElsewhere(executionId: string, looks: number): LoomError {
  return new LoomError(
    ErrorCode.STORE_BUSY,
    `could not retry ${executionId}: another node held its lease through ${looks} looks (it is ` +
      'retrying the execution, or died holding the lease); retry once the lease TTL has passed',
    { executionId, operation: 'retry', limit: 'retryLeaseLooksMax' },
  );
}
