import { createServer, type Server, type Socket, connect as tcpConnect } from 'node:net';

/**
 * A TCP proxy in front of PostgreSQL that counts what crosses the wire: round trips (a round trip starts
 * whenever a client sends bytes after the server last answered, or first) and the client's protocol messages
 * by type (`P` Parse, `B` Bind, `D` Describe, `E` Execute, `S` Sync, `Q` simple Query, ...).
 */
export class WireCounter {
  roundTrips = 0;
  readonly messages = new Map<string, number>();
  #awaitingResponse = false;
  readonly #sockets = new Set<Socket>();

  private constructor(
    private readonly server: Server,
    /** The target URL with host and port replaced by the proxy's. */
    readonly url: string,
  ) {}

  static async start(targetUrl: string): Promise<WireCounter> {
    const target = new URL(targetUrl);
    const host = target.hostname || '127.0.0.1';
    const port = Number(target.port || 5432);
    let counter: WireCounter | undefined;
    const server = createServer((client) => counter?.track(client, tcpConnect({ host, port })));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    const address = server.address();
    if (address === null || typeof address === 'string') throw new Error('the proxy has no port');
    const proxied = new URL(targetUrl);
    proxied.hostname = '127.0.0.1';
    proxied.port = String(address.port);
    counter = new WireCounter(server, proxied.toString());
    return counter;
  }

  /** Counts of each message type since the last reset, e.g. `{ B: 1, E: 1, S: 1 }`. */
  counts(): Record<string, number> {
    return Object.fromEntries([...this.messages.entries()].sort());
  }

  reset(): void {
    this.roundTrips = 0;
    this.messages.clear();
  }

  async close(): Promise<void> {
    for (const socket of this.#sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private track(client: Socket, upstream: Socket): void {
    this.#sockets.add(client);
    this.#sockets.add(upstream);
    client.setNoDelay(true);
    upstream.setNoDelay(true);
    let pending = Buffer.alloc(0);
    let started = false;
    client.on('data', (chunk) => {
      if (!this.#awaitingResponse) {
        this.roundTrips++;
        this.#awaitingResponse = true;
      }
      pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
      // The startup message (and an SSL request) has no type byte: a length, then the protocol version.
      for (;;) {
        if (!started) {
          if (pending.length < 4) break;
          const length = pending.readInt32BE(0);
          if (pending.length < length) break;
          pending = pending.subarray(length);
          started = true;
          continue;
        }
        if (pending.length < 5) break;
        const length = pending.readInt32BE(1);
        if (pending.length < length + 1) break;
        const type = String.fromCharCode(pending[0]!);
        this.messages.set(type, (this.messages.get(type) ?? 0) + 1);
        pending = pending.subarray(length + 1);
      }
      upstream.write(chunk);
    });
    upstream.on('data', (chunk) => {
      this.#awaitingResponse = false;
      client.write(chunk);
    });
    const end = () => {
      client.destroy();
      upstream.destroy();
      this.#sockets.delete(client);
      this.#sockets.delete(upstream);
    };
    for (const socket of [client, upstream]) {
      socket.on('close', end);
      socket.on('error', end);
    }
  }
}
