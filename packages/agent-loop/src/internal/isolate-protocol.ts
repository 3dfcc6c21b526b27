// The messages between an isolated tool's parent and its child process (JSON over Node's IPC).

/** Parent → child: run the call (once per child). */
export type ParentMessage = {
  type: 'run';
  input: unknown;
  context: { runId: string; turn: number; callId: string; idempotencyKey: string };
};

/** Child → parent. */
export type ChildMessage =
  | { type: 'ready' }
  | { type: 'load_failed'; message: string }
  | { type: 'result'; output: unknown }
  | { type: 'error'; error: { name: string; message: string; code?: string; stack?: string } };
