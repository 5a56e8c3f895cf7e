import type { AddressInfo } from 'node:net';
import { connect, createServer, type Server, type Socket } from 'node:net';

/**
 * A TCP proxy between the browser and the server: `cut()` drops every open connection at once (a network
 * failure as the page sees it), `retarget()` sends new connections to another port (a restarted server).
 */
export class CuttableProxy {
  private readonly sockets = new Set<Socket>();
  private readonly server: Server;
  private targetPort: number;
  private refusing = false;

  private constructor(targetPort: number) {
    this.targetPort = targetPort;
    this.server = createServer((client) => {
      if (this.refusing) {
        client.destroy();
        return;
      }
      const upstream = connect(this.targetPort, '127.0.0.1');
      for (const socket of [client, upstream]) {
        this.sockets.add(socket);
        socket.once('close', () => this.sockets.delete(socket));
        socket.on('error', () => {
          client.destroy();
          upstream.destroy();
        });
      }
      client.pipe(upstream);
      upstream.pipe(client);
    });
  }

  /** Starts a proxy to `127.0.0.1:<targetPort>`; resolves with it and its base URL. */
  static async start(targetPort: number): Promise<{ proxy: CuttableProxy; url: string }> {
    const proxy = new CuttableProxy(targetPort);
    await new Promise<void>((resolve) => proxy.server.listen(0, '127.0.0.1', resolve));
    const { port } = proxy.server.address() as AddressInfo;
    return { proxy, url: `http://127.0.0.1:${port}` };
  }

  /** Drops every open connection; with `refuse`, new ones too until `restore()`. */
  cut(options: { refuse?: boolean } = {}): void {
    this.refusing = options.refuse ?? false;
    for (const socket of this.sockets) socket.destroy();
    this.sockets.clear();
  }

  /** Accepts connections again. */
  restore(): void {
    this.refusing = false;
  }

  /** Sends new connections to another port. */
  retarget(targetPort: number): void {
    this.targetPort = targetPort;
  }

  /** How many connections are open. */
  get openConnections(): number {
    return this.sockets.size;
  }

  async close(): Promise<void> {
    this.cut();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
