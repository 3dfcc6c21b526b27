// The journal's `whenDurable` (ADR 0066): a callback waits for the write that makes its sequence
// durable, asks for none, never runs synchronously, never runs once the journal broke, and one
// that throws keeps no flush waiting.
import { describe, expect, it } from 'vitest';
import { systemClock } from '../clock.js';
import { ForwardingEventStore } from '../forwarding-event-store.js';
import { InMemoryEventStore } from '../store/memory/in-memory-event-store.js';
import { ExecutionJournal } from './execution-journal.js';
import { GroupCommit } from './group-commit.js';

const started = { flow: 'f', version: null, input: null };

function journalOver(store = new InMemoryEventStore()) {
  const commits = new GroupCommit(store, systemClock, 64, () => undefined);
  return { store, journal: new ExecutionJournal(commits, 'wd-1', 0, 0, systemClock) };
}

describe('ExecutionJournal.whenDurable', () => {
  it('waits for the write that covers it and runs after it, never synchronously', async () => {
    const { store, journal } = journalOver();
    const heard: string[] = [];
    journal.record('execution.started', started);
    journal.whenDurable(0, () => heard.push('durable 0'));
    expect(heard).toEqual([]);
    await journal.flush();
    expect((await store.read('wd-1')).map((event) => event.type)).toEqual(['execution.started']);
    expect(heard).toEqual(['durable 0']);
    // Already durable: heard on a microtask, not inside the call.
    journal.whenDurable(0, () => heard.push('again'));
    expect(heard).toEqual(['durable 0']);
    await Promise.resolve();
    expect(heard).toEqual(['durable 0', 'again']);
  });

  it('a callback that throws keeps no flush waiting, and the others still run', async () => {
    const { journal } = journalOver();
    const heard: string[] = [];
    journal.record('execution.started', started);
    journal.whenDurable(0, () => {
      throw new Error('an observer broke');
    });
    journal.whenDurable(0, () => heard.push('second'));
    await journal.flush();
    expect(heard).toEqual(['second']);
  });

  it('never runs once the journal broke', async () => {
    const broken = new ForwardingEventStore(new InMemoryEventStore());
    broken.append = () => Promise.reject(new Error('disk gone'));
    const { journal } = journalOver(broken as unknown as InMemoryEventStore);
    const heard: string[] = [];
    journal.record('execution.started', started);
    journal.whenDurable(0, () => heard.push('durable'));
    await expect(journal.flush()).rejects.toThrow('disk gone');
    journal.whenDurable(0, () => heard.push('after the break'));
    // A later flush rejects with the same failure, after any callback would have run.
    await expect(journal.flush()).rejects.toThrow('disk gone');
    expect(heard).toEqual([]);
  });
});
