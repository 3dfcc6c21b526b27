import type { CancelTimer } from '../clock.js';
import type { Lease } from '../lease-store.js';
import { Limits } from '../limits.js';
import type { KernelContext, RecoveryPort } from './kernel-context.js';

/** Due executions claimed per `wakeDue` round unless the caller says otherwise. */
export const wakeDueLimitDefault = 100;

/** Running executions read per page of a recovery round. */
const recoverPageSize = 500;

/**
 * How long a node this one has seen alive must keep reading as dead before its executions are
 * taken over: a live node whose claim session ended claims its id again within this (ADR 0044).
 * A node never seen alive here (the crashed incarnation a restart finds) is taken at once.
 */
export const deadNodeConfirmMs = 2_000;

/** Node ids remembered as seen alive (the oldest are forgotten first). */
const seenLiveMax = 1_024;

/**
 * Finds executions in the log that no node is driving — suspended ones that came due, running
 * ones whose owner went away — and resumes them on this node. Their leases are taken in one
 * batch per round (one `acquireMany` per `leaseBatchMax`), not one call per execution.
 *
 * A running execution nobody drives here is taken over at once when its owner is known dead:
 * its lease belongs to a node whose claim (`LeaseStore.claimNode`) no live process holds, or to
 * this node's own id from an earlier incarnation (this process holds the claim now, so the
 * holder of those leases is gone), or it has no lease and no other node is alive. Otherwise it
 * waits as before: until its lease expires, or, unleased, until its log was quiet for
 * `recoverQuietMs`.
 */
export class ExecutionRecovery implements RecoveryPort {
  private round: Promise<string[]> | undefined;
  /** Owners of leases this node found alive, oldest first. */
  private readonly seenLive = new Set<string>();
  /** Of those, the ones that read as dead since (clock ms): not yet confirmed dead. */
  private readonly deadSinceMs = new Map<string, number>();
  /** When this node last counted another live node (clock ms). */
  private crowdedAtMs: number | undefined;
  /** When this node last claimed its id again after losing it (clock ms). */
  private regainedAtMs: number | undefined;
  private confirmTimer: CancelTimer | undefined;
  /** The `wakeDue` calls in flight here: what they claimed is theirs to resume until they end. */
  private readonly waking = new Set<Promise<unknown>>();

  constructor(private readonly kernel: KernelContext) {}

  /**
   * Claims up to `limit` due suspended executions and resumes them; returns the ids resumed. The
   * claim records this node as their claimer, so one whose answer never arrives (the connection
   * or the primary was lost after the commit) is this node's to recover at once (ADR 0063).
   */
  wakeDue(limit: number = wakeDueLimitDefault): Promise<string[]> {
    const waking = this.claimAndResume(limit);
    this.waking.add(waking);
    void waking.finally(() => this.waking.delete(waking)).catch(() => undefined);
    return waking;
  }

  private async claimAndResume(limit: number): Promise<string[]> {
    const { store, clock } = this.kernel;
    // Others read this node as dead while its claim is lost: it takes no new work (ADR 0044).
    if (this.kernel.presence?.lost === true) return [];
    // Only what this node can run: an execution of a flow it lacks (a rolling upgrade, a
    // placement) stays due for a node that has it, instead of being claimed and stranded here.
    // (Past claimFlowsMax flows a claim takes every due execution, as before the filter.)
    const flows = this.kernel.flows.runnable();
    // Only a node that claims its id names itself: one without (no lease store, `leaseMode:
    // 'off'`) reads as dead to the others, who would then take what it drives at once.
    const claimer = this.kernel.presence === undefined ? {} : { claimedBy: this.kernel.nodeId };
    const claimed = await store.claimDue(
      clock.now(),
      limit,
      flows.length > Limits.claimFlowsMax ? claimer : { flows, ...claimer },
    );
    if (claimed.length === 0) return [];
    const { events, nodeId } = this.kernel;
    for (const executionId of claimed) events.emit('timer:fired', { nodeId, executionId });
    const resumed: string[] = [];
    for (const executionId of await this.resumeLeased(claimed, 'timer')) resumed.push(executionId);
    return resumed;
  }

