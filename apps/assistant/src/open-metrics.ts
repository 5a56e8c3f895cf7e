import type { Dispatcher } from '@lunation/contract';
import { LunationMetrics } from '@lunation/otel';
import { PrometheusExporter, PrometheusSerializer } from '@opentelemetry/exporter-prometheus';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { MeterProvider } from '@opentelemetry/sdk-metrics';

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
  /** Serve `/metrics` on this port by itself (a worker, which has no HTTP server of its own). */
  port?: number | undefined;
  host?: string | undefined;
}

/**
 * A meter provider with the official Prometheus exporter as its reader. Without `port` the exporter starts no
 * server: the app's own HTTP server answers `GET /metrics` with {@link AssistantMetrics.scrape}.
 */
export async function openMetrics(options: OpenMetricsOptions): Promise<AssistantMetrics> {
  const started = options.port !== undefined;
  const exporter = await new Promise<PrometheusExporter>((resolve, reject) => {
    const created: PrometheusExporter = new PrometheusExporter(
      started ? { port: options.port, host: options.host ?? '127.0.0.1' } : { preventServerStart: true },
      (error) => (error ? reject(error) : resolve(created)),
    );
    if (!started) resolve(created);
  });
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
