import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Dispatcher, LunationStore } from '@lunation/contract';
import { LunationMetrics } from '@lunation/otel';
import { PrometheusExporter, PrometheusSerializer } from '@opentelemetry/exporter-prometheus';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import { readiness } from './assistant-server.js';

/** The app's metrics: recorded through `@lunation/otel`, read in the Prometheus text format. */
export interface AssistantMetrics {
  /** Records the runtime's and a worker's figures (`instrumentation` of the runtime, `workerLog` of a worker). */
  metrics: LunationMetrics;
  /** The figures now, in the Prometheus text exposition format (a server's `GET /metrics`). */
  scrape(): Promise<string>;
  shutdown(): Promise<void>;
}

export interface OpenMetricsOptions {
  /** `lunation-assistant-serve` or `-worker`: the `service.name` of the figures. */
  serviceName: string;
  /** Queue depth per tenant is read from it at each scrape. */
  dispatcher?: Dispatcher | undefined;
}

/**
 * A meter provider with the official Prometheus exporter as its reader. The exporter starts no server of its own:
 * the app's HTTP server (a worker's probe server) answers `GET /metrics` with {@link AssistantMetrics.scrape}.
 */
export function openMetrics(options: OpenMetricsOptions): AssistantMetrics {
  const exporter = new PrometheusExporter({ preventServerStart: true });
  const meterProvider = new MeterProvider({
    resource: resourceFromAttributes({ 'service.name': options.serviceName }),
    readers: [exporter],
  });
  const serializer = new PrometheusSerializer();
  const metrics = new LunationMetrics({
    meterProvider,
    ...(options.dispatcher ? { dispatcher: options.dispatcher } : {}),
  });
  return {
    metrics,
    scrape: async () => {
      const { resourceMetrics } = await exporter.collect();
      return serializer.serialize(resourceMetrics);
    },
    shutdown: () => meterProvider.shutdown(),
  };
}

export interface ProbeServerOptions {
  port: number;
  host: string;
  scrape(): Promise<string>;
  store: LunationStore;
  dispatcher: Dispatcher;
}

/**
 * A worker's probes, on a port of its own: `GET /metrics` (Prometheus), `/healthz` and `/readyz` (the store and
 * the dispatcher answer), as `serve` answers them. Resolves once it listens, with its base URL.
 */
export async function serveProbes(options: ProbeServerOptions): Promise<{ url: string; server: Server }> {
  const json = (status: number, body: unknown) => ({
    status,
    type: 'application/json',
    body: JSON.stringify(body),
  });
  const server = createServer((request, response) => {
    const path = new URL(request.url ?? '/', 'http://probe').pathname;
    const answer = async () => {
      if (request.method !== 'GET') return json(405, { error: 'GET only' });
      if (path === '/healthz') return json(200, { status: 'ok' });
      if (path === '/readyz') {
        const checks = await readiness(options.store, options.dispatcher, 2_000);
        const ready = Object.values(checks).every((check) => check === 'ok');
        return json(ready ? 200 : 503, { status: ready ? 'ready' : 'unavailable', checks });
      }
      if (path === '/metrics') {
        return {
          status: 200,
          type: 'text/plain; version=0.0.4; charset=utf-8',
          body: await options.scrape(),
        };
      }
      return json(404, { error: 'not found: /metrics, /healthz and /readyz are served here' });
    };
    answer().then(
      ({ status, type, body }) => response.writeHead(status, { 'content-type': type }).end(body),
      (error: unknown) => response.writeHead(500).end(String(error)),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  server.unref();
  const address = server.address() as AddressInfo;
  return { url: `http://${options.host}:${address.port}`, server };
}