  /**
   * Leases what a claim could not: claimed executions whose lease another node holds. The claim
   * took them off the due list; one left here is given back to it ({@link unclaim}). Taken:
   * those nobody holds any more, and those whose holder is dead (judged as a recovery round
   * judges it, see {@link judgeOwners}), its lease given up for it: a process killed soon after
   * an execution suspended leaves its lease on it (a release rides the next lease tick), and the
   * execution's wake-up (a signal, a child's end, its timer) comes to a node that restarted.
   * A live holder keeps its lease. Returns the ids now leased here.
   */
  private async leaseFromDead(executionIds: readonly string[]): Promise<Set<string>> {
    const { leaseStore, leases, presence, nodeId } = this.kernel;
    const taken = new Set<string>();
    // A node that cannot see itself as alive cannot judge others dead.
    if (leaseStore === undefined || leases === undefined || presence?.claimed !== true)
      return taken;
    const free: string[] = [];
    const byOwner = new Map<string, string[]>();
    for (const executionId of executionIds) {
      const lease = await leaseStore.get(executionId);
      if (lease === undefined) free.push(executionId);
      else if (lease.owner !== nodeId)
        byOwner.set(lease.owner, [...(byOwner.get(lease.owner) ?? []), executionId]);
    }
    const { dead } = await this.judgeOwners([...byOwner.keys()], this.kernel.clock.now());
    for (const owner of dead) {
      const held = byOwner.get(owner) as string[];
      await this.releaseFor(owner, held);
      free.push(...held);
    }
    if (free.length === 0) return taken;
    for (const executionId of await leases.acquireAll(free)) taken.add(executionId);
    return taken;
  }

  /**
   * Resumes running executions nobody drives; returns the ids this node now drives. A call made
   * while another round runs (the boot round, a periodic one) waits for it, runs its own, and
   * returns what both resumed.
   */
  recover(): Promise<string[]> {
    const previous = this.round;
    const next = (async () => {
      const before = previous === undefined ? [] : await previous.catch(() => []);
      const own = await this.recoverOnce();
      return [...new Set([...before, ...own])];
    })();
    this.round = next;
    void next
      .finally(() => {
        if (this.round === next) this.round = undefined;
      })
      .catch(() => undefined);
    return next;
  }

  /** Resolves once no recovery round is in progress (its outcome is not this call's concern). */
  async settle(): Promise<void> {
    while (this.round !== undefined) await this.round.catch(() => undefined);
  }

  private async recoverOnce(): Promise<string[]> {
    if (this.kernel.presence?.lost === true) return [];
    const claimed = this.kernel.presence?.ready();
    if (claimed !== undefined) await claimed;
    const nowMs = this.kernel.clock.now();
    const alone = new Alone(this.kernel, (live) => this.aloneWith(live, nowMs));
    const resumed: string[] = [];
    let after = '';
    for (;;) {
      const page = await this.kernel.store.findExecutions({
        status: 'running',
        afterExecutionId: after,
        limit: recoverPageSize,
      });
      if (page.length === 0) break;
      after = page[page.length - 1]?.executionId as string;
      const orphans = await this.orphansOf(page, nowMs, alone);
      orphans.push(...(await this.lostClaims(page)));
      for (const executionId of await this.resumeLeased(orphans, 'recovery')) {
        resumed.push(executionId);
        this.kernel.events.emit('execution:recovered', { nodeId: this.kernel.nodeId, executionId });
      }
    }
    return resumed;
  }

