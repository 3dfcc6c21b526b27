// A loopback TCP forwarder in front of one server: a network path a test can cut and restore
// (while `blocked`, every connection is closed on arrival and the open ones are cut), so one
// node reaches the database later than another. Real sockets, no fake of the store.
import { connect, createServer, type Socket } from 'node:net';

export interface TcpForwarder {
  readonly port: number;
  /** Cut the path (closing the open connections) or restore it. */
  setBlocked(blocked: boolean): void;
  close(): Promise<void>;
}

export async function startTcpForwarder(targetPort: number): Promise<TcpForwarder> {
  let blocked = false;
  const open = new Set<Socket>();
  const server = createServer((incoming) => {
    if (blocked) {
      incoming.destroy();
      return;
    }
    const outgoing = connect(targetPort, '127.0.0.1');
    for (const socket of [incoming, outgoing]) {
      open.add(socket);
      socket.on('error', () => undefined);
      socket.on('close', () => {
        open.delete(socket);
        incoming.destroy();
        outgoing.destroy();
      });
    }
    incoming.pipe(outgoing);
    outgoing.pipe(incoming);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    port,
    setBlocked: (value) => {
      blocked = value;
      if (value) for (const socket of open) socket.destroy();
    },
    close: async () => {
      for (const socket of open) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
