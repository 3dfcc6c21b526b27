import type { Clock } from '../clock.js';
import type { StoredEvent } from '../envelope.js';
import {
  type AppendRequest,
  type BatchAppendingEventStore,
  canAppendBatch,
  type EventStore,
} from '../event-store.js';

/** The most journals one group-commit write may hold: a named limit, so a statement stays sane. */
export const groupCommitBatchMax = 1_000;
/** Journals one write holds by default: where P2 measured the batch statement at its best. */
export const groupCommitBatchDefault = 64;

/**
 * What {@link GroupCommit} needs of a journal: its next append (taken only when it has one to
 * send and none in flight), and where the outcome goes.
 */
export interface GroupCommitMember {
  /** The execution whose appends it makes: a write holds at most one append per execution. */
  readonly executionId: string;
  /** The append to send now, marked in flight; undefined when there is nothing to send. */
  takeAppend(): AppendRequest | undefined;
  /** The append committed with these events. */
  appended(stored: StoredEvent[]): void;
  /** The append failed: nothing of it is known to be durable. */
  failed(error: unknown): void;
}

/**
 * Group commit across executions (ADR 0040): every journal of a node that reaches a durability
 * barrier in one turn of the event loop is flushed in that turn's write (one per `maxBatch`
 * executions). Over a store that
 * appends batches (`appendBatch`: SQLite, Postgres, memory, sharded) the turn's appends go in
 * one write, with the fence and the sequence checked per execution, so one fsync (SQLite) or
 * one statement and one commit (Postgres) serves all of them; over any other store, or with
 * group commit off, each journal's append goes on its own, still from one deferred turn. Nothing is
 * acknowledged before its commit: each journal hears its own outcome, as from `append`.
 *
 * Writes are not serialized: a turn's batch goes at once, even while earlier batches are in
 * flight (a journal never has two appends in flight, so an execution's appends stay in order).
 * Two journals of one execution in one turn (two racing starts of the same id) never share a
 * write: the later ones append on their own, and the store lets one win, as without group
 * commit. A member whose outcome handler throws is reported to `onError`; the write's other
 * members still hear theirs.
 */
export class GroupCommit {
  private wanting: GroupCommitMember[] = [];
  private scheduled = false;
  /** The store, when appends of one turn share a write on it. */
  private readonly batchStore: BatchAppendingEventStore | undefined;

  /**
   * `maxBatch`: journals per write, 1 to {@link groupCommitBatchMax}; 0 turns batching off (each
   * journal appends on its own).
   */
  constructor(
    private readonly store: EventStore,
    private readonly clock: Clock,
    private readonly maxBatch: number,
    /** Where an outcome handler's throw goes (the runtime's `report`), never to the process. */
    private readonly onError: (error: unknown) => void,
  ) {
    this.batchStore = maxBatch > 1 && canAppendBatch(store) ? store : undefined;
  }

  /** Sends `member`'s next append with this turn's others, once the turn is over. */
  want(member: GroupCommitMember): void {
    this.wanting.push(member);
    if (this.scheduled) return;
    this.scheduled = true;
    // Let everything the flows do before yielding to I/O (parallel steps, a flow that ends
    // without a step, other executions' barriers) join this turn's write.
    this.clock.defer(() => this.flush());
  }

  private flush(): void {
    this.scheduled = false;
    const members = this.wanting;
    this.wanting = [];
    const requests: AppendRequest[] = [];
    const takers: GroupCommitMember[] = [];
    let executions: Set<string> | undefined;
    for (const member of members) {
      const request = member.takeAppend();
      if (request === undefined) continue;
      if (this.batchStore === undefined) {
        this.sendOne(request, member);
        continue;
      }
      executions ??= new Set();
      if (executions.has(member.executionId)) {
        this.sendOne(request, member);
        continue;
      }
      executions.add(member.executionId);
      requests.push(request);
      takers.push(member);
    }
    for (let from = 0; from < requests.length; from += this.maxBatch) {
      const to = Math.min(requests.length, from + this.maxBatch);
      if (to - from === 1) {
        // Nothing to share: the plain append (the cheaper statement on every backend).
        this.sendOne(requests[from] as AppendRequest, takers[from] as GroupCommitMember);
      } else {
        this.sendBatch(
          this.batchStore as BatchAppendingEventStore,
          requests.slice(from, to),
          takers.slice(from, to),
        );
      }
    }
  }

  private sendOne(request: AppendRequest, member: GroupCommitMember): void {
    attempt(() => this.store.append(request.envelopes, request.guard)).then(
      (stored) => this.tell(member, stored, undefined),
      (error: unknown) => this.tell(member, undefined, error),
    );
  }

  private sendBatch(
    store: BatchAppendingEventStore,
    requests: AppendRequest[],
    members: GroupCommitMember[],
  ): void {
    attempt(() => store.appendBatch(requests)).then(
      (outcomes) => {
        for (let index = 0; index < members.length; index++) {
          const member = members[index] as GroupCommitMember;
          const outcome = outcomes[index];
          if (outcome === undefined) {
            this.tell(
              member,
              undefined,
              new Error('invariant: appendBatch returned fewer outcomes than requests'),
            );
          } else if (outcome.ok) this.tell(member, outcome.stored, undefined);
          else this.tell(member, undefined, outcome.error);
        }
      },
      (error: unknown) => {
        for (const member of members) this.tell(member, undefined, error);
      },
    );
  }

  /** Hands one member its outcome; a throw of its handler is reported, not propagated. */
  private tell(member: GroupCommitMember, stored: StoredEvent[] | undefined, error: unknown): void {
    try {
      if (stored !== undefined) member.appended(stored);
      else member.failed(error);
    } catch (thrown) {
      this.onError(thrown);
    }
  }
}

/** `call()`'s promise, or a rejected one when it throws before returning one (a broken store). */
function attempt<T>(call: () => Promise<T>): Promise<T> {
  try {
    return call();
  } catch (error) {
    return Promise.reject(error);
  }
}