  /** The executions of `page` nobody drives, with dead owners' leases given up for them. */
  private async orphansOf(
    page: ReadonlyArray<{
      executionId: string;
      lastEventAt: number;
      flow: string | null;
      version: string | null;
      startedBy: string | null;
      claimedBy?: string;
    }>,
    nowMs: number,
    alone: Alone,
  ): Promise<string[]> {
    const { executions, leaseStore, presence, nodeId, flows } = this.kernel;
    const { recoverQuietMs } = this.kernel.settings;
    const orphans: string[] = [];
    // Per other node: the executions it leased, and the unleased ones it started lazily.
    const byOwner = new Map<string, { leased: string[]; started: string[] }>();
    const of = (owner: string) => {
      let owned = byOwner.get(owner);
      if (owned === undefined) {
        owned = { leased: [], started: [] };
        byOwner.set(owner, owned);
      }
      return owned;
    };
    const quiet = new Set<string>();
    for (const summary of page) {
      const { executionId } = summary;
      if (executions.has(executionId)) continue;
      // A flow this node cannot run (placement, or a node of a rolling upgrade without it):
      // theirs to recover, not ours. Leasing it here would only hold it away from them.
      if (summary.flow !== null && !flows.runs(summary.flow, summary.version)) continue;
      const lease: Lease | undefined = await leaseStore?.get(executionId);
      if (lease === undefined) {
        if (summary.lastEventAt <= nowMs - recoverQuietMs) quiet.add(executionId);
        // A claimed one suspended after its start: its claimer answers for it, not its starter.
        const starter = summary.claimedBy ?? summary.startedBy;
        if (starter === null || presence?.claimed !== true) {
          if (quiet.has(executionId) || (await alone.isAlone())) orphans.push(executionId);
        } else if (summary.claimedBy === nodeId) {
          // Claimed here and not driven here: a claim whose answer was lost, unless a wakeDue
          // still in flight holds it ({@link lostClaims} decides once those ended).
        } else if (starter === nodeId) {
          // A lazy start of our id, not driven here: an earlier incarnation of this node started
          // it and died before leasing it (this process holds the claim on the id now).
          orphans.push(executionId);
        } else {
          // Unleased because its starter has not leased it yet: that node's, while it lives.
          of(starter).started.push(executionId);
        }
      } else if (lease.expiresAtMs <= nowMs) {
        orphans.push(executionId);
      } else if (lease.owner === nodeId) {
        // Our id, not held in memory: an earlier incarnation of this node took it, and it is
        // dead, since this process holds the claim on the id now.
        if (presence?.claimed === true && this.kernel.leases?.holds(executionId) === false) {
          orphans.push(executionId);
        }
      } else if (presence?.claimed === true) {
        of(lease.owner).leased.push(executionId);
      }
    }
    if (byOwner.size > 0 && leaseStore !== undefined) {
      const { live, dead } = await this.judgeOwners([...byOwner.keys()], nowMs);
      for (const [owner, { leased, started }] of byOwner) {
        if (live.has(owner)) {
          // A live starter leases its lazy starts within lazyGraceMs (a live claimer its claims
          // at once, or takes them back itself, see lostClaims): one unleased and quiet for
          // recoverQuietMs is no longer driven there (as for a start of unknown origin).
          for (const executionId of started) if (quiet.has(executionId)) orphans.push(executionId);
        } else if (dead.has(owner)) {
          await this.releaseFor(owner, leased);
          orphans.push(...leased, ...started);
        }
      }
    }
    return orphans;
  }

  /**
   * The executions of `page` this node claimed (`claimedBy`) that nobody leased and that are not
   * driven here: claims whose answer was lost (ADR 0063). The `wakeDue` calls in flight when the
   * page was judged may still lease and resume what they claimed, so this waits for them to end,
   * then checks each one again: a later claim cannot take a running execution, so what is still
   * unleased and not driven here then is nobody's.
   */
  private async lostClaims(
    page: ReadonlyArray<{
      executionId: string;
      flow: string | null;
      version: string | null;
      claimedBy?: string;
    }>,
  ): Promise<string[]> {
    const { executions, leaseStore, presence, nodeId, flows } = this.kernel;
    if (presence?.claimed !== true) return [];
    const candidates = page
      .filter(
        (summary) =>
          summary.claimedBy === nodeId &&
          !executions.has(summary.executionId) &&
          (summary.flow === null || flows.runs(summary.flow, summary.version)),
      )
      .map((summary) => summary.executionId);
    if (candidates.length === 0) return [];
    if (this.waking.size > 0) await Promise.allSettled([...this.waking]);
    const lost: string[] = [];
    for (const executionId of candidates) {
      if (executions.has(executionId)) continue;
      if ((await leaseStore?.get(executionId)) === undefined) lost.push(executionId);
    }
    return lost;
  }

