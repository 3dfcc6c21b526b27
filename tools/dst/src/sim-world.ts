import {
  InMemoryEventStore,
  InMemoryLeaseStore,
  InMemoryQueueStore,
  isLoomError,
} from '@loom/event-runtime';
import { ManualClock } from '@loom/event-runtime/testing';
import type { Faults } from './faults.js';
import { type ClientWorld, SimClient } from './internal/client.js';
import type { NodeWorld } from './internal/node-world.js';
import { Recorder } from './internal/recorder.js';
import type { SeededRandom } from './seeded-random.js';
import { type NodeBoot, SimNode } from './sim-node.js';

/** A broken invariant, with where it broke. */
export interface Violation {
  invariant: string;
  executionId?: string;
  detail: string;
}

/** Where every simulation starts: 2023-11-14T22:13:20Z, the ManualClock's default epoch. */
export const simStartMs = 1_700_000_000_000;

/**
 * Everything one seed runs in: the shared virtual clock (a `ManualClock`: it owns every timer),
 * the shared in-memory stores, the nodes, a client, and what the run saw.
 */
export class SimWorld implements ClientWorld, NodeWorld {
  readonly clock = new ManualClock(simStartMs);
  readonly stores = {
    events: new InMemoryEventStore({ clock: this.clock }),
    leases: new InMemoryLeaseStore({ clock: this.clock }),
    queues: new InMemoryQueueStore({ clock: this.clock }),
  };
  readonly recorder = new Recorder(() => this.clock.now());
  readonly client = new SimClient(this);
  readonly nodes: SimNode[] = [];
  readonly violations: Violation[] = [];
  /** Background failures the runtimes reported, by error code (expected ones included). */
  readonly backgroundErrors = new Map<string, number>();
  healed = false;

  constructor(
    readonly random: SeededRandom,
    readonly faults: Faults,
  ) {}

  addNodes(count: number, boot: NodeBoot): void {
    for (let index = 0; index < count; index++) {
      this.nodes.push(new SimNode(`node-${index}`, this, boot));
    }
  }

  /** A node that runs now, drawn from the seed; undefined when all are paused. */
  runningNode(): SimNode | undefined {
    const running = this.nodes.filter((node) => node.running);
    return running.length === 0 ? undefined : this.random.pick(running);
  }

  sleep(ms: number): Promise<void> {
    return new Promise((resolve) => this.clock.setTimer(resolve, ms));
  }

  violation(invariant: string, detail: string, executionId?: string): void {
    this.violations.push({
      invariant,
      detail,
      ...(executionId === undefined ? {} : { executionId }),
    });
  }

  backgroundError(_nodeId: string, error: unknown): void {
    const code = isLoomError(error) ? error.code : 'UNTYPED';
    this.backgroundErrors.set(code, (this.backgroundErrors.get(code) ?? 0) + 1);
  }

  /** Ends the faults: no more draws, every paused node resumes. */
  heal(): void {
    this.healed = true;
    for (const node of this.nodes) {
      node.link.healed = true;
      node.resume();
    }
  }
}
