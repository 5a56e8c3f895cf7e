import { type AppProcess, serve, worker } from './assistant-server.js';
import { CuttableProxy } from './cuttable-proxy.js';

/** The flags of a fleet on one machine: a SQLite file in `dataDir` and a BullMQ queue on Redis. */
export const fleetFlags = (dataDir: string) => [
  '--store',
  'sqlite',
  '--data-dir',
  dataDir,
  '--dispatch',
  'redis',
];

/** A fleet (one server, workers) behind a proxy the test can cut or point at a restarted server. */
export class TestFleet {
  readonly processes: AppProcess[] = [];
  proxy!: CuttableProxy;
  url = '';
  server!: AppProcess;

  constructor(private readonly dataDir: string) {}

  async start(): Promise<void> {
    const started = await serve(this.dataDir, fleetFlags(this.dataDir).slice(2));
    this.server = started.app;
    this.processes.push(started.app);
    const { proxy, url } = await CuttableProxy.start(started.port);
    this.proxy = proxy;
    this.url = url;
  }

  /** Starts a worker of the fleet. */
  async worker(): Promise<AppProcess> {
    const app = await worker(this.dataDir, fleetFlags(this.dataDir).slice(2));
    this.processes.push(app);
    return app;
  }

  /** SIGKILLs the server, starts another on the same data folder, and points the proxy at it. */
  async restartServer(): Promise<void> {
    this.server.child.kill('SIGKILL');
    await this.server.exited;
    const started = await serve(this.dataDir, fleetFlags(this.dataDir).slice(2));
    this.server = started.app;
    this.processes.push(started.app);
    this.proxy.retarget(started.port);
  }

  async close(): Promise<void> {
    await this.proxy?.close();
    await Promise.all(this.processes.map((app) => app.stop()));
  }
}