  /**
   * Sorts other nodes into the live ones (remembered as seen alive) and the ones to take for dead
   * now (no live claim, confirmed as {@link confirmedDead} says); the rest are neither yet. One
   * `liveNodes` per `leaseBatchMax` owners.
   */
  private async judgeOwners(
    owners: readonly string[],
    nowMs: number,
  ): Promise<{ live: Set<string>; dead: Set<string> }> {
    const live = new Set<string>();
    const dead = new Set<string>();
    const { leaseStore } = this.kernel;
    if (leaseStore === undefined) return { live, dead };
    for (let start = 0; start < owners.length; start += Limits.leaseBatchMax) {
      const batch = owners.slice(start, start + Limits.leaseBatchMax);
      const alive = await leaseStore.liveNodes(batch);
      for (const owner of batch) {
        if (alive.has(owner)) {
          this.sawLive(owner);
          live.add(owner);
        } else if (this.confirmedDead(owner, nowMs)) {
          dead.add(owner);
        }
      }
    }
    return { live, dead };
  }

  /** A dead node renews nothing: gives its leases on `executionIds` up for it, so they can be taken now. */
  private async releaseFor(owner: string, executionIds: readonly string[]): Promise<void> {
    const { leaseStore } = this.kernel;
    if (leaseStore === undefined) return;
    for (let from = 0; from < executionIds.length; from += Limits.leaseBatchMax) {
      await leaseStore.releaseMany(owner, executionIds.slice(from, from + Limits.leaseBatchMax));
    }
  }

  private sawLive(owner: string): void {
    this.deadSinceMs.delete(owner);
    this.seenLive.delete(owner);
    this.seenLive.add(owner);
    if (this.seenLive.size > seenLiveMax) {
      const oldest = this.seenLive.values().next().value as string;
      this.seenLive.delete(oldest);
    }
  }

  /**
   * True when `owner`, which reads as dead now, is to be taken for dead: never seen alive here,
   * or reading as dead for `deadNodeConfirmMs`. Otherwise a round is due once that has passed.
   */
  private confirmedDead(owner: string, nowMs: number): boolean {
    if (!this.seenLive.has(owner)) {
      if (!this.justRegained(nowMs)) return true;
      this.confirmLater();
      return false;
    }
    const sinceMs = this.deadSinceMs.get(owner);
    if (sinceMs === undefined) this.deadSinceMs.set(owner, nowMs);
    if (sinceMs === undefined || nowMs - sinceMs < deadNodeConfirmMs) {
      this.confirmLater();
      return false;
    }
    this.deadSinceMs.delete(owner);
    this.seenLive.delete(owner);
    return true;
  }

  /**
   * Whether `live` claims (this node's among them) mean no other node lives: one that was
   * counted within `deadNodeConfirmMs` may only have lost its claim session for a moment.
   */
  private aloneWith(live: number, nowMs: number): boolean {
    if (live > 1) {
      this.crowdedAtMs = nowMs;
      return false;
    }
    const crowdedLately =
      this.crowdedAtMs !== undefined && nowMs - this.crowdedAtMs < deadNodeConfirmMs;
    if (crowdedLately || this.justRegained(nowMs)) {
      this.confirmLater();
      return false;
    }
    return true;
  }

  /**
   * This node holds its claim again after losing it. A loss that ended every session at once
   * (the server restarted, a failover) took its peers' claims too: each peer needs its own
   * reclaim, counted from now, not from before the outage. So a peer seen alive must read as
   * dead for `deadNodeConfirmMs` from here before its executions are taken, and so must one never
   * seen alive (it may have started just before the outage), and this node is not "alone"
   * within that time either (ADR 0055).
   */
  claimRegained(): void {
    this.deadSinceMs.clear();
    this.regainedAtMs = this.kernel.clock.now();
  }

