import { createServer, type Server, type Socket, connect as tcpConnect } from 'node:net';
import { Redis } from 'ioredis';
import { Unavailable } from './harness.js';

function client(url: string): Redis {
  return new Redis(url, {
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    connectTimeout: 2000,
    retryStrategy: () => null,
    enableOfflineQueue: false,
  });
}

/** Throws `Unavailable` unless a Redis server answers PING at `url`. */
export async function checkRedis(url: string): Promise<void> {
  const redis = client(url);
  redis.on('error', () => {});
  try {
    await redis.connect();
    await redis.ping();
  } catch (error) {
    throw new Unavailable(`no Redis answers at ${url}: ${(error as Error).message}`);
  } finally {
    redis.disconnect();
  }
}

/** Deletes every key starting with `prefix`. */
export async function deleteKeys(url: string, prefix: string): Promise<number> {
  const redis = client(url);
  redis.on('error', () => {});
  let deleted = 0;
  try {
    await redis.connect();
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length > 0) deleted += await redis.unlink(...keys);
    } while (cursor !== '0');
  } catch {
    // Best effort.
  } finally {
    redis.disconnect();
  }
  return deleted;
}

/** Commands the server has executed so far, by command (from `INFO commandstats`), without `info` itself. */
export async function commandCounts(url: string): Promise<Map<string, number>> {
  const redis = client(url);
  redis.on('error', () => {});
  try {
    await redis.connect();
    const text = await redis.info('commandstats');
    const counts = new Map<string, number>();
    for (const line of text.split('\n')) {
      const match = /^cmdstat_([^:]+):calls=(\d+)/.exec(line.trim());
      if (match?.[1] && match[2] && match[1] !== 'info') counts.set(match[1], Number(match[2]));
    }
    return counts;
  } finally {
    redis.disconnect();
  }
}

/** `after - before`, per command, keeping non-zero entries. */
export function commandDelta(
  before: Map<string, number>,
  after: Map<string, number>,
): Record<string, number> {
  const delta: Record<string, number> = {};
  for (const [command, calls] of after) {
    const diff = calls - (before.get(command) ?? 0);
    if (diff > 0) delta[command] = diff;
  }
  return delta;
}

/**
 * A TCP proxy in front of Redis that counts round trips: a round trip starts whenever a client sends bytes after
 * the server last answered (or first). Pipelined or MULTI-batched commands written together count once; so do
 * requests sent on several connections before any answer arrives. Only meaningful for one run at a time.
 */
export class RoundTripProxy {
  roundTrips = 0;
  requestBytes = 0;
  responseBytes = 0;
  private awaitingResponse = false;
  private readonly sockets = new Set<Socket>();

  private constructor(
    private readonly server: Server,
    readonly url: string,
  ) {}

  static async start(targetUrl: string): Promise<RoundTripProxy> {
    const target = new URL(targetUrl);
    const host = target.hostname || '127.0.0.1';
    const port = Number(target.port || 6379);
    let proxy: RoundTripProxy | undefined;
    const server = createServer((downstream) => {
      const upstream = tcpConnect({ host, port });
      downstream.setNoDelay(true);
      upstream.setNoDelay(true);
      proxy?.track(downstream, upstream);
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    const address = server.address();
    if (address === null || typeof address === 'string') throw new Error('proxy has no port');
    const proxied = new URL(targetUrl);
    proxied.hostname = '127.0.0.1';
    proxied.port = String(address.port);
    proxy = new RoundTripProxy(server, proxied.toString());
    return proxy;
  }

  private track(downstream: Socket, upstream: Socket): void {
    this.sockets.add(downstream);
    this.sockets.add(upstream);
    downstream.on('data', (chunk) => {
      if (!this.awaitingResponse) {
        this.roundTrips++;
        this.awaitingResponse = true;
      }
      this.requestBytes += chunk.length;
      upstream.write(chunk);
    });
    upstream.on('data', (chunk) => {
      this.awaitingResponse = false;
      this.responseBytes += chunk.length;
      downstream.write(chunk);
    });
    const end = () => {
      downstream.destroy();
      upstream.destroy();
      this.sockets.delete(downstream);
      this.sockets.delete(upstream);
    };
    downstream.on('close', end);
    upstream.on('close', end);
    downstream.on('error', end);
    upstream.on('error', end);
  }

  reset(): void {
    this.roundTrips = 0;
    this.requestBytes = 0;
    this.responseBytes = 0;
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