  /** True within `deadNodeConfirmMs` of this node claiming its id again after a loss. */
  private justRegained(nowMs: number): boolean {
    return this.regainedAtMs !== undefined && nowMs - this.regainedAtMs < deadNodeConfirmMs;
  }

  /** Runs a recovery round once `deadNodeConfirmMs` passed (one such round pending at a time). */
  private confirmLater(): void {
    if (this.confirmTimer !== undefined) return;
    this.confirmTimer = this.kernel.clock.setTimer(() => {
      this.confirmTimer = undefined;
      if (this.kernel.shuttingDown) return;
      void this.recover().catch((error) => this.kernel.report(error));
    }, deadNodeConfirmMs);
  }

  /** Cancels a pending confirmation round (shutdown). */
  stop(): void {
    this.confirmTimer?.();
    this.confirmTimer = undefined;
  }

  /**
   * Gives claimed executions this node could not lease back to the due list (ADR 0052): a live
   * node holds their lease (one that suspended them and has not released it yet: releases ride
   * its next lease tick), and the claim took them off the due list, so nobody would wake them
   * until a recovery round found them quiet. Due again, they go to the next poll that can lease
   * them: the holder's own (it holds the lease), or any node's once it is released. A failure is
   * reported; a recovery round is then what finds them, as before.
   */
  private async unclaim(executionIds: readonly string[]): Promise<void> {
    if (executionIds.length === 0) return;
    try {
      await this.kernel.store.unclaimDue(executionIds, this.kernel.clock.now());
    } catch (error) {
      this.kernel.report(error);
    }
  }

  /**
   * Leases `executionIds` in one batch, then resumes the ones granted, one at a time; returns
   * those driven here once their resume returned (judged right then: one that finishes while the
   * next is resumed still counts). A lease for an execution that is not driven here afterwards
   * (it had settled, another driver started) is released. Claimed executions (`timer`) that could
   * not be leased are given back to the due list.
   */
  private async resumeLeased(
    executionIds: readonly string[],
    cause: 'timer' | 'recovery',
  ): Promise<string[]> {
    if (executionIds.length === 0) return [];
    const leased = new Set<string>();
    try {
      const granted = (await this.kernel.leases?.acquireAll(executionIds)) ?? new Set(executionIds);
      for (const executionId of granted) leased.add(executionId);
      const refused = executionIds.filter((executionId) => !leased.has(executionId));
      if (cause === 'timer' && refused.length > 0) {
        for (const executionId of await this.leaseFromDead(refused)) leased.add(executionId);
      }
    } catch (error) {
      this.kernel.report(error);
    }
    if (cause === 'timer') await this.unclaim(executionIds.filter((id) => !leased.has(id)));
    const resumed: string[] = [];
    for (const executionId of executionIds) {
      if (!leased.has(executionId)) continue;
      try {
        await this.kernel.executions.resume(executionId);
        this.kernel.events.emit('execution:resumed', {
          nodeId: this.kernel.nodeId,
          executionId,
          cause,
        });
      } catch (error) {
        this.kernel.report(error);
      }
      if (this.kernel.executions.has(executionId)) resumed.push(executionId);
      else this.kernel.leases?.release(executionId);
    }
    return resumed;
  }
}

/**
 * Whether this node is the only live one on the lease store, asked at most once per round and
 * only when an unleased execution needs the answer: then nobody else can be driving it.
 */
class Alone {
  private answer: Promise<boolean> | undefined;

  /** @param judge whether a count of live claims (this node's included) means alone */
  constructor(
    private readonly kernel: KernelContext,
    private readonly judge: (live: number) => boolean,
  ) {}

  isAlone(): Promise<boolean> {
    const { leaseStore, presence } = this.kernel;
    if (leaseStore === undefined || presence?.claimed !== true) return Promise.resolve(false);
    this.answer ??= leaseStore.countLiveNodes().then(this.judge);
    return this.answer;
  }
}
